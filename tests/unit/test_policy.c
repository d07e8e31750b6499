/* test_policy.c: GDAL's allowed-name rule, the COG test, directory-like
 * names (policy.c), and size
 * parsing (config.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "base/config.h"
#include "read/policy.h"

static void test_allowed_name(void **state)
{
    (void)state;
    /* nothing set: every name exists as far as the option goes */
    assert_true(vt__policy_allowed_name("/vsis3/b/x.bin", NULL, NULL));
    /* CPL_VSIL_CURL_ALLOWED_FILENAME: that exact name only */
    assert_true(vt__policy_allowed_name("/vsis3/b/x.tif", "/vsis3/b/x.tif", ".bin"));
    assert_false(vt__policy_allowed_name("/vsis3/b/y.tif", "/vsis3/b/x.tif", NULL));
    /* CPL_VSIL_CURL_ALLOWED_EXTENSIONS: ',' or ' ' separated, any case */
    assert_true(vt__policy_allowed_name("/vsis3/b/s/x.tif", NULL, ".tif,.tiff"));
    assert_true(vt__policy_allowed_name("/vsis3/b/s/X.TIF", NULL, ".tif .tiff"));
    assert_true(vt__policy_allowed_name("/vsis3/b/x.tiff", NULL, " .tif , .tiff "));
    assert_false(vt__policy_allowed_name("/vsis3/b/x.tif.aux.xml", NULL, ".tif"));
    assert_true(vt__policy_allowed_name("/vsis3/b/x.tif?a=b", NULL, ".tif"));
    assert_false(vt__policy_allowed_name("/vsis3/b/x.tif", NULL, "x.tif/x.tif"));
    /* the name must be longer than the extension */
    assert_false(vt__policy_allowed_name(".tif", NULL, ".tif"));
    assert_false(vt__policy_allowed_name("/vsis3/b/B04", NULL, ".tif"));
    assert_true(vt__policy_allowed_name("/vsis3/b/B04", NULL, ".tif,{noext}"));
    assert_true(vt__policy_allowed_name("/vsis3/b/B04", NULL, "{NOEXT}"));
    assert_false(vt__policy_allowed_name("/vsis3/b/d.d/B04.jp2", NULL, "{noext}"));
    assert_true(vt__policy_allowed_name("/vsis3/b/d.d/B04", NULL, "{noext}"));
    /* an empty list allows nothing, as in GDAL */
    assert_false(vt__policy_allowed_name("/vsis3/b/x.tif", NULL, ""));
}

/* A TIFF header with GDAL's structural metadata block. */
static size_t ghost(unsigned char *buf, size_t cap, int bigtiff,
                    const char *md)
{
    size_t off = bigtiff ? 16 : 8, n;
    memset(buf, 0, cap);
    memcpy(buf, bigtiff ? "II+\0" : "II*\0", 4);
    n = (size_t)snprintf((char *)buf + off, cap - off,
                         "GDAL_STRUCTURAL_METADATA_SIZE=%06zu bytes\n%s",
                         strlen(md), md);
    return off + n;
}

static void test_is_cog(void **state)
{
    static const char cog[] = "LAYOUT=IFDS_BEFORE_DATA\nBLOCK_ORDER=ROW_MAJOR\n"
                              "BLOCK_LEADER=SIZE_AS_UINT4\n"
                              "BLOCK_TRAILER=LAST_4_BYTES_REPEATED\n"
                              "KNOWN_INCOMPATIBLE_EDITION=NO\n ";
    static const char edited[] = "LAYOUT=IFDS_BEFORE_DATA\nBLOCK_ORDER=ROW_MAJOR\n"
                                 "BLOCK_LEADER=SIZE_AS_UINT4\n"
                                 "BLOCK_TRAILER=LAST_4_BYTES_REPEATED\n"
                                 "KNOWN_INCOMPATIBLE_EDITION=YES\n";
    static const char ifds_only[] = "LAYOUT=IFDS_BEFORE_DATA\n";
    unsigned char buf[512];
    size_t n;
    (void)state;
    n = ghost(buf, sizeof(buf), 0, cog);
    assert_true(vt__policy_is_cog(buf, n));
    n = ghost(buf, sizeof(buf), 1, cog);
    assert_true(vt__policy_is_cog(buf, n));
    buf[0] = 'M'; /* "MI": not a TIFF */
    assert_false(vt__policy_is_cog(buf, n));
    n = ghost(buf, sizeof(buf), 0, edited);
    assert_false(vt__policy_is_cog(buf, n));
    n = ghost(buf, sizeof(buf), 0, ifds_only);
    assert_false(vt__policy_is_cog(buf, n));
    n = ghost(buf, sizeof(buf), 0, cog);
    assert_false(vt__policy_is_cog(buf, 40)); /* cut before the metadata */
    memcpy(buf + 8, "GDAL_STRUCTURAL_METADATA_SIZE=00x140", 36);
    assert_false(vt__policy_is_cog(buf, n));
    /* a plain TIFF: IFD offset right after the header */
    memset(buf, 0, sizeof(buf));
    memcpy(buf, "II*\0\x08\0\0\0", 8);
    assert_false(vt__policy_is_cog(buf, sizeof(buf)));
    assert_false(vt__policy_is_cog(buf, 3));
}

