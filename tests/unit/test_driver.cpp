/* test_driver.cpp: the VSITUNE driver (driver.cpp) as GDAL's driver manager
 * sees it: found by name, its long name saying the version, the GDAL it was
 * built for and where it serves reads, its metadata items, a "STATS" item
 * computed at each call (not a copy from registration), no open function
 * (GDALOpen never picks it), and its unload hook run when GDAL destroys it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" { /* this cmocka.h declares its functions without C linkage */
#include <cmocka.h>
}

#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include <cpl_vsi.h>
#include <gdal.h>

extern "C" {
#include "gdal/driver.h"
#include "stats/stats.h"
}

static int unloads;

static void on_unload(void)
{
    unloads++;
}

static int setup(void **state)
{
    (void)state;
    GDALAllRegister();
    vt__driver_register("VSITUNE", "/vsitune/", "9.8.7", "3.99.1", on_unload);
    return GDALGetDriverByName("VSITUNE") ? 0 : -1;
}

static void test_names_and_items(void **state)
{
    GDALDriverH d = GDALGetDriverByName("VSITUNE");

    (void)state;
    assert_string_equal(GDALGetDriverShortName(d), "VSITUNE");
    assert_string_equal(GDALGetDriverLongName(d),
                        "vsitune 9.8.7 (built for GDAL 3.99.1): fewer requests for /vsitune/ reads");
    assert_string_equal(GDALGetMetadataItem(d, "VSITUNE_VERSION", NULL), "9.8.7");
    assert_string_equal(GDALGetMetadataItem(d, "VSITUNE_BUILT_FOR_GDAL", NULL), "3.99.1");
    assert_string_equal(GDALGetMetadataItem(d, "VSITUNE_RUNNING_GDAL", NULL),
                        GDALVersionInfo("RELEASE_NAME"));
    assert_string_equal(GDALGetMetadataItem(d, "VSITUNE_PREFIX", NULL), "/vsitune/");
    assert_string_equal(GDALGetMetadataItem(d, GDAL_DCAP_RASTER, NULL), "YES");
}

/* The number after "key": in the document (the first one). */
static long long field(const char *doc, const char *key)
{
    const char *p = strstr(doc, key);

    assert_non_null(p);
    return strtoll(p + strlen(key), NULL, 10);
}

static void test_stats_item_is_live(void **state)
{
    GDALDriverH d = GDALGetDriverByName("VSITUNE");
    const char *doc = GDALGetMetadataItem(d, "STATS", NULL);
    long long before;

    (void)state;
    assert_non_null(doc);
    assert_true(doc[0] == '{' && doc[strlen(doc) - 1] == '}');
    assert_int_equal(field(doc, "\"pid\": "), (long long)getpid());
    before = field(doc, "\"head\": {\"2xx\": ");
    {
        vt_http_attempt a = {"HEAD", 0, 200, 0.01, 0, NULL};
        vt__stats_attempt(&a);
    }
    doc = GDALGetMetadataItem(d, "STATS", NULL);
    assert_int_equal(field(doc, "\"head\": {\"2xx\": "), before + 1);
    assert_null(GDALGetMetadataItem(d, "STATS", "OTHER_DOMAIN"));
}

static void test_never_opens(void **state)
{
    static const char text[] = "not a raster of any format\n";
    VSILFILE *fp = VSIFileFromMemBuffer("/vsimem/test_driver.bin", (GByte *)text,
                                        sizeof text - 1, FALSE);
    const char *only[] = { "VSITUNE", NULL };

    (void)state;
    assert_non_null(fp);
    VSIFCloseL(fp);
    CPLPushErrorHandler(CPLQuietErrorHandler);
    assert_null(GDALOpenEx("/vsimem/test_driver.bin", GDAL_OF_RASTER, only, NULL, NULL));
    CPLPopErrorHandler();
    VSIUnlink("/vsimem/test_driver.bin");
}

static void test_unload_hook(void **state)
{
    GDALDriverH d = GDALGetDriverByName("VSITUNE");

    (void)state;
    assert_int_equal(unloads, 0);
    GDALDeregisterDriver(d);
    GDALDestroyDriver(d);
    assert_int_equal(unloads, 1);
    assert_null(GDALGetDriverByName("VSITUNE"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_items),
        cmocka_unit_test(test_stats_item_is_live),
        cmocka_unit_test(test_never_opens),
        cmocka_unit_test(test_unload_hook),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
