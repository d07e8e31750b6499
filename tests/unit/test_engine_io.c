/* test_engine_io.c: the engine's I/O thread (http/engine_io.c) through
 * vt__engine_perform against a loopback HTTP/1.1 server (http_lab.h); what
 * the server received is the judge (issue 19 item 8). test_engine.c tests
 * engine.h's contract as a whole; this tests what the I/O thread decides.
 *
 * A transient status is sent again up to max_retries, then the last answer
 * stands; once a request ran out of retries, the next requests to that
 * server get one attempt each (no ladder of their own) until a request to
 * it succeeds, after which a new object gets its retries again. A range body
 * larger than every buffer of the engine and curl (20 MB, over the 4 MiB
 * default body bound when max_body allows it) comes back whole in one
 * request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/engine.h"
#include "http_lab.h"
#include "engine_lab.h"

#define HUGE_OBJ 30000000ULL

/* /busy...: always 503 SlowDown; /obj: 206 of the range asked. */
static int serve_one(int fd, const char *head)
{
    char line[256];
    uint64_t first, last;

    lab_begin(head, line, sizeof line, &first, &last);
    if (strncmp(line, "GET /busy", 9) == 0)
        return answer(fd, "503 Slow Down", "", "<Error><Code>SlowDown</Code></Error>");
    if (strncmp(line, "GET /obj ", 9) == 0)
        return lab_answer_range(fd, first, last, HUGE_OBJ, 0);
    return answer(fd, "404 Not Found", "", "<Error><Code>NoSuchKey</Code></Error>");
}

static int setup(void **state)
{
    (void)state;
    return lab_start(serve_one);
}

/* GET path (with range hdr, or none); returns the engine's result. */
static vt_err get(const char *path, const char *range, uint64_t expect, size_t max_body,
                  vt_http_resp *resp)
{
    char url[128];
    const char *hdrs[] = { range, NULL };
    vt_http_req req;

    lab_request(&req, url, sizeof url, path, range ? hdrs : NULL);
    req.expect_len = expect;
    req.max_body = max_body;
    return vt__engine_perform(&req, resp);
}

static void test_retries_then_one_attempt_while_failing(void **state)
{
    vt_http_resp r;

    (void)state;
    assert_int_not_equal(get("/busy1", NULL, 0, 0, &r), VT_OK);
    assert_int_equal(r.status, 503);
    assert_int_equal(r.attempts, 3);
    assert_int_equal(seen("GET /busy1 ", NULL), 3);
    vt__http_resp_clear(&r);

    /* the server is failing: the same object, and another, get one attempt */
    assert_int_not_equal(get("/busy1", NULL, 0, 0, &r), VT_OK);
    assert_int_equal(r.attempts, 1);
    vt__http_resp_clear(&r);
    assert_int_not_equal(get("/busy2", NULL, 0, 0, &r), VT_OK);
    assert_int_equal(r.status, 503);
    assert_int_equal(r.attempts, 1);
    vt__http_resp_clear(&r);
    assert_int_equal(seen("GET /busy1 ", NULL), 4);
    assert_int_equal(seen("GET /busy2 ", NULL), 1);

    /* a success from the server: a new object gets its retries again */
    assert_int_equal(get("/obj", "Range: bytes=0-999", 1000, 0, &r), VT_OK);
    vt__http_resp_clear(&r);
    assert_int_not_equal(get("/busy3", NULL, 0, 0, &r), VT_OK);
    assert_int_equal(r.attempts, 3);
    vt__http_resp_clear(&r);
    assert_int_equal(seen("GET /busy3 ", NULL), 3);
}

static void test_body_larger_than_buffers(void **state)
{
    const uint64_t first = 1000003, len = 20000000;
    char range[64];
    vt_http_resp r;
    int before = seen("GET /obj ", NULL);

    (void)state;
    snprintf(range, sizeof range, "Range: bytes=%llu-%llu", (unsigned long long)first,
             (unsigned long long)(first + len - 1));
    assert_int_equal(get("/obj", range, len, (size_t)len, &r), VT_OK);
    assert_int_equal(r.status, 206);
    assert_int_equal(r.body_len, len);
    assert_int_equal(r.attempts, 1);
    lab_check_body(r.body, first, len);
    vt__http_resp_clear(&r);
    assert_int_equal(seen("GET /obj ", NULL), before + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retries_then_one_attempt_while_failing),
        cmocka_unit_test(test_body_larger_than_buffers),
    };
    return cmocka_run_group_tests(tests, setup, lab_engine_teardown);
}
