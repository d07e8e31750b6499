/* test_s3_fail.c: the per-name memory of how a name last failed (s3_fail.c),
 * which only decides the wording of a failure met again: the same failure
 * twice is "again", a different one, a success, a forgotten prefix or
 * another endpoint make the next one a first; the table stays bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>

#include <cpl_conv.h>

#include "backends/s3/s3.h"
#include "backends/s3/s3_int.h"

static int setup(void **state)
{
    (void)state;
    CPLSetConfigOption("AWS_S3_ENDPOINT", "127.0.0.1:9000");
    CPLSetConfigOption("AWS_HTTPS", "NO");
    vt__s3_forget_failures(NULL);
    return 0;
}

static void test_same_failure_is_again(void **state)
{
    (void)state;
    assert_int_equal(vt__s3_fail_note("b", "k.tif", 403, VT_EACCESS,
                                      "AccessDenied"), 0);
    assert_int_equal(vt__s3_fail_note("b", "k.tif", 403, VT_EACCESS,
                                      "AccessDenied"), 1);
    assert_int_equal(vt__s3_fail_note("b", "k.tif", 403, VT_EACCESS,
                                      "AccessDenied"), 1);
    /* another name is its own */
    assert_int_equal(vt__s3_fail_note("b", "other.tif", 403, VT_EACCESS,
                                      "AccessDenied"), 0);
}

static void test_different_failure_is_a_first(void **state)
{
    (void)state;
    assert_int_equal(vt__s3_fail_note("b", "k", 403, VT_EACCESS, "AccessDenied"),
                     0);
    /* another S3 code with the same status */
    assert_int_equal(vt__s3_fail_note("b", "k", 403, VT_EACCESS,
                                      "InvalidAccessKeyId"), 0);
    assert_int_equal(vt__s3_fail_note("b", "k", 503, VT_ETRANSIENT, NULL), 0);
    assert_int_equal(vt__s3_fail_note("b", "k", 503, VT_ETRANSIENT, ""), 1);
    /* no HTTP answer: the transport error decides */
    assert_int_equal(vt__s3_fail_note("b", "k", 0, VT_ENETWORK, NULL), 0);
    assert_int_equal(vt__s3_fail_note("b", "k", 0, VT_ETIMEDOUT, NULL), 0);
    assert_int_equal(vt__s3_fail_note("b", "k", 0, VT_ETIMEDOUT, NULL), 1);
}

static void test_success_and_forget_reset(void **state)
{
    (void)state;
    vt__s3_fail_note("b", "dir/a.tif", 403, VT_EACCESS, "AccessDenied");
    vt__s3_fail_ok("b", "dir/a.tif");
    assert_int_equal(vt__s3_fail_note("b", "dir/a.tif", 403, VT_EACCESS,
                                      "AccessDenied"), 0);
    /* PartialClearCache of another prefix keeps it, of its own forgets */
    vt__s3_forget_failures("/b/elsewhere");
    assert_int_equal(vt__s3_fail_note("b", "dir/a.tif", 403, VT_EACCESS,
                                      "AccessDenied"), 1);
    vt__s3_forget_failures("/b/dir");
    assert_int_equal(vt__s3_fail_note("b", "dir/a.tif", 403, VT_EACCESS,
                                      "AccessDenied"), 0);
    /* ClearCache: all */
    vt__s3_forget_failures(NULL);
    assert_int_equal(vt__s3_fail_note("b", "dir/a.tif", 403, VT_EACCESS,
                                      "AccessDenied"), 0);
}

static void test_endpoint_is_part_of_the_name(void **state)
{
    (void)state;
    vt__s3_fail_note("b", "k", 403, VT_EACCESS, "AccessDenied");
    CPLSetConfigOption("AWS_S3_ENDPOINT", "127.0.0.1:9001");
    assert_int_equal(vt__s3_fail_note("b", "k", 403, VT_EACCESS,
                                      "AccessDenied"), 0);
    assert_int_equal(vt__s3_fail_note("b", "k", 403, VT_EACCESS,
                                      "AccessDenied"), 1);
}

static void test_bounded(void **state)
{
    char key[32];
    (void)state;
    vt__s3_fail_note("b", "first", 403, VT_EACCESS, "AccessDenied");
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        vt__s3_fail_note("b", key, 403, VT_EACCESS, "AccessDenied");
    }
    /* the oldest was replaced: a first again, never wrong, only plainer */
    assert_int_equal(vt__s3_fail_note("b", "first", 403, VT_EACCESS,
                                      "AccessDenied"), 0);
    assert_int_equal(vt__s3_fail_note("b", "k999", 403, VT_EACCESS,
                                      "AccessDenied"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_same_failure_is_again, setup),
        cmocka_unit_test_setup(test_different_failure_is_a_first, setup),
        cmocka_unit_test_setup(test_success_and_forget_reset, setup),
        cmocka_unit_test_setup(test_endpoint_is_part_of_the_name, setup),
        cmocka_unit_test_setup(test_bounded, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
