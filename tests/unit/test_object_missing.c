/* test_object_missing.c: the 404 memory's marks (read/object_missing.c)
 * and the remembered 404s they mark (object.c), against a loopback S3
 * (http_lab.h); what the server received is the judge (issue 19 item 8).
 *
 * A 404 is remembered for VSITUNE_NEGATIVE_TTL: the next open fails the same
 * way without a request, and vt__object_open_remembered says so to the
 * calling thread only, and only for that open. vt__object_missing_by_read
 * marks a remembered 404 (and nothing else: not an object that exists, not
 * a path never asked); the mark goes with the 404 when it is forgotten. At
 * VSITUNE_NEGATIVE_TTL=0 nothing is remembered. A transient failure (500) is
 * never remembered. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_lab.h"
#include "object_lab.h"

#define BIG 12000000ULL

/* /lb/here.bin: BIG bytes; /lb/flaky.bin: 500; anything else 404. */
static int serve_one(int fd, const char *head)
{
    char line[256];
    uint64_t first, last;

    lab_begin(head, line, sizeof line, &first, &last);
    if (strncmp(line, "GET /lb/here.bin ", 17) == 0)
        return lab_answer_range(fd, first, last, BIG, 0);
    if (strncmp(line, "GET /lb/flaky.bin ", 18) == 0)
        return answer(fd, "500 Internal Server Error", "",
                      "<Error><Code>InternalError</Code><Message>We encountered an "
                      "internal error. Please try again.</Message></Error>");
    return lab_answer_no_such_key(fd);
}

static int setup(void **state)
{
    (void)state;
    return lab_setup_s3(serve_one);
}

static vt_err open_obj(const char *path, long *status, char *err)
{
    vt_object *o = NULL;
    vt_err e = lab_open(path, &o, status, err);

    if (o)
        vt__object_release(o);
    return e;
}

static void test_404_remembered_without_request(void **state)
{
    long status;
    char err[512], again[512];

    (void)state;
    assert_int_equal(open_obj("lb/gone.bin", &status, err), VT_ENOTFOUND);
    assert_int_equal(status, 404);
    assert_int_equal(vt__object_open_remembered(), 0); /* it asked */
    assert_int_equal(seen("GET /lb/gone.bin ", NULL), 1);

    assert_int_equal(open_obj("lb/gone.bin", &status, again), VT_ENOTFOUND);
    assert_int_equal(status, 404);
    assert_int_equal(vt__object_open_remembered(), 1); /* from memory */
    assert_string_equal(again, err);                   /* the same words */
    assert_int_equal(seen("GET /lb/gone.bin ", NULL), 1);

    /* the mark is the last open's: an open that asks clears it */
    assert_int_equal(open_obj("lb/here.bin", &status, err), VT_OK);
    assert_int_equal(vt__object_open_remembered(), 0);
}

static void *open_in_thread(void *arg)
{
    long status;
    char err[512];

    (void)open_obj("lb/gone2.bin", &status, err);
    *(int *)arg = vt__object_open_remembered();
    return NULL;
}

static void test_remembered_is_per_thread(void **state)
{
    long status;
    char err[512];
    pthread_t t;
    int theirs = -1;

    (void)state;
    assert_int_equal(open_obj("lb/gone2.bin", &status, err), VT_ENOTFOUND);
    assert_int_equal(open_obj("lb/gone2.bin", &status, err), VT_ENOTFOUND);
    assert_int_equal(vt__object_open_remembered(), 1);
    assert_int_equal(pthread_create(&t, NULL, open_in_thread, &theirs), 0);
    pthread_join(t, NULL);
    assert_int_equal(theirs, 1); /* its own open was from memory too */
    /* this thread's mark is untouched by the other's open of a found one */
    assert_int_equal(vt__object_open_remembered(), 1);
    assert_int_equal(seen("GET /lb/gone2.bin ", NULL), 1);
}

static void test_missing_by_read_marks_only_404s(void **state)
{
    long status;
    char err[512];

    (void)state;
    assert_int_equal(open_obj("lb/gone3.bin", &status, err), VT_ENOTFOUND);
    assert_int_equal(vt__object_missing_was_read(&vt__backend_s3, "lb/gone3.bin"), 0);
    vt__object_missing_by_read(&vt__backend_s3, "lb/gone3.bin");
    assert_int_equal(vt__object_missing_was_read(&vt__backend_s3, "lb/gone3.bin"), 1);

    /* an object that exists, a path never asked: no mark */
    assert_int_equal(open_obj("lb/here.bin", &status, err), VT_OK);
    vt__object_missing_by_read(&vt__backend_s3, "lb/here.bin");
    assert_int_equal(vt__object_missing_was_read(&vt__backend_s3, "lb/here.bin"), 0);
    vt__object_missing_by_read(&vt__backend_s3, "lb/never.bin");
    assert_int_equal(vt__object_missing_was_read(&vt__backend_s3, "lb/never.bin"), 0);

    /* forgotten with the 404: the next open asks, and is unmarked */
    vt__object_forget(&vt__backend_s3, "lb/gone3.bin");
    assert_int_equal(vt__object_missing_was_read(&vt__backend_s3, "lb/gone3.bin"), 0);
    assert_int_equal(open_obj("lb/gone3.bin", &status, err), VT_ENOTFOUND);
    assert_int_equal(seen("GET /lb/gone3.bin ", NULL), 2);
    assert_int_equal(vt__object_missing_was_read(&vt__backend_s3, "lb/gone3.bin"), 0);
}

static void test_negative_ttl_zero(void **state)
{
    long status;
    char err[512];

    (void)state;
    CPLSetConfigOption("VSITUNE_NEGATIVE_TTL", "0");
    assert_int_equal(open_obj("lb/gone4.bin", &status, err), VT_ENOTFOUND);
    assert_int_equal(open_obj("lb/gone4.bin", &status, err), VT_ENOTFOUND);
    assert_int_equal(vt__object_open_remembered(), 0);
    CPLSetConfigOption("VSITUNE_NEGATIVE_TTL", NULL);
    assert_int_equal(seen("GET /lb/gone4.bin ", NULL), 2);
}

static void test_transient_never_remembered(void **state)
{
    long status;
    char err[512];

    (void)state;
    assert_int_not_equal(open_obj("lb/flaky.bin", &status, err), VT_OK);
    assert_int_equal(status, 500);
    assert_int_not_equal(open_obj("lb/flaky.bin", &status, err), VT_OK);
    assert_int_equal(vt__object_open_remembered(), 0);
    assert_int_equal(seen("GET /lb/flaky.bin ", NULL), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_404_remembered_without_request),
        cmocka_unit_test(test_remembered_is_per_thread),
        cmocka_unit_test(test_missing_by_read_marks_only_404s),
        cmocka_unit_test(test_negative_ttl_zero),
        cmocka_unit_test(test_transient_never_remembered),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
