/* test_engine_xfer.c: unit tests of one transfer's response handling
 * (engine_xfer.c) without a network: header lines and body bytes are fed
 * to the same callbacks curl calls, then the verdict is checked. Covers what
 * the engine must never get wrong: a short body reported complete (curl 7.88
 * on a stream cut by RST/GOAWAY), a Content-Range that does not match the
 * request (but a range shorter than asked whose body fills it is fine), a body over its bound, transient statuses, and headers in any
 * case or repeated across 1xx responses. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "http/engine_int.h"

struct fixture {
    vt_http_req req;
    struct vt_eng_xfer x;
    const char *hdrs[4];
    char range[64];
};

/* A range GET of [first, last] expecting exactly that many bytes. */
static void setup_range(struct fixture *f, uint64_t first, uint64_t last)
{
    memset(f, 0, sizeof(*f));
    snprintf(f->range, sizeof(f->range), "Range: bytes=%llu-%llu",
             (unsigned long long)first, (unsigned long long)last);
    f->hdrs[0] = f->range;
    f->req.method = "GET";
    f->req.url = "https://example.invalid/b/k";
    f->req.headers = f->hdrs;
    f->req.expect_len = last - first + 1;
    f->x.req = &f->req;
    f->x.has_req_range = 1;
    f->x.req_first = first;
    f->x.req_last = last;
    f->x.content_length = -1;
}

static void teardown(struct fixture *f)
{
    vt__eng_reset_attempt(&f->x);
    vt__eng_body_free(f->x.buf, f->x.cap);
}

static void header(struct fixture *f, const char *line)
{
    size_t n = strlen(line);
    char *copy = malloc(n); /* not NUL-terminated, as curl passes it */

    assert_non_null(copy);
    memcpy(copy, line, n);
    assert_int_equal(vt__eng_on_header(copy, 1, n, &f->x), n);
    free(copy);
}

/* Feed n bytes of pattern; returns what the callback returned. */
static size_t body(struct fixture *f, size_t n)
{
    unsigned char *b = malloc(n ? n : 1);
    size_t r;

    assert_non_null(b);
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(f->x.len + i);
    r = vt__eng_on_write((char *)b, 1, n, &f->x);
    free(b);
    return r;
}

static void judge(struct fixture *f, struct vt_eng_verdict *v)
{
    memset(v, 0, sizeof(*v));
    vt__eng_judge_status(&f->x, v);
}

static void good_206(void **state)
{
    struct fixture f;
    struct vt_eng_verdict v;

    setup_range(&f, 100, 199);
    header(&f, "HTTP/2 206 \r\n");
    header(&f, "content-range: bytes 100-199/5000\r\n");
    header(&f, "Content-Length: 100\r\n");
    header(&f, "ETag:   \"abc\"  \r\n");
    header(&f, "X-Amz-Bucket-Region: eu-west-3\r\n");
    header(&f, "\r\n");
    assert_int_equal(body(&f, 60), 60);
    assert_int_equal(body(&f, 40), 40);
    judge(&f, &v);
    assert_int_equal(v.err, VT_OK);
    assert_int_equal(f.x.len, 100);
    for (size_t i = 0; i < 100; i++)
        assert_int_equal(f.x.buf[i], (unsigned char)i);
    assert_string_equal(f.x.etag, "\"abc\"");
    assert_string_equal(f.x.region, "eu-west-3");
    assert_int_equal(f.x.content_length, 100);
    teardown(&f);
}

