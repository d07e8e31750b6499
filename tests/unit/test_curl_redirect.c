/* test_curl_redirect.c: GDAL 3.6's rules for a redirect to an S3-like
 * signed URL (curl_redirect.c): which URLs count as signed, when one
 * expires (times computed with Python's calendar.timegm, not by the code
 * under test), when a target is remembered, for how long in local time,
 * and forgetting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/curl/curl_int.h"

/* 2013-05-24T00:00:00Z = 1369353600 (AWS's SigV4 documentation example) */
#define TARGET "http://127.0.0.1:9000/lab/x.tif?X-Amz-Algorithm=AWS4-HMAC-SHA256" \
               "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400"            \
               "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c2659" \
               "57d157751f604d404"

static int setup(void **state)
{
    (void)state;
    vt__curl_redirect_forget(NULL);
    return 0;
}

static void test_signed(void **state)
{
    (void)state;
    assert_true(vt__curl_is_s3_signed(TARGET));
    assert_true(vt__curl_is_s3_signed("https://b.s3.amazonaws.com/k?AWSAccessKeyId=A"
                                      "&Expires=1&Signature=x"));
    assert_true(vt__curl_is_s3_signed("https://d1.cloudfront.net:443/k?Signature=x"));
    /* Signature= counts on the known hosts only */
    assert_false(vt__curl_is_s3_signed("https://cdn.example/k?Signature=x"));
    assert_false(vt__curl_is_s3_signed("https://h/k?xX-Amz-Signature=x"));
    assert_false(vt__curl_is_s3_signed("https://h/_web/redirect=302/lab/k"));
}

static void test_expires(void **state)
{
    (void)state;
    assert_int_equal(vt__curl_url_expires(TARGET), 1369440000LL);
    assert_int_equal(vt__curl_url_expires("https://b.s3.amazonaws.com/k?"
                                          "Expires=1796184000&Signature=x"),
                     1796184000LL);
    assert_int_equal(vt__curl_url_expires("https://h/k?X-Amz-Expires=60"), 0);
    assert_int_equal(vt__curl_url_expires("https://h/k?X-Amz-Date=2013&"
                                          "X-Amz-Expires=60"), 0);
    /* 2026-12-02T04:00:00Z = 1796184000 */
    assert_int_equal(vt__curl_url_expires("https://h/k?X-Amz-Expires=3600&"
                                          "X-Amz-Date=20261202T040000Z&"
                                          "X-Amz-Signature=s"),
                     1796184000LL + 3600);
}

static void test_remembered_until_expiry(void **state)
{
    const char *from = "http://127.0.0.1:9000/_web/redirect=302/lab/x.tif";
    int expired = 0;
    char *to;
    (void)state;
    /* server's Date 1000 s before the target's expiry; local clock 5000 */
    assert_int_equal(vt__curl_redirect_note(from, TARGET, 1369439000LL, 5000, 1), 1);
    to = vt__curl_redirect_lookup(from, 5000, &expired);
    assert_non_null(to);
    assert_string_equal(to, TARGET);
    free(to);
    /* valid until local 6000, with 1 s of margin */
    to = vt__curl_redirect_lookup(from, 5998, &expired);
    assert_non_null(to);
    assert_int_equal(expired, 0);
    free(to);
    assert_null(vt__curl_redirect_lookup(from, 5999, &expired));
    assert_int_equal(expired, 1);
    /* forgotten once expired */
    assert_null(vt__curl_redirect_lookup(from, 100, &expired));
    assert_int_equal(expired, 0);
}

static void test_not_remembered(void **state)
{
    const char *from = "http://h/_web/redirect=302/lab/x.tif";
    int expired;
    (void)state;
    /* CPL_VSIL_CURL_USE_S3_REDIRECT=NO */
    assert_int_equal(vt__curl_redirect_note(from, TARGET, 1369439000LL, 5000, 0), 0);
    /* no Date header */
    assert_int_equal(vt__curl_redirect_note(from, TARGET, 0, 5000, 1), 0);
    /* 10 s or less left */
    assert_int_equal(vt__curl_redirect_note(from, TARGET, 1369439990LL, 5000, 1), 0);
    /* the URL asked was itself signed */
    assert_int_equal(vt__curl_redirect_note(TARGET, TARGET, 1369439000LL, 5000, 1), 0);
    /* the target is not signed */
    assert_int_equal(vt__curl_redirect_note(from, "http://h/lab/x.tif",
                                            1369439000LL, 5000, 1), 0);
    assert_null(vt__curl_redirect_lookup(from, 5000, &expired));
}

static void test_forget_prefix_and_bound(void **state)
{
    char url[64];
    int expired;
    char *to;
    (void)state;
    assert_int_equal(vt__curl_redirect_note("http://a/x", TARGET, 1369439000LL, 0, 1), 1);
    assert_int_equal(vt__curl_redirect_note("http://b/x", TARGET, 1369439000LL, 0, 1), 1);
    vt__curl_redirect_forget("http://a/");
    assert_null(vt__curl_redirect_lookup("http://a/x", 0, &expired));
    to = vt__curl_redirect_lookup("http://b/x", 0, &expired);
    assert_non_null(to);
    free(to);
    /* bounded: many more URLs than slots, the newest always found */
    for (int i = 0; i < 1000; i++) {
        snprintf(url, sizeof url, "http://c/%d", i);
        assert_int_equal(vt__curl_redirect_note(url, TARGET, 1369439000LL, 0, 1), 1);
        to = vt__curl_redirect_lookup(url, 0, &expired);
        assert_non_null(to);
        free(to);
    }
    assert_null(vt__curl_redirect_lookup("http://c/0", 0, &expired));
    /* the oldest replaced: the newest 128 (the table's size) are all held */
    for (int i = 1000 - 128; i < 1000; i++) {
        snprintf(url, sizeof url, "http://c/%d", i);
        to = vt__curl_redirect_lookup(url, 0, &expired);
        assert_non_null(to);
        free(to);
    }
    assert_null(vt__curl_redirect_lookup("http://c/871", 0, &expired));
    vt__curl_redirect_forget(NULL);
    assert_null(vt__curl_redirect_lookup("http://c/999", 0, &expired));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_signed, setup),
        cmocka_unit_test_setup(test_expires, setup),
        cmocka_unit_test_setup(test_remembered_until_expiry, setup),
        cmocka_unit_test_setup(test_not_remembered, setup),
        cmocka_unit_test_setup(test_forget_prefix_and_bound, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
