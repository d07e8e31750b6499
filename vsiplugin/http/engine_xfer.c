/* engine_xfer.c: one transfer's response as the I/O thread receives it, and
 * the verdict on it.
 *
 * The header and write callbacks curl calls for every transfer (on the I/O
 * thread, no lock: the transfer's state belongs to that thread while it
 * runs), and the judgement of a finished attempt: which outcomes are
 * answers, which are worth another attempt, and which mean the connection
 * itself must go. The pure parsers they use are in engine_retry.c. */
#include "http/engine_int.h"
#include "http/engine_retry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <time.h>

#define DEFAULT_MAX_BODY ((size_t)4 << 20)
/* How long a stream whose whole body has arrived may stay open before we end
 * it ourselves (an h2 server slow or failing to send END_STREAM, or curl
 * 7.88 not waking a transfer whose END_STREAM it has read: engine_io.c's
 * top comment; transfers on h2 origins end at END_STREAM, not at
 * Content-Length).
 * - A body that fit its receive buffer cannot have paused the connection,
 *   so nothing is parked behind its stream: ending it resets that stream
 *   only. It gets END_GRACE_FIT_S (seen under load: a one-tile GET waited
 *   for the I/O thread's 1 s idle poll, then retired a healthy connection).
 * - A bigger body may have paused the connection: ending its stream
 *   retires the connection too, so it waits as long again as the body
 *   took, within BODY_DONE_GRACE_MIN_S..MAX_S: a busy server (or host)
 *   that was slow to send the body is as slow to send END_STREAM after it. */
#define END_GRACE_FIT_S 0.05
#define BODY_DONE_GRACE_MIN_S 0.5
#define BODY_DONE_GRACE_MAX_S 5.0

static double mono_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The body length this response announced (Content-Length, else its
 * Content-Range), or -1. */
static long long expected_body(const struct vt_eng_xfer *x)
{
    vt_content_range cr;

    if (x->content_length >= 0)
        return x->content_length;
    if (x->content_range &&
        vt__parse_content_range(x->content_range, &cr) == VT_OK &&
        cr.has_range)
        return (long long)(cr.last - cr.first + 1);
    return -1;
}

int vt__eng_on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow,
                        curl_off_t ultotal, curl_off_t ulnow)
{
    struct vt_eng_xfer *x = ud;
    long long want;
    double now, grace;
    int fits;

    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    if (x->hdr_status < 200 || x->hdr_status >= 300)
        return 0;
    want = expected_body(x);
    if (want <= 0 || (long long)x->len < want)
        return 0;
    now = mono_s();
    fits = (long long)x->bufsize >= want;
    if (x->body_done_at == 0)
        x->body_done_at = now;
    if (fits) {
        grace = END_GRACE_FIT_S;
    } else {
        grace = x->body_done_at - x->sent_at;
        if (grace < BODY_DONE_GRACE_MIN_S)
            grace = BODY_DONE_GRACE_MIN_S;
        if (grace > BODY_DONE_GRACE_MAX_S)
            grace = BODY_DONE_GRACE_MAX_S;
    }
    if (now - x->body_done_at < grace) {
        /* Looked at again then, whether or not the socket wakes the loop. */
        double at = x->body_done_at + grace;
        if (x->eng && (x->eng->end_check_at == 0 || at < x->eng->end_check_at))
            x->eng->end_check_at = at;
        return 0;
    }
    x->end_retires = !fits;
    x->ended_early = 1; /* judged as complete: vt__eng_judge_curl */
    return 1;
}

static int ieq_n(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int ca = (unsigned char)a[i], cb = (unsigned char)b[i];
        if (ca >= 'A' && ca <= 'Z')
            ca += 'a' - 'A';
        if (cb >= 'A' && cb <= 'Z')
            cb += 'a' - 'A';
        if (ca != cb)
            return 0;
    }
    return 1;
}

/* Forget one attempt's response (before a retry, or at the end). */
void vt__eng_reset_attempt(struct vt_eng_xfer *x)
{
    x->len = 0;
    x->overflow = 0;
    x->hdr_status = 0;
    x->content_length = -1;
    free(x->etag);
    free(x->region);
    free(x->retry_after);
    free(x->content_range);
    free(x->last_modified);
    free(x->location);
    free(x->date);
    x->etag = x->region = x->retry_after = x->content_range = NULL;
    x->last_modified = x->location = x->date = NULL;
    x->errbuf[0] = '\0';
    x->body_done_at = 0;
    x->ended_early = 0;
    x->end_retires = 0;
    x->range_assumed = 0;
}

