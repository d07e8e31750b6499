/* test_policy.c: extension and directory policy (policy.c), and size
 * parsing (config.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config.h"
#include "policy.h"

static void test_ext_in(void **state)
{
    (void)state;
    assert_true(vt__policy_ext_in("b/scenes/x.tif", ".tif,.tiff"));
    assert_true(vt__policy_ext_in("b/scenes/X.TIF", ".tif,.tiff"));
    assert_true(vt__policy_ext_in("b/x.tiff", " .tif , .tiff "));
    assert_false(vt__policy_ext_in("b/x.tif.aux.xml", ".tif,.tiff"));
    assert_false(vt__policy_ext_in("b/x.tif.msk", ".tif,.tiff"));
    assert_false(vt__policy_ext_in("b/x.IMD", ".tif,.tiff"));
    assert_true(vt__policy_ext_in("b/x.tif.ovr", ".tif,.ovr"));
    assert_false(vt__policy_ext_in("b/B04", ".tif"));
    assert_true(vt__policy_ext_in("b/B04", ".tif,{noext}"));
    assert_false(vt__policy_ext_in("b/dir.d/B04.jp2", ".tif,{noext}"));
    assert_true(vt__policy_ext_in("b/anything", ""));
    assert_true(vt__policy_ext_in("b/anything", NULL));
}

static void test_defaults(void **state)
{
    (void)state;
    assert_true(vt__policy_ext_in("b/k.tif", VT_DEFAULT_ALLOWED_EXTENSIONS));
    assert_true(vt__policy_ext_in("b/k.vrt", VT_DEFAULT_ALLOWED_EXTENSIONS));
    assert_false(vt__policy_ext_in("b/k.tif.aux.xml", VT_DEFAULT_ALLOWED_EXTENSIONS));
    assert_false(vt__policy_ext_in("b/k.tif.msk", VT_DEFAULT_ALLOWED_EXTENSIONS));
    assert_false(vt__policy_ext_in("b/k_rpc.txt", VT_DEFAULT_ALLOWED_EXTENSIONS));
    assert_false(vt__policy_ext_in("b/k.RPB", VT_DEFAULT_ALLOWED_EXTENSIONS));
    assert_true(vt__policy_ext_in("b/k.tif", VT_DEFAULT_NO_SIBLING_EXTENSIONS));
    assert_false(vt__policy_ext_in("b/k.shp", VT_DEFAULT_NO_SIBLING_EXTENSIONS));
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ext_in),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_dir_like),
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_gdal_supported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
