/* engine.h: the process-wide HTTP engine.
 *
 * One libcurl multi handle, driven by one dedicated I/O thread started on
 * first use. Any thread submits requests and blocks until its own requests
 * complete; no curl call is ever made off the I/O thread. Where the server
 * negotiates h2 by ALPN, all transfers multiplex over one connection
 * (CURLOPT_PIPEWAIT); otherwise a bounded HTTP/1.1 keep-alive pool is used.
 *
 * The engine owns retries (429/500/502/503/504, resets, timeouts, truncated
 * bodies), with exponential backoff, jitter and Retry-After, and it checks
 * every range response's byte count against its Content-Range: curl 7.88 can
 * report a stream cut by RST/GOAWAY as complete. Transfers are never paused:
 * the write callback always buffers.
 *
 * Requests are signed by the caller before submission; a retried request is
 * re-sent with the same headers (SigV4 signatures stay valid for 15 minutes).
 *
 * Lifecycle: the I/O thread stops at vt__engine_shutdown() (called from the
 * GDAL unload hook and atexit). A fork()ed child never touches the parent's
 * connections: the child's first request builds a fresh engine. */
#ifndef VT_ENGINE_H
#define VT_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct vt_http_req {
    const char *method;          /* "GET", "PUT", "POST", ... */
    const char *url;             /* absolute URL, already percent-encoded */
    const char *const *headers;  /* NULL-terminated "Name: value" lines, or NULL */
    const void *body;            /* request body (POST/PUT) or NULL */
    size_t body_len;
    uint64_t expect_len;         /* range GET: length of the range asked for
                                    (0: not a range GET). A 206 body must be
                                    exactly its Content-Range's length,
                                    start where asked and hold at most
                                    expect_len bytes; it may hold fewer (the
                                    object's end, or a server capping range
                                    lengths: the caller asks for the rest);
                                    anything else is a damaged transfer,
                                    retried. A 206
                                    without Content-Range is taken as the
                                    range asked when its body is exactly
                                    that long (no total then). */
    size_t max_body;             /* keep at most this many body bytes
                                    (0: 4 MiB); more is a VT_EPROTO error */
    int max_retries;             /* < 0: GDAL_HTTP_MAX_RETRY (default 3;
                                    opts_path's) */
    double retry_delay;          /* < 0: GDAL_HTTP_RETRY_DELAY in s (default
                                    0.5; opts_path's) */
    long timeout_ms;             /* whole transfer; 0: GDAL_HTTP_TIMEOUT
                                    (opts_path's) or none */
    long connect_timeout_ms;     /* 0: GDAL_HTTP_CONNECTTIMEOUT (opts_path's)
                                    or 10 s */
    int has_cainfo;              /* 1: the caller chose the CA file: cainfo
                                    (NULL: curl's default); 0: the rule of
                                    GDAL's CPLHTTPFetch (config.h,
                                    VT_CA_FETCH) */
    const char *cainfo;          /* lives as long as the request */
    const char *opts_path;       /* the object path ("bucket/key", as
                                    config.h's lookups take it) GDAL's HTTP
                                    options are read for: HTTP version,
                                    timeouts, speed limits, retries, proxy;
                                    per path where the running GDAL reads
                                    them so (config.h vt__cfg_http_path),
                                    else from the configuration; NULL: the
                                    configuration. Read on the submitting
                                    thread, under its prefix scope, once per
                                    run of requests of one path in a batch;
                                    lives as long as the request */
    /* The service's judge of its error answers, set by the backend that
     * builds the request (S3: vt__s3_answer_transient, backends/s3/), or
     * NULL: 1 when an answer of status (not one the engine retries itself:
     * 429, 500, 502, 503, 504) with this body (its first len bytes, any
     * bytes, NULL when none) is worth sending the same request again, as
     * S3's 400 RequestTimeout is. Called on the I/O thread with no lock
     * held; must be pure. The engine knows no service's error words. */
    int (*answer_transient)(long status, const unsigned char *body,
                            size_t len);
    /* Whose request it is, for the counters: the name of the backend that
     * built it ("s3", "gs", "az", "curl"), or NULL (a credential fetch).
     * The engine hands it back untouched in on_attempt; it lives as long
     * as the request. */
    const char *counter;
} vt_http_req;

