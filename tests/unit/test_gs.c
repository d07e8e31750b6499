/* test_gs.c: the GCS backend's requests without a server (backends/gs/):
 * the URL and headers GDAL 3.6's VSIGSHandleHelper sends, byte for byte,
 * with CPL_GS_TIMESTAMP fixing the Date (GOOG1 signatures computed
 * independently with Python's hmac/hashlib/base64; the user's
 * GDAL_HTTP_HEADERS first, their x-goog-* and Content-Type signed), a bare bucket's
 * trailing '/', the range and If-Match, no-sign with no Authorization and
 * no x-goog-user-project (as GDAL), path splitting, the endpoint option
 * read under /vsigs/, status mapping and a failure's description. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>
#include <cpl_vsi.h>

#include "backends/backend.h"
#include "backends/gs/gs_int.h"

#define SECRET "vsitune+Lab/GCS/Secret0123456789abcdefEX"
#define DATE "Wed, 02 Dec 2026 03:57:22 GMT"

static int setup(void **state)
{
    (void)state;
    CPLSetConfigOption("CPL_GS_CREDENTIALS_FILE", "");
    CPLSetConfigOption("CPL_GCE_SKIP", "YES");
    CPLSetConfigOption("CPL_GS_ENDPOINT", "http://h:1/");
    CPLSetConfigOption("CPL_GS_TIMESTAMP", DATE);
    CPLSetConfigOption("GS_ACCESS_KEY_ID", "KEY");
    CPLSetConfigOption("GS_SECRET_ACCESS_KEY", SECRET);
    CPLSetConfigOption("GS_USER_PROJECT", NULL);
    CPLSetConfigOption("GS_NO_SIGN_REQUEST", NULL);
    VSIClearPathSpecificOptions(NULL);
    return 0;
}

static void expect_headers(const vt_backend_req *r, const char *const *want)
{
    size_t i = 0;
    for (; want[i]; i++) {
        assert_non_null(r->headers[i]);
        assert_string_equal(r->headers[i], want[i]);
    }
    assert_null(r->headers[i]);
}

static void test_goog1_request(void **state)
{
    vt_backend_req r;
    char err[256];
    const char *want[] = {
        "Range: bytes=100-1099", "If-Match: \"e\"", "Date: " DATE,
        "Authorization: GOOG1 KEY:5S4Mb44Cxy05c4TNQBsuCY7LqwY=",
        "x-goog-user-project: proj", NULL};
    (void)state;
    CPLSetConfigOption("GS_USER_PROJECT", "proj");
    assert_int_equal(vt__backend_gs.build_get("lab", "dir/a b.bin", 100, 1000,
                                              "\"e\"", &r, err, sizeof err),
                     VT_OK);
    assert_string_equal(r.url, "http://h:1/lab/dir/a%20b.bin");
    assert_string_equal(r.req.method, "GET");
    assert_int_equal(r.req.expect_len, 1000);
    expect_headers(&r, want);
    vt__backend_gs.req_clear(&r);
}

/* The user's headers come first and sign as GDAL signs them: x-goog-*
 * sorted with x-goog-user-project, Content-Type in its line. */
static void test_user_headers_signed(void **state)
{
    vt_backend_req r;
    char err[256];
    const char *want[] = {
        "x-goog-meta-z: 1", "Content-Type: text/plain", "Date: " DATE,
        "Authorization: GOOG1 KEY:JLQa8K5+BgSVavu1Ysklp+jbrWU=",
        "x-goog-user-project: proj", NULL};
    (void)state;
    CPLSetConfigOption("GS_USER_PROJECT", "proj");
    CPLSetConfigOption("GDAL_HTTP_HEADERS",
                       "x-goog-meta-z: 1\r\nContent-Type: text/plain");
    assert_int_equal(vt__backend_gs.build_get("lab", "k", 0, 0, NULL, &r, err,
                                              sizeof err),
                     VT_OK);
    CPLSetConfigOption("GDAL_HTTP_HEADERS", NULL);
    expect_headers(&r, want);
    vt__backend_gs.req_clear(&r);
}

