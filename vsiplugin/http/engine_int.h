/* engine_int.h: what engine.c (submission, lifecycle), engine_io.c (the
 * I/O thread, with engine_easy.c, engine_sock.c and engine_origin.c),
 * engine_xfer.c and engine_state.c (the shared lock and counters) share.
 * Not for other modules: they use engine.h.
 *
 * Locking: one mutex, vt__eng_lock, guards the submission queue, the flags
 * marked "lock" below and every batch's pending count. Fields marked "io"
 * are touched by the I/O thread only. Fields marked "const" are written by
 * the submitter before the request is queued and only read afterwards. */
#ifndef VT_ENGINE_INT_H
#define VT_ENGINE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <curl/curl.h>

#include "http/engine.h"

/* Per-request options, read from GDAL config at submission time (so config
 * changed at run time applies to the next request), for the request's
 * opts_path (engine.h): path-specific values first where the running GDAL
 * reads them so. Strings are malloc'd by the submitter and freed by it
 * after the batch completes. */
struct vt_eng_opts {
    int max_retries;
    double retry_delay;         /* s, base of the exponential backoff */
    long timeout_ms;            /* GDAL_HTTP_TIMEOUT: the whole request,
                                   every attempt and wait included (0: none) */
    double retry_window;        /* s: no retry starts later than this after
                                   the first attempt (VSITUNE_RETRY_WINDOW) */
    long connect_timeout_ms;
    long low_speed_time;        /* s */
    long low_speed_limit;       /* bytes/s */
    long http_version;          /* CURL_HTTP_VERSION_* */
    int unsafe_ssl;
    int verbose;                /* CPL_CURL_VERBOSE: curl's trace on stderr */
    char *cainfo;               /* NULL: curl's default */
    const char *cainfo_default; /* a well-known bundle when libcurl has none built in (static) */
    char *useragent;            /* the configuration's: GDAL reads it so */
    char *proxy;                /* NULL: curl's default (environment) */
    char *https_proxy;          /* GDAL_HTTPS_PROXY: replaces proxy for an
                                   https URL, as GDAL's CPLHTTPSetOptions */
    char *proxy_userpwd;        /* GDAL_HTTP_PROXYUSERPWD */
    long proxy_auth;            /* GDAL_PROXY_AUTH as CURLAUTH_*; 0: unset */
};

/* A group of requests one thread waits for; lives on the waiter's stack. */
struct vt_eng_batch {
    pthread_cond_t cv;          /* signalled (lock held) when pending hits 0 */
    size_t pending;             /* lock */
};

struct vt_eng_xfer {
    const vt_http_req *req;     /* const: the caller's request */
    vt_http_resp *resp;         /* const pointer; filled by io at the end */
    vt_err *err;                /* const pointer; set by io at the end */
    struct vt_eng_batch *batch; /* const */
    struct vt_eng_opts opts;    /* const: the batch's options with this
                                   request's overrides; its strings belong
                                   to the submitter's copy */
    int has_req_range;          /* const: a "Range: bytes=a-b" header */
    uint64_t req_first, req_last;
    struct vt_eng_xfer *next;   /* lock while queued, io afterwards */

    /* io: one attempt's state */
    CURL *easy;
    long bufsize;               /* io: receive buffer of easy */
    struct curl_slist *hdrs;
    struct vt_eng_xfer *prev;   /* active list links (next is shared) */
    unsigned char *buf;
    size_t len, cap;
    int overflow;
    long hdr_status;            /* from the status line seen last */
    long long content_length;   /* -1: none */
    char *etag, *region, *retry_after, *content_range, *last_modified;
    char *location, *date;      /* a redirect's target, the server's Date */
    int attempts;
    double due;                 /* monotonic s: when to (re)send */
    double first_sent;          /* io: monotonic s of the first attempt */
    double deadline;            /* io: monotonic s the request must end by
                                   (0: none), from opts.timeout_ms */
    double body_done_at;        /* io: when the whole expected body had
                                   arrived while the stream stayed open */
    int ended_early;            /* io: we ended a complete h2 stream that
                                   never sent END_STREAM */
    int end_retires;            /* io: ... and its connection must go (its
                                   body did not fit its receive buffer, so
                                   input may be parked behind it) */
    int range_assumed;          /* io: a 206 without Content-Range whose
                                   body is exactly the range asked: that
                                   range is its range (engine_xfer.c) */
    double tokens_spent;        /* io: retry budget this request took */
    struct vt_engine *eng;      /* io: the engine running this attempt */
    int socks_opened;           /* io: connections curl opened for it */
    int single;                 /* io: one attempt of one request (its
                                   server or object is failing) */
    int requests;               /* io: requests curl sent for this attempt
                                   (curl resends on a refused h2 stream or
                                   a dead reused connection) */
    int resend_refused;         /* io: we stopped curl's resend (single) */
    vt_err last_err;            /* io: verdict of the attempt last judged */
    int last_version;           /* io: its HTTP version (1 or 2) */
    char errbuf[CURL_ERROR_SIZE];
    double sent_at;             /* io: monotonic s this attempt was sent */
    double first_sent_at;       /* io: ... the first attempt was sent */
    double done_at;             /* io: ... the request completed (for logs) */
    int local_port;             /* io: local port of the connection this
                                   attempt was sent on (0: not known) */
    char retry_why[160];        /* io, read by the waiter after completion:
                                   why the last retry happened (for logs) */
    struct {                    /* io, read by the waiter after completion:
                                   the last attempt's libcurl phase times
                                   (CURLINFO_*_TIME_T, us), for logs; the
                                   line is written only under CPL_DEBUG */
        curl_off_t conn, tls, first, total;
        long nconn;             /* connections it opened */
        int set;
    } ph;
};

