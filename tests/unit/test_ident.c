/* test_ident.c: the shared caches' object names (ident.c). Two processes
 * share an object only when everything that signs and shapes their request
 * is the same: the key id alone (a wrong secret, a made-up session token),
 * another region, requester-pays or extra headers make another name; the
 * name never holds the secret, and is the same for the same options. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>

#include "auth/creds.h"
#include "auth/credkey.h"
#include "backends/backend.h"
#include "read/ident.h"

#define AKID "AKIDEXAMPLE0000001"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"

static int setup(void **state)
{
    (void)state;
    CPLSetConfigOption("AWS_S3_ENDPOINT", "127.0.0.1:9000");
    CPLSetConfigOption("AWS_HTTPS", "NO");
    CPLSetConfigOption("AWS_VIRTUAL_HOSTING", "NO");
    CPLSetConfigOption("AWS_REGION", "us-east-1");
    CPLSetConfigOption("AWS_ACCESS_KEY_ID", AKID);
    CPLSetConfigOption("AWS_SECRET_ACCESS_KEY", SECRET);
    CPLSetConfigOption("AWS_SESSION_TOKEN", NULL);
    CPLSetConfigOption("AWS_REQUEST_PAYER", NULL);
    CPLSetConfigOption("GDAL_HTTP_HEADERS", NULL);
    CPLSetConfigOption("VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS", NULL);
    CPLSetConfigOption("CPL_AWS_CREDENTIALS_FILE", "/nonexistent/credentials");
    CPLSetConfigOption("AWS_CONFIG_FILE", "/nonexistent/config");
    vt__creds_reset();
    return 0;
}

static void signer(const char *akid, const char *secret, const char *token,
                   const char *region, char out[80])
{
    assert_int_equal(vt__ident_signer(akid, secret, token, region, out, 80), 0);
}

static void test_signer_depends_on_every_part(void **state)
{
    char a[80], b[80];
    (void)state;
    signer(AKID, SECRET, NULL, "us-east-1", a);
    assert_int_equal(strncmp(a, "signed:", 7), 0);
    assert_int_equal(strlen(a), 7 + 64);
    signer(AKID, SECRET, NULL, "us-east-1", b);
    assert_string_equal(a, b); /* the same for everyone with these */
    signer(AKID, SECRET, "", "us-east-1", b);
    assert_string_equal(a, b); /* no token, as on the wire */
    signer(AKID, "wrong-secret", NULL, "us-east-1", b);
    assert_string_not_equal(a, b);
    signer(AKID, SECRET, "bogus-token", "us-east-1", b);
    assert_string_not_equal(a, b);
    signer(AKID, SECRET, NULL, "eu-west-1", b);
    assert_string_not_equal(a, b);
    signer("AKIDEXAMPLE0000002", SECRET, NULL, "us-east-1", b);
    assert_string_not_equal(a, b);
    /* the parts cannot run into each other */
    signer(AKID, SECRET, "x", "us-east-1", a);
    signer(AKID, SECRET, "", "x\nus-east-1", b);
    assert_string_not_equal(a, b);
}

static void test_signer_holds_no_secret(void **state)
{
    char a[80];
    (void)state;
    signer(AKID, SECRET, "tok", "us-east-1", a);
    assert_null(strstr(a, SECRET));
    assert_null(strstr(a, AKID));
    assert_null(strstr(a, "tok"));
}

/* The identity of b/k.tif under the options now set (malloc'd). */
static char *ident_now(void)
{
    char *id;
    vt__creds_reset();
    id = vt__ident_object(&vt__backend_s3, "b", "k.tif", "b/k.tif");
    assert_non_null(id);
    return id;
}

static void assert_changes(const char *key, const char *value)
{
    char *a = ident_now(), *b;
    CPLSetConfigOption(key, value);
    b = ident_now();
    assert_string_not_equal(a, b);
    free(a);
    free(b);
}

static void test_object_name_per_credential(void **state)
{
    char *a, *b;
    (void)state;
    a = ident_now();
    b = ident_now();
    assert_string_equal(a, b);
    assert_null(strstr(a, SECRET));
    free(a);
    free(b);
    assert_changes("AWS_SECRET_ACCESS_KEY", "wrong-secret");
    setup(NULL);
    assert_changes("AWS_SESSION_TOKEN", "bogus-token");
    setup(NULL);
    assert_changes("AWS_REGION", "eu-west-1");
    setup(NULL);
    assert_changes("AWS_REQUEST_PAYER", "requester");
    setup(NULL);
    assert_changes("GDAL_HTTP_HEADERS", "x-amz-expected-bucket-owner: 1");
    setup(NULL);
    assert_changes("AWS_S3_ENDPOINT", "127.0.0.1:9001");
}

static void test_no_credentials_names_nothing(void **state)
{
    (void)state;
    CPLSetConfigOption("AWS_SECRET_ACCESS_KEY", "");
    CPLSetConfigOption("AWS_ACCESS_KEY_ID", "");
    CPLSetConfigOption("AWS_EC2_METADATA_DISABLED", "true");
    CPLSetConfigOption("CPL_AWS_WEB_IDENTITY_ENABLE", "NO");
    vt__creds_reset();
    assert_null(vt__ident_object(&vt__backend_s3, "b", "k.tif", "b/k.tif"));
    CPLSetConfigOption("AWS_NO_SIGN_REQUEST", "YES");
    vt__creds_reset();
    {
        char *id = vt__ident_object(&vt__backend_s3, "b", "k.tif", "b/k.tif");
        assert_non_null(id);
        assert_non_null(strstr(id, "\nanonymous\n"));
        free(id);
    }
    CPLSetConfigOption("AWS_NO_SIGN_REQUEST", NULL);
}

static void test_opt_in_shares_across_credentials(void **state)
{
    char *a, *b;
    (void)state;
    CPLSetConfigOption("VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS", "YES");
    a = ident_now();
    CPLSetConfigOption("AWS_SECRET_ACCESS_KEY", "another-secret");
    CPLSetConfigOption("AWS_ACCESS_KEY_ID", "AKIDANOTHER");
    b = ident_now();
    assert_string_equal(a, b);
    free(a);
    free(b);
    CPLSetConfigOption("VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_signer_depends_on_every_part, setup),
        cmocka_unit_test_setup(test_signer_holds_no_secret, setup),
        cmocka_unit_test_setup(test_object_name_per_credential, setup),
        cmocka_unit_test_setup(test_no_credentials_names_nothing, setup),
        cmocka_unit_test_setup(test_opt_in_shares_across_credentials, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