static void short_body_is_transient(void **state)
{
    struct fixture f;
    struct vt_eng_verdict v;

    /* Content-Range promises 100 bytes; the stream ended after 64 and
     * carried no Content-Length (h2 may omit it). */
    setup_range(&f, 0, 99);
    header(&f, "HTTP/2 206\r\n");
    header(&f, "Content-Range: bytes 0-99/1000\r\n");
    body(&f, 64);
    judge(&f, &v);
    assert_int_equal(v.err, VT_EPROTO);
    assert_true(v.transient);
    assert_non_null(strstr(v.why, "truncated"));
    teardown(&f);

    /* Same with Content-Length: the length check catches it first. */
    setup_range(&f, 0, 99);
    header(&f, "HTTP/1.1 206 Partial Content\r\n");
    header(&f, "Content-Range: bytes 0-99/1000\r\n");
    header(&f, "Content-Length: 100\r\n");
    body(&f, 99);
    judge(&f, &v);
    assert_int_equal(v.err, VT_EPROTO);
    assert_true(v.transient);
    teardown(&f);

    /* A 200 cut short against its Content-Length. */
    setup_range(&f, 0, 99);
    f.x.has_req_range = 0;
    f.req.expect_len = 0;
    header(&f, "HTTP/1.1 200 OK\r\n");
    header(&f, "Content-Length: 5000\r\n");
    body(&f, 4096);
    judge(&f, &v);
    assert_int_equal(v.err, VT_EPROTO);
    assert_true(v.transient);
    teardown(&f);
}

static void range_checks(void **state)
{
    struct fixture f;
    struct vt_eng_verdict v;

    /* The server answered another range than asked: damaged, retried. */
    setup_range(&f, 100, 199);
    header(&f, "HTTP/2 206\r\n");
    header(&f, "Content-Range: bytes 0-99/1000\r\n");
    body(&f, 100);
    judge(&f, &v);
    assert_int_equal(v.err, VT_EPROTO);
    assert_true(v.transient);
    teardown(&f);

    /* Shorter than asked, not at the end of the object, the body filling
     * its Content-Range: a server capping range lengths (issue 20); kept,
     * the caller asks for the rest. */
    setup_range(&f, 100, 199);
    header(&f, "HTTP/2 206\r\n");
    header(&f, "Content-Range: bytes 100-149/1000\r\n");
    body(&f, 50);
    judge(&f, &v);
    assert_int_equal(v.err, VT_OK);
    assert_int_equal(f.x.len, 50);
    teardown(&f);

    /* ... but a span longer than asked is damaged: retried. */
    setup_range(&f, 100, 199);
    header(&f, "HTTP/2 206\r\n");
    header(&f, "Content-Range: bytes 100-249/1000\r\n");
    body(&f, 100);
    judge(&f, &v);
    assert_int_equal(v.err, VT_EPROTO);
    assert_true(v.transient);
    teardown(&f);

    /* A range past the end, clipped by the server at the object's end: the
     * bytes that exist, not an error (engine.h). */
    setup_range(&f, 900, 1099);
    header(&f, "HTTP/2 206\r\n");
    header(&f, "Content-Range: bytes 900-999/1000\r\n");
    body(&f, 100);
    judge(&f, &v);
    assert_int_equal(v.err, VT_OK);
    assert_int_equal(f.x.len, 100);
    teardown(&f);

    /* ... and with no total: the bytes of its range (no size is taken
     * from it: object_header.c asks a HEAD). */
    setup_range(&f, 900, 1099);
    header(&f, "HTTP/2 206\r\n");
    header(&f, "Content-Range: bytes 900-999/*\r\n");
    body(&f, 100);
    judge(&f, &v);
    assert_int_equal(v.err, VT_OK);
    teardown(&f);

    /* 206 without Content-Range (issue 18, item 8): the range asked when
     * the body is exactly that long, as stock GDAL takes it ... */
    setup_range(&f, 100, 109);
    header(&f, "HTTP/1.1 206 Partial Content\r\n");
    header(&f, "Content-Length: 10\r\n");
    body(&f, 10);
    judge(&f, &v);
    assert_int_equal(v.err, VT_OK);
    assert_true(f.x.range_assumed);
    teardown(&f);

    /* ... any other length cannot be placed: asked again within the retry
     * budget, as a garbled Content-Range is (issue 13). */
    setup_range(&f, 0, 9);
    header(&f, "HTTP/2 206\r\n");
    body(&f, 9);
    judge(&f, &v);
    assert_int_equal(v.err, VT_EPROTO);
    assert_true(v.transient);
    assert_false(f.x.range_assumed);
    assert_non_null(strstr(v.why, "(none)"));
    teardown(&f);

    setup_range(&f, 0, 9);
    header(&f, "HTTP/2 206\r\n");
    header(&f, "Content-Range: bytes 0-9/5 \r\n");
    body(&f, 10);
    judge(&f, &v);
    assert_int_equal(v.err, VT_EPROTO);
    assert_true(v.transient);
    assert_non_null(strstr(v.why, "bytes 0-9/5")); /* the bad value, shown */
    teardown(&f);
}