/* Header callback (I/O thread). A status line starts a new response (1xx,
 * or h2's synthesised "HTTP/2 200"), so parsed headers are reset there. */
size_t vt__eng_on_header(char *buf, size_t size, size_t n, void *ud)
{
    struct vt_eng_xfer *x = ud;
    size_t len = size * n, name_len, vlen;
    const char *colon, *v;
    char **slot = NULL;

    /* curl's buffer is len bytes, not NUL-terminated: every parse below
     * takes that length (engine_retry.c). */
    if (len >= 5 && memcmp(buf, "HTTP/", 5) == 0) {
        vt__eng_reset_attempt(x);
        x->hdr_status = vt__parse_status_line(buf, len);
        return len;
    }
    colon = memchr(buf, ':', len);
    if (!colon)
        return len;
    name_len = (size_t)(colon - buf);
    v = colon + 1;
    vlen = len - name_len - 1;
    while (vlen && (*v == ' ' || *v == '\t')) {
        v++;
        vlen--;
    }
    while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' ||
                    v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
        vlen--;
    if (name_len == 4 && ieq_n(buf, "etag", 4))
        slot = &x->etag;
    else if (name_len == 19 && ieq_n(buf, "x-amz-bucket-region", 19))
        slot = &x->region;
    else if (name_len == 11 && ieq_n(buf, "retry-after", 11))
        slot = &x->retry_after;
    else if (name_len == 13 && ieq_n(buf, "content-range", 13))
        slot = &x->content_range;
    else if (name_len == 13 && ieq_n(buf, "last-modified", 13))
        slot = &x->last_modified;
    else if (name_len == 8 && ieq_n(buf, "location", 8))
        slot = &x->location;
    else if (name_len == 4 && ieq_n(buf, "date", 4))
        slot = &x->date;
    else if (name_len == 14 && ieq_n(buf, "content-length", 14)) {
        /* A value we cannot read (garbage, or past 2^63) counts as absent:
         * the body is then checked against the Content-Range alone. */
        uint64_t cl;
        x->content_length =
            vt__parse_content_length(v, vlen, &cl) == VT_OK ? (long long)cl
                                                            : -1;
        return len;
    }
    if (slot) {
        char *s = malloc(vlen + 1);
        if (!s)
            return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
        memcpy(s, v, vlen);
        s[vlen] = '\0';
        free(*slot);
        *slot = s;
    }
    return len;
}

/* n rounded up to whole pages (0 when that overflows). */
static size_t page_round(size_t n)
{
    long pg = sysconf(_SC_PAGESIZE);
    size_t p = pg > 0 ? (size_t)pg : 4096;

    return n > SIZE_MAX - p ? 0 : (n + p - 1) / p * p;
}

