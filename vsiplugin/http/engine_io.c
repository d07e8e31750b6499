/* engine_io.c: the engine's I/O thread, the only thread that drives libcurl
 * (each attempt's handle and options come from engine_easy.c).
 *
 * One thread owns one curl multi handle. It takes submitted transfers off
 * the queue (engine.c puts them there and calls curl_multi_wakeup), drives
 * them with curl_multi_perform/curl_multi_poll, checks every response
 * (status, byte count against Content-Range and Content-Length), retries
 * transient failures after a backoff kept as a due time in a timer list (the
 * thread never sleeps: the poll timeout is the next due time), and hands the
 * final outcome to the waiting thread under vt__eng_lock.
 *
 * HTTP/2 stalls (curl 7.88, lib/http2.c), and how this file avoids them.
 * All streams of a connection share one 32 KB input buffer that nghttp2
 * parses on behalf of whichever transfer happens to be reading. DATA for
 * another stream is copied into that stream's receive buffer; when it does
 * not fit, on_data_chunk_recv() returns NGHTTP2_ERR_PAUSE and sets
 * pause_stream_id: parsing of the whole connection stops, the rest of the
 * input stays parked, and every other stream's recv returns CURLE_AGAIN
 * until the paused stream's transfer drains it. If that transfer then ends
 * without reading again (its Content-Length reached while its END_STREAM
 * is still parked, or ended early by a timeout, a write-callback abort or a
 * pause by the application), pause_stream_id is cleared but nothing parses
 * the parked input or wakes the others: they wait for the socket to become
 * readable, which it never does when the server has sent everything. The
 * wait ends when the server's idle timeout closes the connection: nghttpx's
 * 3 min read timeout, the 180 s window stock GDAL shows. Seen here too: 4
 * of 800 multiplexed transfers stuck until our low-speed limit. So:
 *  - every transfer gets a receive buffer that holds its whole response
 *    (up to 1 MiB; engine_easy.c): a stream that always fits never pauses;
 *  - on origins known to answer over h2, transfers end at END_STREAM, not
 *    at Content-Length (CURLOPT_IGNORE_CONTENT_LENGTH; the length is still
 *    checked in engine_xfer.c): the last read parses the parked input;
 *  - the write callback never pauses and never aborts, except when a body
 *    exceeds its bound;
 *  - transfers are removed from the multi handle only after curl reports
 *    them done; all of them are driven by this one loop;
 *  - a stream whose whole body has arrived but whose END_STREAM has not
 *    been seen is ended by us after a grace (engine_xfer.c's progress
 *    callback; the loop below wakes for it): curl 7.88 can read a stream's
 *    END_STREAM without waking its transfer, which then waits for the next
 *    socket event or this thread's idle poll (seen under load: a one-tile
 *    GET, alone on its connection, waited ~1 s). A body that fit its
 *    receive buffer cannot have parked anything: only its stream is reset;
 *  - last line of defence: a low-speed limit ends any stalled transfer, and
 *    then (or after ending a stream whose body outgrew its buffer) the
 *    connection's socket is shut down, so that curl retires it and every
 *    stream parked on it fails now and is retried on a fresh connection,
 *    instead of waiting for the server's timeout.
 *
 * At most max_streams transfers (VSITUNE_MAX_STREAMS, the h2 per-connection
 * stream limit) are in the multi handle at once; the rest wait in the timer
 * list. Without that cap curl 7.88 opens a new connection for every
 * transfer beyond the stream limit of the first (a connection still in its
 * TLS handshake is not "open enough" to wait on), up to the host limit:
 * 160 concurrent requests gave 16 connections where 1 serves them all.
 *
 * Beside this file, on the same thread: engine_easy.c (an attempt's easy
 * handle: the pool, its receive buffer, its libcurl options), engine_sock.c
 * (the sockets curl opens through us, and shutting down a stalled
 * connection) and engine_origin.c (origins known to answer over h2, servers
 * and objects that keep failing). The lock and counters it shares with engine.c live
 * in engine_state.c; it never calls engine.c. */