struct vt_engine {
    pthread_t thread;
    long max_conns;             /* const (read before the thread starts) */
    long max_streams;           /* const; also the cap on transfers in the
                                   multi handle at once (see engine_io.c) */

    /* lock */
    struct vt_eng_xfer *q_head, *q_tail;
    int ready;                  /* multi exists: curl_multi_wakeup allowed */
    int dead;                   /* thread failed to start curl and exited */
    int stopping;
    int fork_hold;
    int parked;

    /* io (multi is also read by wakers once ready is set) */
    CURLM *multi;
    CURLSH *share;
    CURL *free_easy[32];         /* default-buffer easy handles to reuse
                                    (engine_easy.c) */
    int n_free;
    struct vt_eng_xfer *timers;  /* sorted by due */
    struct vt_eng_xfer *active;  /* in the multi handle */
    long n_active;               /* length of active, <= max_streams */
    uint64_t rng;
    struct vt_eng_origin {       /* origins seen answering (h2 or failing) */
        char name[128];          /* "https://host:port" ("" unused) */
        int h2;
        double failing_until;    /* monotonic s: a request to it exhausted
                                    its retries; until then one attempt each */
    } origins[16];
    struct vt_eng_failing {      /* objects whose request exhausted its
                                    retries (engine_io.c) */
        uint64_t id;             /* hash of the URL before its query */
        double until;            /* monotonic s; 0: unused */
    } failing[16];
    unsigned failing_next;       /* round-robin slot to replace */
    double retry_tokens;         /* the process's retry budget (engine_io.c) */
    unsigned origin_next;        /* round-robin slot to replace */
    curl_socket_t *socks;        /* every socket curl opened through us */
    size_t n_socks, cap_socks;
    double end_check_at;         /* monotonic s: when a stream whose body
                                    is complete but still open is to be
                                    looked at again (engine_xfer.c's
                                    progress callback; 0: none) */
};

/* The shared state below is defined in engine_state.c, under both files
 * that use it (engine.c, engine_io.c), so that calls between them go one
 * way only: engine.c starts the I/O thread (vt__eng_io_main). */
extern pthread_mutex_t vt__eng_lock;
/* With vt__eng_lock: the I/O thread parked for fork() (or died at start),
 * and the fork is over. Process-wide, so no waiter ever sleeps on the
 * condition variable of an engine that another thread may free. */
extern pthread_cond_t vt__eng_park_cv, vt__eng_resume_cv;

/* Process-wide counters (atomic; survive engine restarts, zeroed in a
 * fork() child, whose stats describe the child). */
extern _Atomic uint64_t vt__eng_st_requests, vt__eng_st_retries,
    vt__eng_st_bytes, vt__eng_st_connections, vt__eng_st_in_flight,
    vt__eng_st_h2;

/* What one finished attempt means (engine_xfer.c). */
struct vt_eng_verdict {
    vt_err err;
    int transient;   /* worth another attempt */
    int kill_conn;   /* we ended a stream early or it stalled: retire the
                        connection (see kill_connection in engine_io.c) */
    char why[CURL_ERROR_SIZE + 64];
    const char *cause; /* static words: why a failure without an HTTP
                          answer is not retried (NULL: none given) */
};

/* engine_xfer.c, all on the I/O thread, no lock. */
/* Forget one attempt's response state (before a retry, or at the end). */
void vt__eng_reset_attempt(struct vt_eng_xfer *x);
/* curl header and write callbacks; ud is the struct vt_eng_xfer. Headers
 * kept are malloc'd into x and freed by vt__eng_reset_attempt or handed to
 * the response; the body grows x->buf within the request's bound. */
size_t vt__eng_on_header(char *buf, size_t size, size_t n, void *ud);
size_t vt__eng_on_write(char *data, size_t size, size_t n, void *ud);
/* A body buffer of cap bytes: under VT_BODY_PAGES_MIN from malloc, from
 * that size on in pages of its own (mmap), so that its memory goes back to
 * the kernel when it is freed instead of staying in a glibc arena of the
 * I/O thread as slack (docs/architecture.md, "The engine"). vt__eng_body_grow
 * makes *buf hold at least want bytes, keeping its first len (*buf and *cap
 * unchanged on failure: VT_ENOMEM); vt__eng_body_free frees what it made.
 * Any thread; the buffer belongs to the caller. */
