/* test_engine.c: the engine's contract (engine.h, engine.c + engine_io.c)
 * against a loopback HTTP/1.1 server this test runs in its own threads
 * (http_lab.h). The server logs every request it receives; the tests judge what it saw, not
 * what the engine says it did: one request per perform, the caller's headers
 * on the wire, a transient status or a cut body re-sent (and a 404 not),
 * concurrent requests each answered with their own bytes, a connection
 * refused reported with no status, and a request after shutdown starting the
 * engine again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cpl_vsi.h>

#include "compat/gdal_release.h"
#include "http/engine.h"
#include "http_lab.h"
#include "engine_lab.h"

#define OBJ_SIZE 1000000 /* larger than any one read buffer of the engine */

/* One request, by its path:
 *   /obj     206 of the Range asked (the whole object's bytes)
 *   /cut     the first time a 206 cut halfway, then as /obj
 *   /busy    the first time 503 SlowDown, then 200 "done"
 *   /missing 404 NoSuchKey
 * Returns -1 when the connection is to be closed. */
static int serve_one(int fd, const char *head)
{
    char line[256];
    uint64_t first, last;
    int before;

    snprintf(line, sizeof line, "%.*s", (int)strcspn(head, "\r"), head);
    lab_range(head, &first, &last);
    if (strncmp(line, "GET /cut ", 9) == 0) {
        before = log_request(head, "GET /cut ");
        return lab_answer_range(fd, first, last, OBJ_SIZE, before == 0);
    }
    if (strncmp(line, "GET /busy ", 10) == 0) {
        before = log_request(head, "GET /busy ");
        if (before == 0)
            return answer(fd, "503 Slow Down", "",
                          "<Error><Code>SlowDown</Code></Error>");
        return answer(fd, "200 OK", "ETag: \"b2\"\r\n", "done");
    }
    log_request(head, line);
    if (strncmp(line, "GET /obj ", 9) == 0)
        return lab_answer_range(fd, first, last, OBJ_SIZE, 0);
    return answer(fd, "404 Not Found", "",
                  "<Error><Code>NoSuchKey</Code><Message>gone</Message></Error>");
}

static int setup(void **state)
{
    (void)state;
    return lab_start(serve_one);
}

/* GET bytes [first, last] of path with one extra header line (or NULL);
 * checks it came back whole, byte for byte; the caller clears *resp. */
static void get_range(const char *path, uint64_t first, uint64_t last, const char *extra,
                      vt_http_resp *resp)
{
    char url[128], range[64];
    const char *hdrs[] = { range, extra, NULL };
    vt_http_req req;

    snprintf(range, sizeof range, "Range: bytes=%llu-%llu", (unsigned long long)first,
             (unsigned long long)last);
    lab_request(&req, url, sizeof url, path, hdrs);
    req.expect_len = last - first + 1;
    assert_int_equal(vt__engine_perform(&req, resp), VT_OK);
    assert_int_equal(resp->status, 206);
    assert_int_equal(resp->body_len, last - first + 1);
    for (size_t i = 0; i < resp->body_len; i++)
        if (resp->body[i] != lab_byte(first + i))
            fail_msg("byte %zu differs", i);
}

static void test_range_get_one_request(void **state)
{
    vt_http_resp resp;

    (void)state;
    get_range("/obj", 100, 299999, "X-Vt-Test: one", &resp);
    assert_true(resp.has_content_range);
    assert_int_equal(resp.range_first, 100);
    assert_int_equal(resp.range_last, 299999);
    assert_true(resp.has_total);
    assert_int_equal(resp.total_size, OBJ_SIZE);
    assert_string_equal(resp.etag, "\"e1\"");
    assert_int_equal(resp.last_modified, 1796119200LL); /* 2026-12-01T10:00:00Z */
    assert_int_equal(resp.attempts, 1);
    vt__http_resp_clear(&resp);
    /* The server saw it once, with the caller's headers. */
    assert_int_equal(seen("GET /obj ", "X-Vt-Test: one"), 1);
    assert_int_equal(seen("GET /obj ", "Range: bytes=100-299999"), 1);
}