static void test_bucket_gets_slash(void **state)
{
    vt_backend_req r;
    char err[256];
    const char *want[] = {"Date: " DATE,
                          "Authorization: GOOG1 KEY:QJxnFHj1p0RiFT/4saSw6pxIiuY=",
                          NULL};
    (void)state;
    assert_int_equal(vt__gs_build("GET", "lab", "", "delimiter=%2F&prefix=",
                                  0, 0, NULL, &r, err, sizeof err),
                     VT_OK);
    assert_string_equal(r.url, "http://h:1/lab/?delimiter=%2F&prefix=");
    expect_headers(&r, want);
    vt__backend_gs.req_clear(&r);
}

static void test_nosign_and_path_options(void **state)
{
    vt_backend_req r;
    char err[256], *ep;
    const char *want[] = {"Range: bytes=0-9", NULL};
    (void)state;
    CPLSetConfigOption("GS_USER_PROJECT", "proj");
    VSISetPathSpecificOption("/vsigs/pub", "GS_NO_SIGN_REQUEST", "YES");
    VSISetPathSpecificOption("/vsigs/pub", "CPL_GS_ENDPOINT", "https://o/");
    assert_int_equal(vt__backend_gs.build_get("pub", "k", 0, 10, NULL, &r, err,
                                              sizeof err),
                     VT_OK);
    assert_string_equal(r.url, "https://o/pub/k");
    expect_headers(&r, want);
    vt__backend_gs.req_clear(&r);
    ep = vt__backend_gs.endpoint("pub/k");
    assert_string_equal(ep, "https://o/pub");
    free(ep);
    ep = vt__backend_gs.endpoint("lab/k");
    assert_string_equal(ep, "http://h:1/lab");
    free(ep);
}

static void test_no_credentials(void **state)
{
    vt_backend_req r;
    char err[1024];
    (void)state;
    CPLSetConfigOption("GS_SECRET_ACCESS_KEY", NULL);
    CPLSetConfigOption("GS_ACCESS_KEY_ID", NULL);
    assert_int_equal(vt__backend_gs.build_get("lab", "k", 0, 10, NULL, &r, err,
                                              sizeof err),
                     VT_ECREDS);
    assert_non_null(strstr(err, "GS_NO_SIGN_REQUEST=YES configuration options "
                                "not defined"));
    assert_null(r.url);
}

static void test_split_status_describe(void **state)
{
    char *b, *k, buf[256];
    vt_http_resp r;
    static const char body[] = "<?xml version='1.0' encoding='UTF-8'?><Error>"
                               "<Code>AccessDenied</Code><Message>Access "
                               "denied.</Message></Error>";
    (void)state;
    assert_int_equal(vt__backend_gs.split("b/a/c", &b, &k), VT_OK);
    assert_string_equal(b, "b");
    assert_string_equal(k, "a/c");
    free(b);
    free(k);
    assert_int_equal(vt__backend_gs.split("b", &b, &k), VT_OK);
    assert_string_equal(k, "");
    free(b);
    free(k);
    assert_int_equal(vt__backend_gs.split("", &b, &k), VT_EINVAL);
    assert_int_equal(vt__backend_gs.status_err(206), VT_OK);
    assert_int_equal(vt__backend_gs.status_err(401), VT_EACCESS);
    assert_int_equal(vt__backend_gs.status_err(404), VT_ENOTFOUND);
    assert_int_equal(vt__backend_gs.status_err(503), VT_ETRANSIENT);
    memset(&r, 0, sizeof r);
    r.status = 403;
    r.body = (unsigned char *)body;
    r.body_len = sizeof(body) - 1;
    vt__backend_gs.describe(buf, sizeof buf, "b", "k", &r, VT_EACCESS);
    assert_string_equal(buf, "gs://b/k: HTTP 403 AccessDenied: Access denied.");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_goog1_request, setup),
        cmocka_unit_test_setup(test_user_headers_signed, setup),
        cmocka_unit_test_setup(test_bucket_gets_slash, setup),
        cmocka_unit_test_setup(test_nosign_and_path_options, setup),
        cmocka_unit_test_setup(test_no_credentials, setup),
        cmocka_unit_test_setup(test_split_status_describe, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