#define VT_BODY_PAGES_MIN (64u * 1024)
/* vt__eng_body_drop gives pages back only this many at a time: each
 * madvise(MADV_DONTNEED) of a process whose threads run on other CPUs costs
 * a TLB shootdown (an interrupt to each of them); one per 16 KiB cache block
 * was 4% of a 16-thread tile server's CPU in the kernel. */
#define VT_BODY_DROP_MIN (128u * 1024)
vt_err vt__eng_body_grow(unsigned char **buf, size_t *cap, size_t len,
                         size_t want);
void vt__eng_body_free(unsigned char *buf, size_t cap);
/* Give the whole pages of [from, upto) of a body made by vt__eng_body_grow
 * back to the kernel (a body in pages of its own only; they read as zeros
 * afterwards). Returns the end of what was given back (from when nothing). */
size_t vt__eng_body_drop(unsigned char *buf, size_t cap, size_t from,
                         size_t upto);
/* curl's progress callback: ends an h2 transfer whose whole body arrived
 * but whose stream stays open (no END_STREAM) after a grace period. */
int vt__eng_on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow,
                        curl_off_t ultotal, curl_off_t ulnow);
/* Verdict on an attempt that curl ended with rc (not CURLE_OK) ... */
void vt__eng_judge_curl(CURLcode rc, struct vt_eng_xfer *x,
                        struct vt_eng_verdict *v);
/* ... or that completed with an HTTP status (checks byte counts too). */
void vt__eng_judge_status(struct vt_eng_xfer *x, struct vt_eng_verdict *v);

/* The I/O thread's body (engine_io.c). arg: the struct vt_engine, owned by
 * engine.c, which joins the thread and frees it. */
void *vt__eng_io_main(void *arg);

/* engine_easy.c, all on the I/O thread, no lock: an attempt's easy handle. */
/* The receive buffer x's attempt gets: room for its whole body when that is
 * known (expect_len, else its Range), in powers of two from curl's default
 * 16 KiB up to 1 MiB. */
long vt__eng_recv_buffer(const struct vt_eng_xfer *x);
/* An easy handle for a receive buffer of bufsize: one of e's pool (reset)
 * when bufsize is curl's default, else a fresh one; NULL when out of
 * memory. The caller owns it until vt__eng_easy_put. */
CURL *vt__eng_easy_get(struct vt_engine *e, long bufsize);
/* Give back a handle vt__eng_easy_get gave for bufsize, no longer in the
 * multi handle: kept in e's pool (at most 32) or freed. */
void vt__eng_easy_put(struct vt_engine *e, CURL *easy, long bufsize);
/* Free every handle of e's pool (the I/O thread's exit). */
void vt__eng_easy_pool_free(struct vt_engine *e);
/* x->req's header lines appended to x->hdrs (freed with x's attempt state
 * by the caller); VT_ENOMEM when one could not be. */
vt_err vt__eng_build_headers(struct vt_eng_xfer *x);
/* Every libcurl option of x's attempt set on x->easy (x->bufsize and
 * x->hdrs already set; now: monotonic s, for what is left of x->deadline).
 * CURLE_OK, or the first option curl refused. */
CURLcode vt__eng_set_options(struct vt_engine *e, struct vt_eng_xfer *x,
                             double now);

/* engine_sock.c, all on the I/O thread, no lock. curl's socket callbacks
 * (clientp: the struct vt_eng_xfer for open and prereq, the struct
 * vt_engine for close): every socket curl opens is listed in e->socks. */
curl_socket_t vt__eng_open_socket(void *clientp, curlsocktype purpose,
                                  struct curl_sockaddr *addr);
int vt__eng_close_socket(void *clientp, curl_socket_t s);
int vt__eng_on_prereq(void *clientp, char *primary_ip, char *local_ip,
                      int primary_port, int local_port);
/* Shut down the socket of the h2 connection x's attempt used (httpver:
 * CURLINFO_HTTP_VERSION), so curl retires it. */
void vt__eng_kill_connection(struct vt_engine *e, struct vt_eng_xfer *x,
                             long httpver);

/* engine_origin.c, all on the I/O thread, no lock. */
/* The slot of url's origin, or NULL when none is remembered. */
struct vt_eng_origin *vt__eng_origin_find(struct vt_engine *e, const char *url);
/* Remember whether url's origin answered over h2. */
void vt__eng_origin_learn(struct vt_engine *e, const char *url, int h2);
/* 1 while url's origin or object recently ran out of retries (now:
 * monotonic s). */
int vt__eng_origin_failing(struct vt_engine *e, const char *url, double now);
/* Remember (until > 0, monotonic s) or forget (0) that url's server and
 * object fail. */
void vt__eng_set_failing(struct vt_engine *e, const char *url, double until);

#endif