static void body_over_bound(void **state)
{
    struct fixture f;
    struct vt_eng_verdict v;

    /* A 206 longer than the exact length asked: the callback refuses. */
    setup_range(&f, 0, 99);
    header(&f, "HTTP/2 206\r\n");
    header(&f, "Content-Range: bytes 0-99/1000\r\n");
    assert_int_equal(body(&f, 80), 80);
    assert_int_equal(body(&f, 80), 0);
    assert_true(f.x.overflow);
    memset(&v, 0, sizeof(v));
    vt__eng_judge_curl(CURLE_WRITE_ERROR, &f.x, &v);
    assert_int_equal(v.err, VT_EPROTO);
    assert_true(v.transient); /* a damaged transfer: asked again */
    assert_true(v.kill_conn);
    assert_non_null(strstr(v.why, "larger than expected"));
    assert_non_null(strstr(v.why, "bytes 0-99/1000"));
    teardown(&f);

    /* max_body bounds a 200. */
    setup_range(&f, 0, 99);
    f.req.max_body = 1000;
    header(&f, "HTTP/1.1 200 OK\r\n");
    assert_int_equal(body(&f, 1000), 1000);
    assert_int_equal(body(&f, 1), 0);
    teardown(&f);

    /* An error document is cut at the bound, not failed. */
    setup_range(&f, 0, 99);
    f.req.max_body = 1000;
    header(&f, "HTTP/1.1 403 Forbidden\r\n");
    assert_int_equal(body(&f, 700), 700);
    assert_int_equal(body(&f, 700), 700);
    assert_int_equal(f.x.len, 1000);
    assert_false(f.x.overflow);
    teardown(&f);
}

/* A service's judge of its error answers (vt_http_req.answer_transient):
 * this one calls a 400 whose body says "again" transient. */
static int judge_again(long status, const unsigned char *body, size_t len)
{
    return status == 400 && body && len >= 5 && memcmp(body, "again", 5) == 0;
}

static void statuses(void **state)
{
    static const long transient[] = {429, 500, 502, 503, 504};
    static const long answers[] = {301, 400, 403, 404, 412, 416};
    struct fixture f;
    struct vt_eng_verdict v;
    char line[64];

    for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++) {
        setup_range(&f, 0, 9);
        snprintf(line, sizeof(line), "HTTP/1.1 %ld Whatever\r\n", transient[i]);
        header(&f, line);
        header(&f, "Retry-After: 3\r\n");
        body(&f, 20);
        judge(&f, &v);
        assert_int_equal(v.err, VT_ETRANSIENT);
        assert_true(v.transient);
        assert_string_equal(f.x.retry_after, "3");
        teardown(&f);
    }
    /* An error answer the request's service calls transient is worth
     * asking again (S3's 400 RequestTimeout: test_s3.c); others, and every
     * answer of a request without a judge, are not: the engine knows no
     * service's words. */
    {
        static const char again[] = "again, please";
        static const char bad[] = "<Error><Code>InvalidArgument</Code></Error>";
        setup_range(&f, 0, 9);
        f.req.answer_transient = judge_again;
        header(&f, "HTTP/1.1 400 Bad Request\r\n");
        assert_int_equal(vt__eng_on_write((char *)again, 1, sizeof(again) - 1,
                                          &f.x),
                         sizeof(again) - 1);
        judge(&f, &v);
        assert_int_equal(v.err, VT_ETRANSIENT);
        assert_true(v.transient);
        teardown(&f);
        setup_range(&f, 0, 9);
        f.req.answer_transient = judge_again;
        header(&f, "HTTP/1.1 400 Bad Request\r\n");
        vt__eng_on_write((char *)bad, 1, sizeof(bad) - 1, &f.x);
        judge(&f, &v);
        assert_int_equal(v.err, VT_OK);
        teardown(&f);
        setup_range(&f, 0, 9);
        header(&f, "HTTP/1.1 400 Bad Request\r\n");
        vt__eng_on_write((char *)again, 1, sizeof(again) - 1, &f.x);
        judge(&f, &v);
        assert_int_equal(v.err, VT_OK);
        assert_false(v.transient);
        teardown(&f);
    }
    /* Other statuses are answers for the caller to map. */
    for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
        setup_range(&f, 0, 9);
        snprintf(line, sizeof(line), "HTTP/2 %ld\r\n", answers[i]);
        header(&f, line);
        body(&f, 20);
        judge(&f, &v);
        assert_int_equal(v.err, VT_OK);
        assert_false(v.transient);
        teardown(&f);
    }
}

