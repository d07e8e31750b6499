/* test_engine_easy.c: an attempt's easy handle (http/engine_easy.c).
 *
 * The receive buffer: curl's default 16 KiB for a request of unknown
 * length, else the next power of two holding the body and 1 KiB more, the
 * expected length before the Range asked, never past 1 MiB. The pool: only
 * handles with the default buffer come back (the same handle), at most 32
 * are kept, the rest are freed. The options, judged by what a loopback
 * server (http_lab.h) received through the engine: each method as its own
 * request line (GET, HEAD, POST and PUT with their body's length, another
 * method as itself), the request's header lines, GDAL_HTTP_USERAGENT, and a
 * range larger than every buffer (curl's, the 1 MiB receive buffer) back
 * whole in one request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/engine_int.h"
#include "http_lab.h"
#include "engine_lab.h"

#define OBJ_SIZE 5000000ULL
#define POOL 32 /* engine_int.h's free_easy[] */

/* GET /obj: 206 of the range asked; any other method: an empty 200, the
 * connection closed (a body the server did not read stays behind it). */
static int serve_one(int fd, const char *head)
{
    char line[256];
    uint64_t first, last;

    lab_begin(head, line, sizeof line, &first, &last);
    if (strncmp(line, "GET /obj ", 9) == 0)
        return lab_answer_range(fd, first, last, OBJ_SIZE, 0);
    if (strncmp(line, "HEAD ", 5) == 0)
        return answer(fd, "200 OK", "", "");
    answer(fd, "200 OK", "Connection: close\r\n", "");
    return -1;
}

static int setup(void **state)
{
    (void)state;
    return lab_start(serve_one);
}

static long buffer_for(uint64_t expect, int has_range, uint64_t first, uint64_t last)
{
    vt_http_req req;
    struct vt_eng_xfer x;

    memset(&req, 0, sizeof req);
    memset(&x, 0, sizeof x);
    req.expect_len = expect;
    x.req = &req;
    x.has_req_range = has_range;
    x.req_first = first;
    x.req_last = last;
    return vt__eng_recv_buffer(&x);
}

static void test_receive_buffer_holds_the_body(void **state)
{
    (void)state;
    assert_int_equal(buffer_for(0, 0, 0, 0), 16384);
    assert_int_equal(buffer_for(100, 0, 0, 0), 16384);
    assert_int_equal(buffer_for(16384 - 1024, 0, 0, 0), 16384);
    assert_int_equal(buffer_for(16384 - 1023, 0, 0, 0), 32768);
    assert_int_equal(buffer_for(300000, 0, 0, 0), 524288);
    assert_int_equal(buffer_for(OBJ_SIZE, 0, 0, 0), 1L << 20);
    /* no expected length: the Range asked */
    assert_int_equal(buffer_for(0, 1, 1000, 1000 + 40000 - 1), 65536);
    assert_int_equal(buffer_for(0, 1, 0, OBJ_SIZE - 1), 1L << 20);
    /* the expected length first */
    assert_int_equal(buffer_for(100, 1, 0, OBJ_SIZE - 1), 16384);
}

