/* test_object.c: the pure part of object.c, the judgement of an object's
 * first answer (issue 13: "one bad first response poisons an object"): only
 * an answer consistent in itself gives a size that is kept; every answer a
 * fault proxy produced in the fault campaign is judged doubtful. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "object.h"

#define ASKED 65536u

static vt_http_resp range_answer(long status, uint64_t first, uint64_t last,
                                 int has_total, uint64_t total, size_t body)
{
    vt_http_resp r;
    memset(&r, 0, sizeof(r));
    r.status = status;
    r.has_content_range = 1;
    r.range_first = first;
    r.range_last = last;
    r.has_total = has_total;
    r.total_size = total;
    r.body_len = body;
    return r;
}

static vt_first judge(const vt_http_resp *r, uint64_t *size, char *why)
{
    return vt__object_judge_first(r, ASKED, size, why, 256);
}

static void consistent_answers(void **state)
{
    uint64_t size;
    char why[256];
    vt_http_resp r;
    (void)state;

    /* The common case: the header of a larger object. */
    r = range_answer(206, 0, ASKED - 1, 1, 10000000, ASKED);
    assert_int_equal(judge(&r, &size, why), VT_FIRST_OK);
    assert_int_equal(size, 10000000);
    /* A small object, clipped at its end. */
    r = range_answer(206, 0, 999, 1, 1000, 1000);
    assert_int_equal(judge(&r, &size, why), VT_FIRST_OK);
    assert_int_equal(size, 1000);
    /* A server that ignored Range and sent all 5000 bytes it announced. */
    memset(&r, 0, sizeof(r));
    r.status = 200;
    r.has_total = 1;
    r.total_size = r.body_len = 5000;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_OK);
    assert_int_equal(size, 5000);
}

static void empty_object(void **state)
{
    static const char body[] =
        "<Error><Code>InvalidRange</Code><Message>The requested range is not "
        "satisfiable</Message><ActualObjectSize>0</ActualObjectSize></Error>";
    uint64_t size = 7;
    char why[256];
    vt_http_resp r;
    (void)state;

    /* S3's answer for an empty object. */
    memset(&r, 0, sizeof(r));
    r.status = 416;
    r.body = (unsigned char *)body;
    r.body_len = sizeof(body) - 1;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_EMPTY);
    assert_int_equal(size, 0);
    /* Content-Range "bytes * /0" says the same. */
    memset(&r, 0, sizeof(r));
    r.status = 416;
    r.has_total = 1;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_EMPTY);
}

static void doubtful_answers(void **state)
{
    static const char body_big[] =
        "<Error><Code>InvalidRange</Code><ActualObjectSize>123456"
        "</ActualObjectSize></Error>";
    uint64_t size = 7;
    char why[256];
    vt_http_resp r;
    (void)state;

    /* A 416 whose Content-Range names the real size: not empty. */
    memset(&r, 0, sizeof(r));
    r.status = 416;
    r.has_total = 1;
    r.total_size = 2048000;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    assert_non_null(strstr(why, "2048000"));
    assert_int_equal(size, 0);
    /* ... or whose body does. */
    memset(&r, 0, sizeof(r));
    r.status = 416;
    r.body = (unsigned char *)body_big;
    r.body_len = sizeof(body_big) - 1;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    assert_non_null(strstr(why, "123456"));
    /* A 416 that says nothing about the size. */
    memset(&r, 0, sizeof(r));
    r.status = 416;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    /* A 200 with an empty body. */
    memset(&r, 0, sizeof(r));
    r.status = 200;
    r.has_total = 1;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    assert_non_null(strstr(why, "empty"));
    /* A 200 whose body and Content-Length disagree, or without one. */
    r.total_size = 100;
    r.body_len = 50;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    r.has_total = 0;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    /* "bytes 0-65535 / *": no total. */
    r = range_answer(206, 0, ASKED - 1, 0, 0, ASKED);
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    assert_non_null(strstr(why, "no object size"));
    /* Fewer bytes than asked, yet a total past them. */
    r = range_answer(206, 0, 999, 1, 5000, 1000);
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    /* A body that does not match its range. */
    r = range_answer(206, 0, ASKED - 1, 1, 5000000, 100);
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    /* Another status. */
    memset(&r, 0, sizeof(r));
    r.status = 204;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    assert_int_equal(size, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(consistent_answers),
        cmocka_unit_test(empty_object),
        cmocka_unit_test(doubtful_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