static void status_line_resets_headers(void **state)
{
    struct fixture f;
    struct vt_eng_verdict v;

    /* Headers of a 100 Continue do not leak into the final response. */
    setup_range(&f, 0, 9);
    header(&f, "HTTP/1.1 100 Continue\r\n");
    header(&f, "ETag: \"interim\"\r\n");
    header(&f, "Retry-After: 9\r\n");
    header(&f, "\r\n");
    header(&f, "HTTP/1.1 206 Partial Content\r\n");
    header(&f, "CONTENT-RANGE: bytes 0-9/10\r\n");
    header(&f, "no colon here\r\n");
    header(&f, "Content-Length: 10 trailing\r\n"); /* unparsable: ignored */
    body(&f, 10);
    judge(&f, &v);
    assert_int_equal(v.err, VT_OK);
    assert_null(f.x.etag);
    assert_null(f.x.retry_after);
    assert_int_equal(f.x.hdr_status, 206);
    assert_int_equal(f.x.content_length, -1);
    teardown(&f);
}

/* curl hands header lines over as len bytes, not NUL-terminated: nothing
 * past len is read. Bytes past len are made digits here, so a parse that
 * ran over would see another status or length (ASan sees the same bug as a
 * heap-buffer-overflow when the line is its own allocation). */
static void header_n(struct fixture *f, const char *bytes, size_t len)
{
    char *copy = malloc(strlen(bytes) + 1);

    assert_non_null(copy);
    memcpy(copy, bytes, strlen(bytes) + 1);
    assert_int_equal(vt__eng_on_header(copy, 1, len, &f->x), len);
    free(copy);
}

static void headers_read_within_their_length(void **state)
{
    struct fixture f;
    struct vt_eng_verdict v;

    (void)state;
    setup_range(&f, 0, 9);
    header_n(&f, "HTTP/1.1 2069999\r\n", strlen("HTTP/1.1 206"));
    assert_int_equal(f.x.hdr_status, 206);
    header_n(&f, "Content-Length: 1099\r\n", strlen("Content-Length: 10"));
    assert_int_equal(f.x.content_length, 10);
    header(&f, "Content-Range: bytes 0-9/10\r\n");
    body(&f, 10);
    judge(&f, &v);
    assert_int_equal(v.err, VT_OK);
    teardown(&f);

    /* A status line cut inside its code is no status. */
    setup_range(&f, 0, 9);
    header_n(&f, "HTTP/1.1 200", strlen("HTTP/1.1 20"));
    assert_int_equal(f.x.hdr_status, 0);
    header_n(&f, "HTTP/2", 6);
    assert_int_equal(f.x.hdr_status, 0);
    teardown(&f);
}

/* Content-Length values a sloppy server sends: one past 2^63 is no length
 * (not 2^63-1, which made every body "truncated"); a value repeated by a
 * proxy is that value; garbage is no length. */
static void content_length_values(void **state)
{
    static const struct {
        const char *line;
        long long want;
    } cases[] = {
        {"Content-Length: 100\r\n", 100},
        {"Content-Length:100", 100},
        {"content-length: 100, 100\r\n", 100},
        {"Content-Length: 100, 99\r\n", -1},
        {"Content-Length: 9223372036854775807\r\n", 9223372036854775807LL},
        {"Content-Length: 9223372036854775808\r\n", -1},
        {"Content-Length: 99999999999999999999999999\r\n", -1},
        {"Content-Length: -1\r\n", -1},
        {"Content-Length: 0x10\r\n", -1},
        {"Content-Length: \r\n", -1},
    };
    struct fixture f;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        setup_range(&f, 0, 99);
        header(&f, "HTTP/1.1 206 Partial Content\r\n");
        header(&f, cases[i].line);
        assert_int_equal(f.x.content_length, cases[i].want);
        teardown(&f);
    }
}