static void test_cut_body_is_resent(void **state)
{
    vt_http_resp resp;

    (void)state;
    get_range("/cut", 0, 599999, NULL, &resp);
    assert_int_equal(resp.attempts, 2);
    vt__http_resp_clear(&resp);
    assert_int_equal(seen("GET /cut ", "Range: bytes=0-599999"), 2);
}

/* GET path without headers; it must come back VT_OK with status (the
 * caller maps 4xx). The caller clears *resp. */
static void get_plain(const char *path, long status, vt_http_resp *resp)
{
    char url[128];
    vt_http_req req;

    lab_request(&req, url, sizeof url, path, NULL);
    assert_int_equal(vt__engine_perform(&req, resp), VT_OK);
    assert_int_equal(resp->status, status);
}

static void test_transient_status_retried(void **state)
{
    vt_http_resp resp;

    (void)state;
    get_plain("/busy", 200, &resp);
    assert_int_equal(resp.body_len, 4);
    assert_memory_equal(resp.body, "done", 4);
    assert_int_equal(resp.attempts, 2);
    vt__http_resp_clear(&resp);
    assert_int_equal(seen("GET /busy ", NULL), 2);
}

static void test_not_found_not_retried(void **state)
{
    vt_http_resp resp;

    (void)state;
    get_plain("/missing", 404, &resp);
    assert_non_null(strstr((const char *)resp.body, "<Code>NoSuchKey</Code>"));
    assert_int_equal(resp.attempts, 1);
    vt__http_resp_clear(&resp);
    assert_int_equal(seen("GET /missing ", NULL), 1);
}

static void test_many_each_its_own_bytes(void **state)
{
    enum { N = 8, LEN = 65536 };
    char urls[N][128], ranges[N][64];
    const char *hdrs[N][2];
    vt_http_req reqs[N];
    vt_http_resp resps[N];
    vt_err errs[N];
    int before = seen("GET /obj ", NULL);

    (void)state;
    for (int i = 0; i < N; i++) {
        uint64_t first = (uint64_t)(N - 1 - i) * 100000;
        snprintf(ranges[i], sizeof ranges[i], "Range: bytes=%llu-%llu",
                 (unsigned long long)first, (unsigned long long)(first + LEN - 1));
        hdrs[i][0] = ranges[i];
        hdrs[i][1] = NULL;
        lab_request(&reqs[i], urls[i], sizeof urls[i], "/obj", hdrs[i]);
        reqs[i].expect_len = LEN;
    }
    assert_int_equal(vt__engine_perform_many(N, reqs, resps, errs), VT_OK);
    for (int i = 0; i < N; i++) {
        uint64_t first = (uint64_t)(N - 1 - i) * 100000;
        assert_int_equal(errs[i], VT_OK);
        assert_int_equal(resps[i].status, 206);
        assert_int_equal(resps[i].range_first, first);
        assert_int_equal(resps[i].body_len, LEN);
        assert_int_equal(resps[i].body[0], lab_byte(first));
        assert_int_equal(resps[i].body[LEN - 1], lab_byte(first + LEN - 1));
        vt__http_resp_clear(&resps[i]);
        assert_int_equal(seen("GET /obj ", ranges[i]), 1);
    }
    assert_int_equal(seen("GET /obj ", NULL) - before, N);
}

static void test_refused_has_no_status(void **state)
{
    struct sockaddr_in a = { .sin_family = AF_INET };
    socklen_t alen = sizeof a;
    char url[128];
    vt_http_req req;
    vt_http_resp resp;
    int fd = socket(AF_INET, SOCK_STREAM, 0), closed_port;

    (void)state;
    /* a port that was just ours and is no longer listened on */
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    closed_port = ntohs(a.sin_port);
    close(fd);
    lab_request(&req, url, sizeof url, "/obj", NULL);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/obj", closed_port);
    req.max_retries = 0;
    assert_int_not_equal(vt__engine_perform(&req, &resp), VT_OK);
    assert_int_equal(resp.status, 0);
    assert_true(resp.error[0] != '\0' || resp.cause[0] != '\0');
    vt__http_resp_clear(&resp);
}