vt_err vt__eng_body_grow(unsigned char **buf, size_t *cap, size_t len,
                         size_t want)
{
    unsigned char *nb;

    if (want <= *cap)
        return VT_OK;
    if (want < VT_BODY_PAGES_MIN) {  /* then *cap is below it too: malloc'd */
        nb = realloc(*buf, want);
        if (!nb)
            return VT_ENOMEM;
    } else {
        size_t map = page_round(want);
        void *m = map ? mmap(NULL, map, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                      : MAP_FAILED;
        if (m == MAP_FAILED)
            return VT_ENOMEM;
        nb = m;
        if (len)
            memcpy(nb, *buf, len);
        vt__eng_body_free(*buf, *cap);
        want = map;
    }
    *buf = nb;
    *cap = want;
    return VT_OK;
}

void vt__eng_body_free(unsigned char *buf, size_t cap)
{
    if (!buf)
        return;
    if (cap < VT_BODY_PAGES_MIN)
        free(buf);
    else
        munmap(buf, page_round(cap));
}

size_t vt__eng_body_drop(unsigned char *buf, size_t cap, size_t from,
                         size_t upto)
{
    long pg = sysconf(_SC_PAGESIZE);
    size_t p = pg > 0 ? (size_t)pg : 4096, start, end;

    if (!buf || cap < VT_BODY_PAGES_MIN || upto > cap)
        return from;
    start = (from + p - 1) / p * p; /* the mapping starts on a page */
    end = upto / p * p;
    if (end <= start || end - start < VT_BODY_DROP_MIN ||
        madvise(buf + start, end - start, MADV_DONTNEED) != 0)
        return from;
    return end;
}

/* Write callback (I/O thread). Never pauses: either the bytes fit the bound
 * and are kept, or the transfer is failed. Bodies of error statuses are cut
 * at the bound without failing (only their start is ever shown). */
size_t vt__eng_on_write(char *data, size_t size, size_t n, void *ud)
{
    struct vt_eng_xfer *x = ud;
    size_t len = size * n, limit;
    int is_error = x->hdr_status >= 300;

    limit = x->req->max_body ? x->req->max_body : DEFAULT_MAX_BODY;
    if (x->hdr_status == 206 && x->req->expect_len &&
        x->req->expect_len < (uint64_t)limit)
        limit = (size_t)x->req->expect_len;
    if (len > limit - x->len) {
        if (is_error) {
            len = limit - x->len; /* keep the start, drop the rest */
            if (len == 0)
                return size * n;
        } else {
            x->overflow = 1;
            return 0;
        }
    }
    if (x->len + len + 1 > x->cap) {
        size_t want = x->cap ? x->cap : 16384;
        if (x->hdr_status == 206 && x->req->expect_len &&
            x->req->expect_len + 1 > want)
            want = (size_t)x->req->expect_len + 1;
        while (want < x->len + len + 1)
            want *= 2;
        if (want > limit + 1)
            want = limit + 1;
        if (vt__eng_body_grow(&x->buf, &x->cap, x->len, want) != VT_OK)
            return 0;
    }
    memcpy(x->buf + x->len, data, len);
    x->len += len;
    return size * n;
}

void vt__eng_judge_curl(CURLcode rc, struct vt_eng_xfer *x,
                        struct vt_eng_verdict *v)
{
    if (rc == CURLE_ABORTED_BY_CALLBACK && x->ended_early) {
        /* Every byte announced arrived; only END_STREAM was missing. The
         * answer is judged like any other; the connection, where curl 7.88
         * may have parked input behind the stream we reset, is retired when
         * the body did not fit its receive buffer (the progress callback). */
        vt__eng_judge_status(x, v);
        v->kill_conn = x->end_retires;
        return;
    }
    v->transient = 1;
    if (rc == CURLE_ABORTED_BY_CALLBACK && x->resend_refused) {
        v->err = VT_ETRANSIENT;
        snprintf(v->why, sizeof(v->why), "request not completed (refused "
                 "stream or closed connection%s%.60s); not sent again while "
                 "the server or object is failing", x->errbuf[0] ? ": " : "",
                 x->errbuf);
        return;
    }
    switch (rc) {
    case CURLE_WRITE_ERROR:
        if (x->overflow) {
            /* We ended this stream early: on h2 curl 7.88 may leave other
             * streams' input parked behind it (see kill_connection). A
             * range answer longer than its range is a damaged transfer:
             * asked again, within the same retry budget. */
            v->err = VT_EPROTO;
            v->transient = x->hdr_status == 206;
            v->kill_conn = 1;
            snprintf(v->why, sizeof(v->why),
                     "response body larger than expected: more than %zu "
                     "bytes (status %ld%s%.80s)", x->len, x->hdr_status,
                     x->content_range ? ", Content-Range " : "",
                     x->content_range ? x->content_range : "");
            return;
        }
        v->err = VT_ENOMEM;
        v->transient = 0;
        break;
    case CURLE_OPERATION_TIMEDOUT:
        v->err = VT_ETIMEDOUT;
        v->kill_conn = 1;
        break;
    /* Failures to reach the server that another attempt a second later
     * cannot heal are not retried, as stock GDAL retries none of them
     * (cpl_http.cpp retries on statuses and on curl's words for a timeout
     * or a reset only): a name that does not resolve, a connection refused
     * or unreachable, a TLS handshake the server does not speak or a
     * certificate not trusted (default below). A connect or handshake that
     * timed out or was reset is retried. */
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        v->err = VT_ENETWORK;
        v->transient = 0;
        v->cause = rc == CURLE_COULDNT_RESOLVE_HOST
                       ? "the host name does not resolve"
                       : "the proxy name does not resolve";
        break;
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
        v->err = VT_ENETWORK;
        v->transient = vt__net_words_transient(x->errbuf);
        if (!v->transient)
            v->cause = rc == CURLE_COULDNT_CONNECT
                           ? "the server cannot be connected to"
                           : "the TLS handshake failed";
        break;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_AGAIN:
        v->err = VT_ETRANSIENT;
        break;
    case CURLE_OUT_OF_MEMORY:
        v->err = VT_ENOMEM;
        v->transient = 0;
        break;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        v->err = VT_EINVAL;
        v->transient = 0;
        break;
    default: /* certificate problems and the like: retrying won't help */
        v->err = VT_ENETWORK;
        v->transient = 0;
        v->cause = "a TLS or transport error";
        break;
    }
    snprintf(v->why, sizeof(v->why), "%s", x->errbuf[0] ? x->errbuf
                                                         : curl_easy_strerror(rc));
}

void vt__eng_judge_status(struct vt_eng_xfer *x, struct vt_eng_verdict *v)
{
    long st = x->hdr_status;
    vt_content_range cr;
    int is_head = x->req->method && strcmp(x->req->method, "HEAD") == 0;

    v->err = VT_OK;
    v->transient = 0;
    if (vt__status_is_transient(st) ||
        (st >= 400 && x->req->answer_transient &&
         x->req->answer_transient(st, x->buf, x->len))) {
        v->err = VT_ETRANSIENT;
        v->transient = 1;
        snprintf(v->why, sizeof(v->why), "HTTP %ld", st);
        return;
    }
    if (st < 200 || st >= 300 || is_head)
        return;
    if (x->content_length >= 0 && (long long)x->len < x->content_length) {
        v->err = VT_EPROTO;
        v->transient = 1;
        snprintf(v->why, sizeof(v->why),
                 "truncated body: %zu of %lld bytes (Content-Length)", x->len,
                 x->content_length);
        return;
    }
    if (st != 206)
        return;
    if (!x->content_range && x->has_req_range &&
        (uint64_t)x->len == x->req_last - x->req_first + 1 &&
        (!x->req->expect_len || x->req->expect_len == (uint64_t)x->len)) {
        /* A 206 without Content-Range (a sloppy server or proxy; stock GDAL
         * reads through it): its bytes are the range asked, proven by a body
         * exactly that long. No total is claimed (a first answer is then
         * settled by a HEAD: object.c). Any other length cannot be placed:
         * asked again, below. */
        x->range_assumed = 1;
        return;
    }
    if (!x->content_range ||
        vt__parse_content_range(x->content_range, &cr) != VT_OK ||
        !cr.has_range) {
        v->err = VT_EPROTO;
        v->transient = 1; /* one garbled header: ask again */
        snprintf(v->why, sizeof(v->why), "206 with bad Content-Range: %.120s",
                 x->content_range ? x->content_range : "(none)");
        return;
    }
    if ((uint64_t)x->len != cr.last - cr.first + 1) {
        v->err = VT_EPROTO;
        v->transient = 1; /* a stream cut short that curl called complete */
        snprintf(v->why, sizeof(v->why),
                 "truncated body: %zu bytes for Content-Range %.80s", x->len,
                 x->content_range);
        return;
    }
    /* engine.h: a 206 whose body fills its own Content-Range is kept even
     * when that span is shorter than asked (the object's end, or a server
     * capping range lengths: stock GDAL reads on from what came; the
     * caller asks for the rest). Another start than asked, or more than
     * asked, is a damaged transfer and retried. */
    uint64_t got = cr.last - cr.first + 1;
    if ((x->req->expect_len && got > x->req->expect_len) ||
        (x->has_req_range && cr.first != x->req_first)) {
        v->err = VT_EPROTO;
        v->transient = 1;
        snprintf(v->why, sizeof(v->why),
                 "Content-Range %.80s does not match the requested range",
                 x->content_range);
    }
}