static void curl_errors(void **state)
{
    static const struct {
        CURLcode rc;
        vt_err err;
        int transient;
    } cases[] = {
        {CURLE_OPERATION_TIMEDOUT, VT_ETIMEDOUT, 1},
        {CURLE_COULDNT_CONNECT, VT_ENETWORK, 0},
        {CURLE_COULDNT_RESOLVE_HOST, VT_ENETWORK, 0},
        {CURLE_COULDNT_RESOLVE_PROXY, VT_ENETWORK, 0},
        {CURLE_SSL_CONNECT_ERROR, VT_ENETWORK, 0},
        {CURLE_RECV_ERROR, VT_ETRANSIENT, 1},
        {CURLE_PARTIAL_FILE, VT_ETRANSIENT, 1},
        {CURLE_HTTP2_STREAM, VT_ETRANSIENT, 1},
        {CURLE_GOT_NOTHING, VT_ETRANSIENT, 1},
        {CURLE_PEER_FAILED_VERIFICATION, VT_ENETWORK, 0},
        {CURLE_SSL_CACERT_BADFILE, VT_ENETWORK, 0},
        {CURLE_URL_MALFORMAT, VT_EINVAL, 0},
        {CURLE_UNSUPPORTED_PROTOCOL, VT_EINVAL, 0},
    };
    struct fixture f;
    struct vt_eng_verdict v;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        setup_range(&f, 0, 9);
        memset(&v, 0, sizeof(v));
        vt__eng_judge_curl(cases[i].rc, &f.x, &v);
        assert_int_equal(v.err, cases[i].err);
        assert_int_equal(v.transient, cases[i].transient);
        assert_true(v.why[0] != '\0');
        /* a failure not retried says why */
        if (cases[i].err == VT_ENETWORK)
            assert_non_null(v.cause);
        /* only a timeout (or our own abort) retires the connection */
        assert_int_equal(v.kill_conn, cases[i].rc == CURLE_OPERATION_TIMEDOUT);
        teardown(&f);
    }
}

/* A connect or TLS handshake that timed out or was reset may heal: retried,
 * as stock GDAL retries curl's words for those; refused, unreachable or a
 * server that does not speak TLS cannot. */
static void connect_failures_by_words(void **state)
{
    static const struct {
        CURLcode rc;
        const char *words;
        int transient;
    } cases[] = {
        {CURLE_COULDNT_CONNECT, "Failed to connect to 10.0.0.1 port 80 after "
         "129000 ms: Connection timed out", 1},
        {CURLE_COULDNT_CONNECT, "Failed to connect to 127.0.0.1 port 1 after "
         "0 ms: Couldn't connect to server", 0},
        {CURLE_COULDNT_CONNECT, "Failed to connect to 127.0.0.1 port 1 after "
         "0 ms: Connection refused", 0},
        {CURLE_COULDNT_CONNECT, "Failed to connect to 10.9.9.9 port 443 after "
         "3 ms: Network is unreachable", 0},
        {CURLE_SSL_CONNECT_ERROR, "error:0A00010B:SSL routines::wrong version "
         "number", 0},
        {CURLE_SSL_CONNECT_ERROR, "OpenSSL SSL_connect: Connection reset by "
         "peer in connection to s3.amazonaws.com:443", 1},
        {CURLE_SSL_CONNECT_ERROR, "SSL connection timeout", 1},
    };
    struct fixture f;
    struct vt_eng_verdict v;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        setup_range(&f, 0, 9);
        snprintf(f.x.errbuf, sizeof(f.x.errbuf), "%s", cases[i].words);
        memset(&v, 0, sizeof(v));
        vt__eng_judge_curl(cases[i].rc, &f.x, &v);
        assert_int_equal(v.err, VT_ENETWORK);
        assert_int_equal(v.transient, cases[i].transient);
        assert_string_equal(v.why, cases[i].words);
        teardown(&f);
    }
}