static void test_pool_keeps_default_handles_only(void **state)
{
    struct vt_engine *e = calloc(1, sizeof *e);
    CURL *h[POOL + 1], *big, *again;

    (void)state;
    assert_non_null(e);
    for (int i = 0; i <= POOL; i++) {
        h[i] = vt__eng_easy_get(e, 16384);
        assert_non_null(h[i]);
    }
    assert_int_equal(e->n_free, 0);
    /* a bigger buffer: a fresh handle, never kept */
    big = vt__eng_easy_get(e, 65536);
    assert_non_null(big);
    vt__eng_easy_put(e, big, 65536);
    assert_int_equal(e->n_free, 0);
    /* default handles: kept up to the pool's size, the last one freed */
    for (int i = 0; i <= POOL; i++)
        vt__eng_easy_put(e, h[i], 16384);
    assert_int_equal(e->n_free, POOL);
    again = vt__eng_easy_get(e, 16384);
    assert_ptr_equal(again, h[POOL - 1]);
    assert_int_equal(e->n_free, POOL - 1);
    /* a bigger buffer never takes a pooled handle */
    big = vt__eng_easy_get(e, 1L << 20);
    assert_non_null(big);
    for (int i = 0; i < POOL - 1; i++)
        assert_ptr_not_equal(big, h[i]);
    assert_int_equal(e->n_free, POOL - 1);
    curl_easy_cleanup(big);
    vt__eng_easy_put(e, again, 16384);
    vt__eng_easy_pool_free(e);
    assert_int_equal(e->n_free, 0);
    free(e);
}

/* method on /m (with body, or none); the engine's result. */
static vt_err send_method(const char *method, const char *path, const char *body)
{
    char url[128];
    vt_http_req req;
    vt_http_resp r;
    vt_err err;

    lab_request(&req, url, sizeof url, path, NULL);
    req.method = method;
    req.max_retries = 0;
    if (body) {
        req.body = body;
        req.body_len = strlen(body);
    }
    err = vt__engine_perform(&req, &r);
    if (err == VT_OK)
        assert_int_equal(r.status, 200);
    vt__http_resp_clear(&r);
    return err;
}

static void test_each_method_as_sent(void **state)
{
    (void)state;
    assert_int_equal(send_method("HEAD", "/m1", NULL), VT_OK);
    assert_int_equal(send_method("POST", "/m2", "hello"), VT_OK);
    assert_int_equal(send_method("PUT", "/m3", "0123456789"), VT_OK);
    assert_int_equal(send_method("DELETE", "/m4", NULL), VT_OK);
    assert_int_equal(seen("HEAD /m1 ", NULL), 1);
    assert_int_equal(seen("POST /m2 ", "Content-Length: 5\r\n"), 1);
    assert_int_equal(seen("PUT /m3 ", "Content-Length: 10\r\n"), 1);
    assert_int_equal(seen("DELETE /m4 ", NULL), 1);
    assert_int_equal(seen("GET /m", NULL), 0);
}

static void test_headers_agent_and_a_range_past_every_buffer(void **state)
{
    const uint64_t first = 70001, len = 3000000; /* over 1 MiB and curl's buffers */
    char url[128], range[64];
    const char *hdrs[] = { range, "X-Vt-Test: easy", NULL };
    vt_http_req req;
    vt_http_resp r;

    (void)state;
    snprintf(range, sizeof range, "Range: bytes=%llu-%llu", (unsigned long long)first,
             (unsigned long long)(first + len - 1));
    CPLSetConfigOption("GDAL_HTTP_USERAGENT", "vt-easy-test/1");
    lab_request(&req, url, sizeof url, "/obj", hdrs);
    req.expect_len = len;
    req.max_body = (size_t)len;
    assert_int_equal(vt__engine_perform(&req, &r), VT_OK);
    CPLSetConfigOption("GDAL_HTTP_USERAGENT", NULL);
    assert_int_equal(r.status, 206);
    assert_int_equal(r.body_len, len);
    assert_int_equal(r.attempts, 1);
    lab_check_body(r.body, first, len);
    vt__http_resp_clear(&r);
    assert_int_equal(seen("GET /obj ", "X-Vt-Test: easy\r\n"), 1);
    assert_int_equal(seen("GET /obj ", "User-Agent: vt-easy-test/1\r\n"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_receive_buffer_holds_the_body),
        cmocka_unit_test(test_pool_keeps_default_handles_only),
        cmocka_unit_test(test_each_method_as_sent),
        cmocka_unit_test(test_headers_agent_and_a_range_past_every_buffer),
    };
    return cmocka_run_group_tests(tests, setup, lab_engine_teardown);
}