typedef struct vt_http_resp {
    long status;                 /* final HTTP status; 0 when none was received */
    unsigned char *body;         /* the body (NUL-terminated past body_len),
                                    freed by vt__http_resp_clear */
    size_t body_len;
    size_t body_cap;             /* bytes reserved at body; below 64 KiB
                                    (and 0, a body a test malloc'd) it is
                                    malloc'd, from there in pages of its own */
    size_t body_done;            /* bytes at body's start given back
                                    (vt__http_resp_body_done) */
    char *etag;                  /* ETag header value with quotes, or NULL */
    char *bucket_region;         /* x-amz-bucket-region header, or NULL */
    char *retry_after;           /* Retry-After header, or NULL */
    long long last_modified;     /* Last-Modified as Unix time (0: absent) */
    char *location;              /* a 3xx's Location, as sent (the engine
                                    follows no redirect: the caller may), or
                                    NULL */
    long long date;              /* the server's Date as Unix time (0: none) */
    int has_content_range;       /* Content-Range was present and parsed */
    uint64_t range_first;        /* Content-Range: bytes first-last/total */
    uint64_t range_last;
    int has_total;               /* total_size is known: a Content-Range
                                    total (also the "*" "/N" form of a 416), or
                                    the Content-Length of a 200 or HEAD */
    uint64_t total_size;         /* object size: Content-Range total, or
                                    Content-Length of a 200 */
    int attempts;                /* how many times it was sent */
    int http_version;            /* 1 or 2: protocol of the final attempt */
    char error[256];             /* curl's or the engine's words on failure */
    char cause[160];             /* no HTTP answer: the engine's words on
                                    what failed and whether it was retried
                                    ("network error, not retried: the host
                                    name does not resolve"), or "" */
} vt_http_resp;

/* Perform one request, blocking the calling thread until it completes (after
 * retries). Returns VT_OK when an HTTP response was received, whatever its
 * status (the caller maps 4xx); transport failures and exhausted retries on
 * transient statuses return VT_ETRANSIENT/VT_ETIMEDOUT/VT_ENETWORK/VT_EPROTO
 * with resp->status holding the last status seen. *resp is always
 * initialised; release it with vt__http_resp_clear(). Thread-safe. */
vt_err vt__engine_perform(const vt_http_req *req, vt_http_resp *resp);

/* Perform n requests concurrently and wait for all of them. errs[i] and
 * resps[i] as for vt__engine_perform. Returns the first non-OK err or VT_OK. */
vt_err vt__engine_perform_many(size_t n, const vt_http_req *reqs,
                               vt_http_resp *resps, vt_err *errs);

void vt__http_resp_clear(vt_http_resp *resp);
/* Make resp's body hold at least want bytes, its body_len bytes kept (the
 * caller appends; VT_ENOMEM leaves resp as it was). Any thread. */
vt_err vt__http_resp_reserve(vt_http_resp *resp, size_t want);
/* The caller has taken body bytes [0, upto) and will not read them again
 * (the cache copied them, block by block): a body in pages of its own gives
 * the whole pages of that prefix back to the kernel, 128 KiB or more at a
 * time (each give-back is a TLB shootdown), so that a large answer is not
 * held twice, once here and once in the cache, until the last block is
 * copied. Those bytes read as zeros afterwards. A malloc'd body (under 64
 * KiB) is left as it is. Any thread; resp must be the caller's. */
void vt__http_resp_body_done(vt_http_resp *resp, size_t upto);

typedef struct vt_engine_stats {
    uint64_t requests;           /* attempts sent (each retry counts) */
    uint64_t retries;
    uint64_t bytes_received;     /* body bytes */
    uint64_t connections;        /* connections opened (CURLINFO_NUM_CONNECTS) */
    uint64_t in_flight;          /* transfers running now */
    uint64_t h2_responses;
} vt_engine_stats;

void vt__engine_get_stats(vt_engine_stats *out);

/* Stop the I/O thread, abort what is in flight (waiters get VT_ESHUTDOWN),
 * release curl. Idempotent; safe at exit. A later request restarts it. */
void vt__engine_shutdown(void);

/* One finished HTTP attempt (each retry is one), as on_attempt reports it;
 * its pointers live for the call only. */
typedef struct vt_http_attempt {
    const char *method;   /* the request's method (NULL: GET) */
    int ranged;           /* it carried a Range header */
    long status;          /* the status answered; 0: none */
    double seconds;       /* from sending to the end */
    uint64_t bytes;       /* body bytes received */
    const char *counter;  /* the request's counter (vt_http_req), or NULL */
} vt_http_attempt;

/* News the engine reports to the layer above it, which registers where
 * it goes (nghttp2's session callbacks: the engine never names the modules
 * above it). Both are called on the I/O thread, with no engine lock held,
 * and must not block or submit requests.
 *   on_attempt  one finished HTTP attempt (vt_http_attempt)
 *   on_idle     each turn of the I/O loop (at least once a second)
 * A NULL member, or nothing registered, drops that news. */
typedef struct vt_engine_callbacks {
    void (*on_attempt)(const vt_http_attempt *a);
    void (*on_idle)(void);
} vt_engine_callbacks;

/* Register cb (copied; NULL: none) for every engine of this process, fork()
 * children's included. Call before the first request (plugin.c does, at
 * registration); thread-safe. */
void vt__engine_set_callbacks(const vt_engine_callbacks *cb);

#endif