/* A 206 of 100 bytes, all arrived, its stream still open, in a receive
 * buffer of bufsize; the first progress call after the body started the
 * grace (engine eng, zeroed, is told when to look again). */
static void whole_body_open_stream(struct fixture *f, struct vt_engine *eng,
                                   long bufsize)
{
    memset(eng, 0, sizeof(*eng));
    setup_range(f, 0, 99);
    f->x.eng = eng;
    f->x.bufsize = bufsize;
    header(f, "HTTP/2 206\r\n");
    header(f, "content-range: bytes 0-99/1000\r\n");
    body(f, 100);
    assert_int_equal(vt__eng_on_progress(&f->x, 0, 100, 0, 0), 0);
    assert_true(f->x.body_done_at > 0);
}

/* An h2 stream that delivered every byte it announced but never ended:
 * after a grace period the progress callback ends it, and the answer is
 * judged complete. The connection is retired only when the body did not fit
 * the transfer's receive buffer (input may be parked behind its stream);
 * one that fit resets its stream only, after a short grace for which the
 * I/O loop is told to wake. */
static void body_done_without_end_stream(void **state)
{
    struct fixture f;
    struct vt_eng_verdict v;

    setup_range(&f, 0, 99);
    header(&f, "HTTP/2 206\r\n");
    header(&f, "content-range: bytes 0-99/1000\r\n");
    header(&f, "content-length: 100\r\n");
    body(&f, 60);
    assert_int_equal(vt__eng_on_progress(&f.x, 0, 60, 0, 0), 0);
    assert_true(f.x.body_done_at == 0); /* not all there yet */
    body(&f, 40);
    assert_int_equal(vt__eng_on_progress(&f.x, 0, 100, 0, 0), 0);
    assert_true(f.x.body_done_at > 0);  /* all there: the grace starts */
    f.x.body_done_at -= 10;             /* ... and has passed */
    assert_int_equal(vt__eng_on_progress(&f.x, 0, 100, 0, 0), 1);
    memset(&v, 0, sizeof(v));
    vt__eng_judge_curl(CURLE_ABORTED_BY_CALLBACK, &f.x, &v);
    assert_int_equal(v.err, VT_OK);
    assert_true(v.kill_conn); /* no receive buffer given: it did not fit */
    teardown(&f);

    /* The same body in a receive buffer that holds it. */
    {
        struct vt_engine eng;

        whole_body_open_stream(&f, &eng, 16384);
        /* the loop wakes at the end of a grace well under a second */
        assert_true(eng.end_check_at > f.x.body_done_at);
        assert_true(eng.end_check_at - f.x.body_done_at < 0.5);
        f.x.body_done_at -= 1; /* a second later: the grace has passed */
        assert_int_equal(vt__eng_on_progress(&f.x, 0, 100, 0, 0), 1);
        memset(&v, 0, sizeof(v));
        vt__eng_judge_curl(CURLE_ABORTED_BY_CALLBACK, &f.x, &v);
        assert_int_equal(v.err, VT_OK);
        assert_false(v.kill_conn);
        teardown(&f);

        /* A body bigger than its buffer waits at least half a second, then
         * retires the connection. */
        whole_body_open_stream(&f, &eng, 64);
        f.x.body_done_at -= 0.2;
        assert_int_equal(vt__eng_on_progress(&f.x, 0, 100, 0, 0), 0);
        assert_true(eng.end_check_at - f.x.body_done_at >= 0.5);
        f.x.body_done_at -= 10;
        assert_int_equal(vt__eng_on_progress(&f.x, 0, 100, 0, 0), 1);
        memset(&v, 0, sizeof(v));
        vt__eng_judge_curl(CURLE_ABORTED_BY_CALLBACK, &f.x, &v);
        assert_int_equal(v.err, VT_OK);
        assert_true(v.kill_conn);
        teardown(&f);
    }

    /* An abort for any other reason is not an answer. */
    setup_range(&f, 0, 99);
    header(&f, "HTTP/2 206\r\n");
    header(&f, "content-range: bytes 0-99/1000\r\n");
    body(&f, 50);
    memset(&v, 0, sizeof(v));
    vt__eng_judge_curl(CURLE_ABORTED_BY_CALLBACK, &f.x, &v);
    assert_int_not_equal(v.err, VT_OK);
    teardown(&f);

    /* An error status never counts as a finished body. */
    setup_range(&f, 0, 99);
    header(&f, "HTTP/2 503\r\n");
    header(&f, "content-length: 10\r\n");
    body(&f, 10);
    f.x.body_done_at = 1;
    assert_int_equal(vt__eng_on_progress(&f.x, 0, 10, 0, 0), 0);
    teardown(&f);
}

