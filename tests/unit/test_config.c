/* test_config.c: option lookup for a path (config.c) against GDAL's own
 * path-specific option store (VSISetPathSpecificOption), as the GDAL
 * calls gdal.SetCredential and rasterio make. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <cpl_conv.h>
#include <cpl_vsi.h>

#include "config.h"

static int teardown(void **state)
{
    (void)state;
    VSIClearPathSpecificOptions(NULL);
    CPLSetConfigOption("VT_TEST_OPT", NULL);
    CPLSetConfigOption("VT_TEST_BOOL", NULL);
    CPLSetConfigOption("VT_TEST_SIZE", NULL);
    vt__cfg_set_prefix("/vsis3/");
    return 0;
}

static void assert_opt(const char *path, const char *name, const char *want)
{
    char *v = vt__cfg_dup(path, name);
    if (want == NULL)
        assert_null(v);
    else
        assert_string_equal(v, want);
    free(v);
}

/* A value set for /vsis3/b1 applies to b1's keys only; others fall back to
 * the config option, as VSIGetPathSpecificOption does. */
static void test_path_specific(void **state)
{
    (void)state;
    CPLSetConfigOption("VT_TEST_OPT", "global");
    VSISetPathSpecificOption("/vsis3/b1", "VT_TEST_OPT", "for-b1");
    VSISetPathSpecificOption("/vsis3/b2/sub", "VT_TEST_OPT", "for-b2-sub");
    assert_opt("b1/k.tif", "VT_TEST_OPT", "for-b1");
    assert_opt("b1", "VT_TEST_OPT", "for-b1");
    assert_opt("b2/k.tif", "VT_TEST_OPT", "global");
    assert_opt("b2/sub/k.tif", "VT_TEST_OPT", "for-b2-sub");
    assert_opt(NULL, "VT_TEST_OPT", "global");
    /* Prefix matching is GDAL's (a string prefix): /vsis3/b1 also covers
     * bucket b10, exactly as stock GDAL does. */
    assert_opt("b10/k.tif", "VT_TEST_OPT", "for-b1");
    CPLSetConfigOption("VT_TEST_OPT", NULL);
    assert_opt("b3/k", "VT_TEST_OPT", NULL);
}

/* Set to "": dup says unset, dup_raw gives "" (CPL_AWS_CREDENTIALS_FILE=""
 * means "no file" to GDAL). */
static void test_empty_vs_unset(void **state)
{
    char *v;
    (void)state;
    CPLSetConfigOption("VT_TEST_OPT", "");
    assert_opt("b/k", "VT_TEST_OPT", NULL);
    v = vt__cfg_dup_raw("b/k", "VT_TEST_OPT");
    assert_non_null(v);
    assert_string_equal(v, "");
    free(v);
    CPLSetConfigOption("VT_TEST_OPT", NULL);
    assert_null(vt__cfg_dup_raw("b/k", "VT_TEST_OPT"));
    VSISetPathSpecificOption("/vsis3/b", "VT_TEST_OPT", "");
    CPLSetConfigOption("VT_TEST_OPT", "global");
    v = vt__cfg_dup_raw("b/k", "VT_TEST_OPT");
    assert_string_equal(v, "");
    free(v);
}

static void test_bool_and_size(void **state)
{
    (void)state;
    CPLSetConfigOption("VT_TEST_BOOL", "NO");
    VSISetPathSpecificOption("/vsis3/yes", "VT_TEST_BOOL", "YES");
    assert_int_equal(vt__cfg_bool("yes/k", "VT_TEST_BOOL", 0), 1);
    assert_int_equal(vt__cfg_bool("no/k", "VT_TEST_BOOL", 1), 0);
    assert_int_equal(vt__cfg_bool("no/k", "VT_UNSET_BOOL", 1), 1);
    VSISetPathSpecificOption("/vsis3/big", "VT_TEST_SIZE", "2M");
    assert_int_equal(vt__cfg_size("big/k", "VT_TEST_SIZE", 7, 0, 1u << 30),
                     2u << 20);
    assert_int_equal(vt__cfg_size("small/k", "VT_TEST_SIZE", 7, 0, 1u << 30),
                     7);
}

/* Installed on /vsitune/, the options set for /vsitune/... apply. */
static void test_prefix(void **state)
{
    char buf[64];
    (void)state;
    VSISetPathSpecificOption("/vsitune/b", "VT_TEST_OPT", "tune");
    VSISetPathSpecificOption("/vsis3/b", "VT_TEST_OPT", "s3");
    assert_opt("b/k", "VT_TEST_OPT", "s3");
    vt__cfg_set_prefix("/vsitune/");
    assert_opt("b/k", "VT_TEST_OPT", "tune");
    assert_string_equal(vt__cfg_gdal_path("b/k", buf, sizeof(buf)),
                        "/vsitune/b/k");
    assert_null(vt__cfg_gdal_path("b/k", buf, 10));
}

/* A key longer than the lookup's stack buffer still finds its options. */
static void test_long_path(void **state)
{
    char path[3000];
    (void)state;
    memset(path, 'a', sizeof(path) - 1);
    path[sizeof(path) - 1] = '\0';
    memcpy(path, "lb/", 3);
    VSISetPathSpecificOption("/vsis3/lb", "VT_TEST_OPT", "long");
    assert_opt(path, "VT_TEST_OPT", "long");
}

/* VSITUNE_CACHE_SIZE, else GDAL's CPL_VSIL_CURL_CACHE_SIZE, else 64 MB. */
static void test_cache_budget(void **state)
{
    (void)state;
    CPLSetConfigOption("VSITUNE_CACHE_SIZE", "");
    CPLSetConfigOption("CPL_VSIL_CURL_CACHE_SIZE", "");
    assert_int_equal(vt__cfg_cache_budget(), VT_DEFAULT_CACHE_SIZE);
    CPLSetConfigOption("CPL_VSIL_CURL_CACHE_SIZE", "16384000");
    assert_int_equal(vt__cfg_cache_budget(), 16384000);
    CPLSetConfigOption("VSITUNE_CACHE_SIZE", "8M");
    assert_int_equal(vt__cfg_cache_budget(), 8u << 20);
    CPLSetConfigOption("VSITUNE_CACHE_SIZE", "0");
    assert_int_equal(vt__cfg_cache_budget(), 0);
    CPLSetConfigOption("VSITUNE_CACHE_SIZE", NULL);
    CPLSetConfigOption("CPL_VSIL_CURL_CACHE_SIZE", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_path_specific, teardown),
        cmocka_unit_test_teardown(test_empty_vs_unset, teardown),
        cmocka_unit_test_teardown(test_bool_and_size, teardown),
        cmocka_unit_test_teardown(test_prefix, teardown),
        cmocka_unit_test_teardown(test_long_path, teardown),
        cmocka_unit_test_teardown(test_cache_budget, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