#include "http/engine_int.h"
#include "http/engine_retry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define IDLE_POLL_MS 1000

/* vt__engine_set_callbacks' registration: process-wide, read by the I/O
 * thread without a lock (engine.h). */
typedef void (*vt_eng_attempt_fn)(const vt_http_attempt *);
typedef void (*vt_eng_idle_fn)(void);
static _Atomic(vt_eng_attempt_fn) cb_attempt;
static _Atomic(vt_eng_idle_fn) cb_idle;

void vt__engine_set_callbacks(const vt_engine_callbacks *cb)
{
    atomic_store(&cb_attempt, cb ? cb->on_attempt : NULL);
    atomic_store(&cb_idle, cb ? cb->on_idle : NULL);
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The poll timeout that wakes the loop by `due` (a now_s() time), or the
 * current one, `cur` ms, when that comes sooner; rounded up a millisecond
 * so the loop does not wake just before its deadline. */
static long wait_until(long cur, double due, double now)
{
    double wait = (due - now) * 1000.0;
    long ms = wait <= 0 ? 0 : (long)wait + 1;

    return ms < cur ? ms : cur;
}

/* Hand the final outcome to the waiter. After the unlock, x (and its batch)
 * may be gone: the waiter frees them. */
static void complete(struct vt_eng_xfer *x, vt_err err, int http_version)
{
    vt_http_resp *r = x->resp;
    vt_content_range cr;

    x->done_at = now_s();
    r->status = x->hdr_status;
    r->attempts = x->attempts;
    r->http_version = http_version;
    if (x->hdr_status > 0) {
        if (!x->buf && (x->buf = malloc(1)) != NULL)
            x->cap = 1;
        if (x->buf) {
            x->buf[x->len] = '\0';
            r->body = x->buf;
            r->body_len = x->len;
            r->body_cap = x->cap;
            x->buf = NULL;
            x->cap = 0;
        }
    }
    r->etag = x->etag;
    r->bucket_region = x->region;
    r->retry_after = x->retry_after;
    x->etag = x->region = x->retry_after = NULL;
    if (x->last_modified) {
        time_t lm = curl_getdate(x->last_modified, NULL);
        r->last_modified = lm > 0 ? (long long)lm : 0;
    }
    if (x->hdr_status >= 300 && x->hdr_status < 400) {
        r->location = x->location;
        x->location = NULL;
    }
    if (x->date) {
        time_t d = curl_getdate(x->date, NULL);
        r->date = d > 0 ? (long long)d : 0;
    }
    if (x->content_range &&
        vt__parse_content_range(x->content_range, &cr) == VT_OK) {
        r->has_content_range = cr.has_range;
        r->range_first = cr.first;
        r->range_last = cr.last;
        r->has_total = cr.has_total;
        r->total_size = cr.total;
    } else if (x->hdr_status == 200 && x->content_length >= 0) {
        r->has_total = 1;
        r->total_size = (uint64_t)x->content_length;
    } else if (x->range_assumed && err == VT_OK) {
        r->has_content_range = 1; /* the range asked; no total */
        r->range_first = x->req_first;
        r->range_last = x->req_last;
    }
    if (err != VT_OK && r->error[0] == '\0') {
        snprintf(r->error, sizeof(r->error), "%s",
                 x->errbuf[0] ? x->errbuf : vt_strerror(err));
    }
    vt__eng_body_free(x->buf, x->cap);
    x->buf = NULL;
    x->cap = 0;
    vt__eng_reset_attempt(x);
    curl_slist_free_all(x->hdrs);
    x->hdrs = NULL;

    pthread_mutex_lock(&vt__eng_lock);
    *x->err = err;
    if (--x->batch->pending == 0)
        pthread_cond_signal(&x->batch->cv);
    pthread_mutex_unlock(&vt__eng_lock);
}

/* The kind of failure an attempt without an HTTP answer had, for the
 * cause a caller shows after curl's words. */
static const char *failure_kind(vt_err err)
{
    switch (err) {
    case VT_ENETWORK: return "network error";
    case VT_ETIMEDOUT: return "timed out";
    case VT_ETRANSIENT: return "transfer failed";
    case VT_EPROTO: return "malformed answer";
    default: return vt_strerror(err);
    }
}

static void fail(struct vt_eng_xfer *x, vt_err err, const char *why)
{
    x->len = 0; /* never hand back part of a body */
    snprintf(x->resp->error, sizeof(x->resp->error), "%s", why);
    complete(x, err, 0);
}

static void timer_insert(struct vt_engine *e, struct vt_eng_xfer *x)
{
    struct vt_eng_xfer **pp = &e->timers;

    while (*pp && (*pp)->due <= x->due)
        pp = &(*pp)->next;
    x->next = *pp;
    *pp = x;
}

static void active_add(struct vt_engine *e, struct vt_eng_xfer *x)
{
    x->prev = NULL;
    x->next = e->active;
    if (e->active)
        e->active->prev = x;
    e->active = x;
    e->n_active++;
}

static void active_del(struct vt_engine *e, struct vt_eng_xfer *x)
{
    if (x->prev)
        x->prev->next = x->next;
    else
        e->active = x->next;
    if (x->next)
        x->next->prev = x->prev;
    x->next = x->prev = NULL;
    e->n_active--;
}

/* Send one attempt of x now. On failure x is completed. */
static void start(struct vt_engine *e, struct vt_eng_xfer *x)
{
    CURLcode rc;
    double now = now_s();

    if (x->attempts == 0) {
        x->first_sent = now;
        x->deadline = x->opts.timeout_ms > 0
                          ? now + x->opts.timeout_ms / 1000.0 : 0;
        /* While its server is failing, a new request gets one attempt. */
        if (vt__eng_origin_failing(e, x->req->url, now)) {
            x->opts.max_retries = 0;
            x->single = 1;
        }
    } else if (vt__eng_origin_failing(e, x->req->url, now)) {
        /* A retry that waited while another request to the same server ran
         * out of retries: give up too (the last answer stands). */
        snprintf(x->resp->error, sizeof(x->resp->error),
                 "%.160s (no retry: the server failed other requests just now)",
                 x->retry_why[0] ? x->retry_why : vt_strerror(x->last_err));
        if (!(x->hdr_status >= 300))
            x->len = 0;
        complete(x, x->last_err, x->last_version);
        return;
    }
    if (x->deadline > 0 && now >= x->deadline) {
        fail(x, VT_ETIMEDOUT, "GDAL_HTTP_TIMEOUT deadline reached");
        return;
    }

    if (!x->hdrs && x->req->headers && vt__eng_build_headers(x) != VT_OK) {
        fail(x, VT_ENOMEM, "out of memory building headers");
        return;
    }
    x->bufsize = vt__eng_recv_buffer(x);
    x->easy = vt__eng_easy_get(e, x->bufsize);
    if (!x->easy) {
        fail(x, VT_ENOMEM, "curl_easy_init failed");
        return;
    }
    vt__eng_reset_attempt(x);
    x->local_port = 0;
    x->eng = e;
    x->socks_opened = 0;
    x->requests = 0;
    x->resend_refused = 0;
    rc = vt__eng_set_options(e, x, now_s());
    if (rc != CURLE_OK) {
        vt_err err = rc == CURLE_OUT_OF_MEMORY ? VT_ENOMEM : VT_EINVAL;
        char why[128];
        snprintf(why, sizeof(why), "curl option rejected: %s",
                 curl_easy_strerror(rc));
        curl_easy_cleanup(x->easy);
        x->easy = NULL;
        fail(x, err, why);
        return;
    }
    if (curl_multi_add_handle(e->multi, x->easy) != CURLM_OK) {
        curl_easy_cleanup(x->easy);
        x->easy = NULL;
        fail(x, VT_ENOMEM, "curl_multi_add_handle failed");
        return;
    }
    x->attempts++;
    x->sent_at = now_s();
    if (x->attempts == 1)
        x->first_sent_at = x->sent_at;
    active_add(e, x);
    atomic_fetch_add(&vt__eng_st_requests, 1);
    atomic_fetch_add(&vt__eng_st_in_flight, 1);
}

/* The attempt's phases as libcurl timed them, for the debug line: where a
 * request's time went (connect, TLS, first byte, total), and whether it
 * opened a connection. */
static void note_phases(struct vt_eng_xfer *x, CURL *easy, long nconn)
{
    x->ph.conn = x->ph.tls = x->ph.first = x->ph.total = 0;
    curl_easy_getinfo(easy, CURLINFO_CONNECT_TIME_T, &x->ph.conn);
    curl_easy_getinfo(easy, CURLINFO_APPCONNECT_TIME_T, &x->ph.tls);
    curl_easy_getinfo(easy, CURLINFO_STARTTRANSFER_TIME_T, &x->ph.first);
    curl_easy_getinfo(easy, CURLINFO_TOTAL_TIME_T, &x->ph.total);
    x->ph.nconn = nconn;
    x->ph.set = 1;
}

static void finished(struct vt_engine *e, CURL *easy, CURLcode rc)
{
    struct vt_eng_xfer *x;
    struct vt_eng_verdict v = {VT_OK, 0, 0, "", NULL};
    long httpver = 0, nconn = 0, status = 0;
    char *priv = NULL;
    int ver;
    vt_eng_attempt_fn on_attempt;

    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
    x = (struct vt_eng_xfer *)priv;
    curl_easy_getinfo(easy, CURLINFO_HTTP_VERSION, &httpver);
    curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &nconn);
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    note_phases(x, easy, nconn);
    if (status > 0)
        x->hdr_status = status;
    atomic_fetch_add(&vt__eng_st_connections, (uint64_t)nconn);
    atomic_fetch_sub(&vt__eng_st_in_flight, 1);
    atomic_fetch_add(&vt__eng_st_bytes, (uint64_t)x->len);
    if (httpver == CURL_HTTP_VERSION_2_0 && x->hdr_status > 0)
        atomic_fetch_add(&vt__eng_st_h2, 1);
    ver = httpver == CURL_HTTP_VERSION_2_0 ? 2 : 1;
    if (x->hdr_status > 0)
        vt__eng_origin_learn(e, x->req->url, ver == 2);
    on_attempt = atomic_load(&cb_attempt);
    if (on_attempt) {
        vt_http_attempt a = {x->req->method, x->has_req_range, x->hdr_status,
                             now_s() - x->sent_at, (uint64_t)x->len,
                             x->req->counter};
        on_attempt(&a);
    }

    if (rc != CURLE_OK)
        vt__eng_judge_curl(rc, x, &v);
    else
        vt__eng_judge_status(x, &v);
    if (v.kill_conn)
        vt__eng_kill_connection(e, x, httpver);

    active_del(e, x);
    curl_multi_remove_handle(e->multi, easy);
    x->easy = NULL;
    vt__eng_easy_put(e, easy, x->bufsize);

    x->last_err = v.err;
    x->last_version = ver;
    if (v.err == VT_OK) {
        /* Success: the budget gets back what this request took, or one
         * token (AWS SDKs' standard retry mode), and its server is fine. */
        e->retry_tokens += x->tokens_spent > 0 ? x->tokens_spent : 1;
        if (e->retry_tokens > VT_RETRY_TOKENS)
            e->retry_tokens = VT_RETRY_TOKENS;
        vt__eng_set_failing(e, x->req->url, 0);
    } else if (v.transient) {
        char stop[160] = "";
        double now = now_s(), cost = v.err == VT_ETIMEDOUT
                                         ? VT_RETRY_COST_TIMEOUT
                                         : VT_RETRY_COST;
        double delay = vt__backoff_delay(x->opts.retry_delay, x->attempts,
                                         VT_BACKOFF_CAP, vt__rand01(&e->rng));
        if (x->retry_after) {
            double ra = vt__parse_retry_after(x->retry_after, time(NULL),
                                              VT_RETRY_AFTER_CAP);
            if (ra > delay)
                delay = ra;
        }
        if (x->attempts > x->opts.max_retries)
            snprintf(stop, sizeof(stop), "retries exhausted");
        else if (vt__eng_origin_failing(e, x->req->url, now))
            snprintf(stop, sizeof(stop), "no retry: the server failed other "
                     "requests just now");
        else if (e->retry_tokens < cost)
            snprintf(stop, sizeof(stop), "no retry: the process's retry "
                     "budget is spent");
        else if (x->deadline > 0 && now + delay >= x->deadline)
            snprintf(stop, sizeof(stop), "no retry: waiting %.1f s would pass "
                     "the GDAL_HTTP_TIMEOUT deadline", delay);
        else if (now + delay > x->first_sent + x->opts.retry_window)
            snprintf(stop, sizeof(stop), "no retry: waiting %.1f s would pass "
                     "the %.0f s retry window", delay, x->opts.retry_window);
        if (!stop[0]) {
            e->retry_tokens -= cost;
            x->tokens_spent += cost;
            snprintf(x->retry_why, sizeof(x->retry_why),
                     "%.100s (status %ld, %zu body bytes, HTTP/%d)", v.why,
                     x->hdr_status, x->len, ver);
            x->due = now + delay;
            atomic_fetch_add(&vt__eng_st_retries, 1);
            timer_insert(e, x);
            return;
        }
        /* This server (this object) keeps failing: for a while, other
         * requests to it get one attempt each instead of each running its
         * own ladder. */
        if (x->attempts > 1 || x->opts.max_retries == 0)
            vt__eng_set_failing(e, x->req->url, now + VT_HOST_FAILING_S);
        if (rc != CURLE_OK && x->hdr_status <= 0) {
            /* No answer: curl's words stand alone (GDAL's "CURL error:"
             * quotes them), what we did goes to the cause. */
            snprintf(x->resp->error, sizeof(x->resp->error), "%.200s", v.why);
            snprintf(x->resp->cause, sizeof(x->resp->cause), "%s, %s",
                     failure_kind(v.err), stop);
        } else {
            snprintf(x->resp->error, sizeof(x->resp->error), "%.200s (%s)",
                     v.why, stop);
        }
    }
    /* A failed transfer hands back no partial bytes; an error status whose
     * retries ran out keeps its (error document) body for the caller. */
    if (v.err != VT_OK && !(rc == CURLE_OK && x->hdr_status >= 300))
        x->len = 0;
    if (v.err != VT_OK && !v.transient) {
        snprintf(x->resp->error, sizeof(x->resp->error), "%.200s", v.why);
        if (v.cause)
            snprintf(x->resp->cause, sizeof(x->resp->cause),
                     "%s, not retried: %s", failure_kind(v.err), v.cause);
    }
    complete(x, v.err, ver);
}