/* Is the page at p mapped in this process? mincore() fails with ENOMEM on
 * an address no mapping holds. */
static int page_mapped(const void *p)
{
    long pg = sysconf(_SC_PAGESIZE);
    unsigned char vec;
    void *at = (void *)((uintptr_t)p / (uintptr_t)pg * (uintptr_t)pg);

    if (mincore(at, (size_t)pg, &vec) == 0)
        return 1;
    assert_int_equal(errno, ENOMEM);
    return 0;
}

/* A body of 64 KiB or more lives in pages of its own, which go back to the
 * kernel when it is freed: none stays behind as slack in a malloc arena
 * (below glibc's mmap threshold, 128 KiB by default and raised by every
 * large free, malloc would have kept this 100 KiB body in one). The bytes
 * survive the move from malloc'd to mapped as the body grows past 64 KiB
 * (a response without a known length grows from 16 KiB). */
static void large_body_in_own_pages(void **state)
{
    struct fixture f;
    const size_t n = 100 * 1024;
    long pg = sysconf(_SC_PAGESIZE);
    unsigned char *at;

    (void)state;
    setup_range(&f, 0, n - 1);
    f.req.expect_len = 0; /* grow as bytes come: 16 KiB, then doubling */
    header(&f, "HTTP/1.1 206 Partial Content\r\n");
    for (size_t done = 0; done < n; done += 4096)
        assert_int_equal(body(&f, 4096), 4096);
    assert_int_equal(f.x.len, n);
    assert_true(f.x.cap >= n + 1);
    for (size_t i = 0; i < n; i++)
        if (f.x.buf[i] != (unsigned char)i)
            fail_msg("byte %zu changed when the body grew", i);
    /* mmap'd: page-aligned, as no malloc'd chunk (a header precedes it) is */
    assert_int_equal((uintptr_t)f.x.buf % (uintptr_t)pg, 0);
    at = f.x.buf + n / 2;
    assert_true(page_mapped(at));
    vt__eng_body_free(f.x.buf, f.x.cap);
    f.x.buf = NULL;
    f.x.cap = 0;
    assert_false(page_mapped(at));
    teardown(&f);

    /* A small body stays malloc'd (freed by the same call). */
    setup_range(&f, 0, 99);
    header(&f, "HTTP/1.1 206 Partial Content\r\n");
    assert_int_equal(body(&f, 100), 100);
    assert_true(f.x.cap < VT_BODY_PAGES_MIN);
    teardown(&f);
}

static int page_resident(const void *p)
{
    unsigned char vec = 0;

    assert_int_equal(mincore((void *)p, (size_t)sysconf(_SC_PAGESIZE), &vec),
                     0);
    return vec & 1;
}

/* vt__http_resp_body_done gives a large body's pages back as its bytes are
 * taken (the cache copies a GET block by block): whole pages of the prefix
 * only, the rest untouched; a small (malloc'd) body is left alone. */