static void test_restart_after_shutdown(void **state)
{
    vt_http_resp resp;
    vt_engine_stats st;

    (void)state;
    vt__engine_shutdown();
    vt__engine_shutdown(); /* idempotent */
    get_range("/obj", 0, 9, "X-Vt-Test: after-shutdown", &resp);
    vt__http_resp_clear(&resp);
    assert_int_equal(seen("GET /obj ", "X-Vt-Test: after-shutdown"), 1);
    vt__engine_get_stats(&st);
    assert_true(st.requests >= 1);
    assert_int_equal(st.in_flight, 0);
}

/* GDAL's HTTP options for the request's path (engine.h opts_path): from
 * GDAL 3.7 a path-specific GDAL_HTTP_PROXY sends that path's requests
 * through the proxy (here the lab itself, which then sees the absolute URL
 * on the request line) and no other path's; under 3.6's rules the
 * configuration alone counts. GDAL_HTTP_USERAGENT is read from the
 * configuration on every release, as GDAL reads it: a path-specific one is
 * never sent. */
static void test_options_per_path(void **state)
{
    static const int releases[] = {3060200, 3070000};
    char proxy[64], urls[2][128], tag[2][64];
    const char *hdrs[2][2];
    vt_http_req reqs[2];
    vt_http_resp resps[2];
    vt_err errs[2];

    (void)state;
    snprintf(proxy, sizeof proxy, "http://127.0.0.1:%d", port);
    VSISetPathSpecificOption("/vsis3/viaproxy", "GDAL_HTTP_PROXY", proxy);
    VSISetPathSpecificOption("/vsis3/viaproxy", "GDAL_HTTP_USERAGENT",
                             "path-agent");
    for (int r = 0; r < 2; r++) {
        vt__gdal_release_set(releases[r]);
        for (int i = 0; i < 2; i++) {
            snprintf(tag[i], sizeof tag[i], "X-Vt-Case: %d-%d", releases[r], i);
            hdrs[i][0] = tag[i];
            hdrs[i][1] = NULL;
            lab_request(&reqs[i], urls[i], sizeof urls[i], "/obj", hdrs[i]);
            reqs[i].max_retries = 0;
        }
        reqs[0].opts_path = "viaproxy/k.tif";
        reqs[1].opts_path = "direct/k.tif";
        vt__engine_perform_many(2, reqs, resps, errs);
        for (int i = 0; i < 2; i++)
            vt__http_resp_clear(&resps[i]);
        /* proxied: "GET http://127.0.0.1:port/obj", not "GET /obj" */
        assert_int_equal(seen("GET http://", tag[0]), r == 1);
        assert_int_equal(seen("GET /obj ", tag[0]), r == 0);
        assert_int_equal(seen("GET /obj ", tag[1]), 1);
        assert_int_equal(seen("GET http://", tag[1]), 0);
        assert_int_equal(seen("GET ", "path-agent"), 0);
        assert_int_equal(seen("GET ", tag[0]), 1);
    }
    vt__gdal_release_set(0);
    VSIClearPathSpecificOptions(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range_get_one_request),
        cmocka_unit_test(test_cut_body_is_resent),
        cmocka_unit_test(test_transient_status_retried),
        cmocka_unit_test(test_not_found_not_retried),
        cmocka_unit_test(test_many_each_its_own_bytes),
        cmocka_unit_test(test_refused_has_no_status),
        cmocka_unit_test(test_restart_after_shutdown),
        cmocka_unit_test(test_options_per_path),
    };
    return cmocka_run_group_tests(tests, setup, lab_engine_teardown);
}