static void test_dir_like(void **state)
{
    (void)state;
    assert_true(vt__policy_is_dir_like("bucket"));
    assert_true(vt__policy_is_dir_like("bucket/"));
    assert_true(vt__policy_is_dir_like("bucket/prefix/"));
    assert_true(vt__policy_is_dir_like(""));
    assert_false(vt__policy_is_dir_like("bucket/k.tif"));
}

static void test_parse_size(void **state)
{
    uint64_t v;
    (void)state;
    assert_int_equal(vt__parse_size("123", &v), 0);
    assert_int_equal(v, 123);
    assert_int_equal(vt__parse_size("64K", &v), 0);
    assert_int_equal(v, 65536);
    assert_int_equal(vt__parse_size("8MB", &v), 0);
    assert_int_equal(v, 8u << 20);
    assert_int_equal(vt__parse_size(" 2g", &v), 0);
    assert_int_equal(v, 2ull << 30);
    assert_int_not_equal(vt__parse_size("abc", &v), 0);
    assert_int_not_equal(vt__parse_size("-5", &v), 0);
    assert_int_not_equal(vt__parse_size("5X", &v), 0);
    assert_int_not_equal(vt__parse_size("99999999999999999999", &v), 0);
    assert_int_not_equal(vt__parse_size("18446744073709551615G", &v), 0);
}

static void test_gdal_supported(void **state)
{
    (void)state;
    assert_true(vt__policy_gdal_supported(3060200, 3, 6));   /* 3.6.2 */
    assert_true(vt__policy_gdal_supported(3060400, 3, 6));   /* 3.6.4 */
    assert_false(vt__policy_gdal_supported(3070000, 3, 6));  /* ABI changed */
    assert_false(vt__policy_gdal_supported(3050300, 3, 5));  /* < 3.6 */
    assert_false(vt__policy_gdal_supported(3060200, 3, 7));
    assert_false(vt__policy_gdal_supported(4060200, 3, 6));
    assert_false(vt__policy_gdal_supported(0, 3, 6));        /* unparsable */
}

/* GDAL_SKIP / OGR_SKIP as GDALDriverManager::AutoSkipDrivers splits them. */
static void test_skipped(void **state)
{
    (void)state;
    assert_false(vt__policy_skipped(NULL, NULL, "VSITUNE"));
    assert_false(vt__policy_skipped("", "", "VSITUNE"));
    assert_true(vt__policy_skipped("VSITUNE", NULL, "VSITUNE"));
    assert_true(vt__policy_skipped("vsitune", NULL, "VSITUNE"));
    assert_true(vt__policy_skipped("GTiff VSITUNE", NULL, "VSITUNE"));
    assert_true(vt__policy_skipped("GTiff,VSITUNE", NULL, "VSITUNE"));
    assert_true(vt__policy_skipped(",,VSITUNE,", NULL, "VSITUNE"));
    assert_true(vt__policy_skipped("  VSITUNE  ", NULL, "VSITUNE"));
    /* a comma makes ',' the only separator: " VSITUNE" is another name */
    assert_false(vt__policy_skipped("GTiff, VSITUNE", NULL, "VSITUNE"));
    assert_false(vt__policy_skipped("GTiff VSITUNE,JPEG", NULL, "VSITUNE"));
    assert_false(vt__policy_skipped("VSITUNE2 XVSITUNE", NULL, "VSITUNE"));
    assert_false(vt__policy_skipped("GTiff,JPEG", "GPKG", "VSITUNE"));
    /* OGR_SKIP: ',' only */
    assert_true(vt__policy_skipped(NULL, "GPKG,VSITUNE", "VSITUNE"));
    assert_false(vt__policy_skipped(NULL, "GPKG VSITUNE", "VSITUNE"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allowed_name),
        cmocka_unit_test(test_is_cog),
        cmocka_unit_test(test_dir_like),
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_gdal_supported),
        cmocka_unit_test(test_skipped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