static void body_done_gives_pages_back(void **state)
{
    vt_http_resp r;
    const size_t n = 1024 * 1024;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), i;

    (void)state;
    memset(&r, 0, sizeof(r));
    assert_int_equal(vt__http_resp_reserve(&r, n + 1), VT_OK);
    assert_true(r.body_cap >= VT_BODY_PAGES_MIN);
    for (i = 0; i < n; i++)
        r.body[i] = (unsigned char)(i * 7);
    r.body_len = n;
    assert_true(page_resident(r.body));

    /* block by block (16 KiB): nothing goes back under VT_BODY_DROP_MIN, one
     * madvise (a TLB shootdown on every CPU the process runs on) per 128 KiB */
    for (i = 16384; i < VT_BODY_DROP_MIN; i += 16384) {
        vt__http_resp_body_done(&r, i);
        assert_int_equal(r.body_done, 0);
    }
    assert_true(page_resident(r.body));
    vt__http_resp_body_done(&r, VT_BODY_DROP_MIN);
    assert_int_equal(r.body_done, VT_BODY_DROP_MIN);
    assert_false(page_resident(r.body));
    vt__http_resp_body_done(&r, VT_BODY_DROP_MIN + 16384); /* a block more: kept */
    assert_int_equal(r.body_done, VT_BODY_DROP_MIN);
    assert_true(page_resident(r.body + VT_BODY_DROP_MIN));

    vt__http_resp_body_done(&r, 300000);
    assert_int_equal(r.body_done, 300000 / pg * pg);
    assert_false(page_resident(r.body));
    assert_false(page_resident(r.body + r.body_done - pg));
    for (i = r.body_done; i < n; i++)
        if (r.body[i] != (unsigned char)(i * 7))
            fail_msg("byte %zu past what was given back changed", i);
    vt__http_resp_body_done(&r, 1000); /* behind: nothing more */
    assert_int_equal(r.body_done, 300000 / pg * pg);
    vt__http_resp_body_done(&r, n + 1); /* past the body: refused */
    assert_int_equal(r.body_done, 300000 / pg * pg);
    vt__http_resp_body_done(&r, n);
    assert_int_equal(r.body_done, n / pg * pg);
    vt__http_resp_clear(&r);
    assert_null(r.body);

    memset(&r, 0, sizeof(r));
    assert_int_equal(vt__http_resp_reserve(&r, 101), VT_OK);
    assert_true(r.body_cap < VT_BODY_PAGES_MIN);
    memset(r.body, 'x', 100);
    r.body_len = 100;
    vt__http_resp_body_done(&r, 100);
    assert_int_equal(r.body_done, 0);
    assert_int_equal(r.body[99], 'x');
    vt__http_resp_clear(&r);
}

/* vt__http_resp_reserve grows a response's body keeping its bytes, from a
 * malloc'd one (a test's, body_cap 0) or the engine's, across 64 KiB; the
 * grown body is freed by vt__http_resp_clear. */
static void resp_reserve_keeps_bytes(void **state)
{
    vt_http_resp r;
    const size_t n = 200 * 1024;

    (void)state;
    memset(&r, 0, sizeof(r));
    r.body = malloc(1000);
    assert_non_null(r.body);
    for (size_t i = 0; i < 1000; i++)
        r.body[i] = (unsigned char)(i * 7);
    r.body_len = 1000;
    assert_int_equal(vt__http_resp_reserve(&r, 5000), VT_OK); /* test's malloc */
    assert_int_equal(vt__http_resp_reserve(&r, 30000), VT_OK);
    r.body_cap = 30000; /* now as the engine keeps a malloc'd one */
    assert_int_equal(vt__http_resp_reserve(&r, n + 1), VT_OK);
    assert_true(r.body_cap >= n + 1);
    for (size_t i = 0; i < 1000; i++)
        if (r.body[i] != (unsigned char)(i * 7))
            fail_msg("byte %zu lost by reserve", i);
    memset(r.body + 1000, 0xab, n - 1000); /* all of it writable */
    r.body_len = n;
    assert_int_equal(vt__http_resp_reserve(&r, 10), VT_OK); /* no shrink */
    assert_int_equal(r.body[n - 1], 0xab);
    vt__http_resp_clear(&r);
    assert_null(r.body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_206),
        cmocka_unit_test(short_body_is_transient),
        cmocka_unit_test(range_checks),
        cmocka_unit_test(body_over_bound),
        cmocka_unit_test(statuses),
        cmocka_unit_test(status_line_resets_headers),
        cmocka_unit_test(headers_read_within_their_length),
        cmocka_unit_test(content_length_values),
        cmocka_unit_test(curl_errors),
        cmocka_unit_test(connect_failures_by_words),
        cmocka_unit_test(body_done_without_end_stream),
        cmocka_unit_test(large_body_in_own_pages),
        cmocka_unit_test(resp_reserve_keeps_bytes),
        cmocka_unit_test(body_done_gives_pages_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