/* Fail everything this engine holds with VT_ESHUTDOWN (on stop). */
static void abort_all(struct vt_engine *e, struct vt_eng_xfer *incoming)
{
    struct vt_eng_xfer *x, *next;

    while ((x = e->active)) {
        active_del(e, x);
        curl_multi_remove_handle(e->multi, x->easy);
        curl_easy_cleanup(x->easy);
        x->easy = NULL;
        atomic_fetch_sub(&vt__eng_st_in_flight, 1);
        fail(x, VT_ESHUTDOWN, "I/O engine shut down");
    }
    for (x = e->timers; x; x = next) {
        next = x->next;
        fail(x, VT_ESHUTDOWN, "I/O engine shut down");
    }
    e->timers = NULL;
    for (x = incoming; x; x = next) {
        next = x->next;
        fail(x, VT_ESHUTDOWN, "I/O engine shut down");
    }
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int init_curl(struct vt_engine *e)
{
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != CURLE_OK)
        return -1;
    e->multi = curl_multi_init();
    e->share = curl_share_init();
    if (!e->multi || !e->share)
        return -1;
    /* TLS sessions resumed across easy handles; DNS answers shared. The
     * share is used by this thread only, so it needs no lock callbacks. */
    curl_share_setopt(e->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl_share_setopt(e->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_multi_setopt(e->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    curl_multi_setopt(e->multi, CURLMOPT_MAX_HOST_CONNECTIONS, e->max_conns);
    curl_multi_setopt(e->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
                      e->max_conns * 4);
    curl_multi_setopt(e->multi, CURLMOPT_MAXCONNECTS, e->max_conns * 4);
    curl_multi_setopt(e->multi, CURLMOPT_MAX_CONCURRENT_STREAMS,
                      e->max_streams);
    e->retry_tokens = VT_RETRY_TOKENS;
    e->rng = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^
             (uint64_t)(uintptr_t)e;
    if (e->rng == 0)
        e->rng = 0x9e3779b97f4a7c15ULL;
    return 0;
}

void *vt__eng_io_main(void *arg)
{
    struct vt_engine *e = arg;
    struct vt_eng_xfer *incoming = NULL, *x, *next;
    int ok = init_curl(e) == 0;
    vt_eng_idle_fn on_idle;

    pthread_mutex_lock(&vt__eng_lock);
    if (!ok) {
        e->dead = 1;
        incoming = e->q_head;
        e->q_head = e->q_tail = NULL;
        pthread_cond_broadcast(&vt__eng_park_cv);
        pthread_mutex_unlock(&vt__eng_lock);
        for (x = incoming; x; x = next) {
            next = x->next;
            fail(x, VT_ENOMEM, "could not start libcurl");
        }
        incoming = NULL;
        goto out;
    }
    e->ready = 1;
    pthread_mutex_unlock(&vt__eng_lock);

    for (;;) {
        int running = 0, stop, msgs;
        long timeout_ms = IDLE_POLL_MS;
        double now;
        CURLMsg *m;

        pthread_mutex_lock(&vt__eng_lock);
        while (e->fork_hold && !e->stopping) {
            e->parked = 1;
            pthread_cond_broadcast(&vt__eng_park_cv);
            pthread_cond_wait(&vt__eng_resume_cv, &vt__eng_lock);
        }
        e->parked = 0;
        incoming = e->q_head;
        e->q_head = e->q_tail = NULL;
        stop = e->stopping;
        pthread_mutex_unlock(&vt__eng_lock);
        if (stop)
            break;

        now = now_s();
        for (x = incoming; x; x = next) {
            next = x->next;
            x->due = now;
            timer_insert(e, x);
        }
        incoming = NULL;
        while (e->timers && e->timers->due <= now &&
               e->n_active < e->max_streams) {
            x = e->timers;
            e->timers = x->next;
            x->next = NULL;
            start(e, x);
        }

        e->end_check_at = 0; /* set again by transfers still waiting */
        curl_multi_perform(e->multi, &running);
        while ((m = curl_multi_info_read(e->multi, &msgs))) {
            if (m->msg == CURLMSG_DONE)
                finished(e, m->easy_handle, m->data.result);
        }

        now = now_s();
        if (e->timers && e->n_active < e->max_streams)
            timeout_ms = wait_until(timeout_ms, e->timers->due, now);
        if (e->end_check_at > 0) /* a complete body awaiting END_STREAM */
            timeout_ms = wait_until(timeout_ms, e->end_check_at, now);
        on_idle = atomic_load(&cb_idle);
        if (on_idle)
            on_idle(); /* stats: a trailing publication of the last requests */
        if (timeout_ms > 0)
            curl_multi_poll(e->multi, NULL, 0, (int)timeout_ms, NULL);
    }

out:
    abort_all(e, incoming);
    vt__eng_easy_pool_free(e);
    if (e->multi)
        curl_multi_cleanup(e->multi);
    if (e->share)
        curl_share_cleanup(e->share);
    e->multi = NULL;
    e->share = NULL;
    free(e->socks); /* curl closed them all in curl_multi_cleanup */
    e->socks = NULL;
    e->n_socks = e->cap_socks = 0;
    return NULL;
}

