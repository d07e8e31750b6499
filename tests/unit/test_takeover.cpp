/* test_takeover.cpp: the takeover of GDAL's own /vsis3/ handler
 * (takeover.cpp), installed in-process on the GDAL this is built against,
 * with a loopback S3 (http_lab.h) that judges what went on the wire. Before
 * the install, GDAL's stat of a name is its own request; after it, the handler
 * object on /vsis3/ is still GDAL's (same object, same dynamic type) but a
 * stat is vsitune's one range GET of the header, and reads are vsitune's
 * range GETs; a delete runs GDAL's own code (its DELETE on the wire) and
 * makes vsitune forget the name; VSICurlClearCache() reaches GDAL's handler
 * and clears vsitune's metadata too (the cache-slot probe found its slot).
 * The install registers GDAL's own code for the VSI callbacks (stock.h):
 * vt__stock_stat, vt__stock_read_dir and vt__stock_partial_clear land in
 * GDAL's own handler (its requests, its cache), not in the hooks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" { /* this cmocka.h declares its functions without C linkage */
#include <cmocka.h>
}

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <typeinfo>

#include <cpl_conv.h>
#include <cpl_string.h>
#include <cpl_vsi.h>
#include <cpl_vsi_virtual.h>

extern "C" {
#include "gdal/handler.h"
#include "http_lab.h"
#include "gdal/stock.h"
#include "gdal/takeover.h"
}

static const uint64_t BIG = 9000000;

/* /lb/big.bin and /lb/stock.bin are BIG bytes (GET ranges, HEAD, DELETE);
 * listings are empty; anything else is 404. */
static int serve_one(int fd, const char *head)
{
    char line[256];
    uint64_t first, last;

    lab_begin(head, line, sizeof line, &first, &last);
    if (strncmp(line, "GET /lb/big.bin ", 16) == 0 ||
        strncmp(line, "GET /lb/stock.bin ", 18) == 0)
        return lab_answer_range(fd, first, last, BIG, 0);
    if (strncmp(line, "HEAD /lb/big.bin ", 17) == 0 ||
        strncmp(line, "HEAD /lb/stock.bin ", 19) == 0) {
        char h[256];
        snprintf(h, sizeof h, "HTTP/1.1 200 OK\r\nContent-Length: %llu\r\nETag: \"e1\"\r\n"
                 "Last-Modified: Tue, 01 Dec 2026 10:00:00 GMT\r\n\r\n",
                 (unsigned long long)BIG);
        return send_all(fd, h, strlen(h));
    }
    if (strncmp(line, "DELETE /lb/big.bin ", 19) == 0)
        return answer(fd, "204 No Content", "", "");
    if (strncmp(line, "GET /lb/?", 9) == 0)
        return lab_answer_empty_list(fd);
    return lab_answer_no_such_key(fd);
}

static VSIFilesystemHandler *stock_before;
static std::string stock_type;

static int setup(void **state)
{
    VSIStatBufL st;
    VSIFilesystemPluginCallbacksStruct *cb;
    int rc;

    (void)state;
    if (lab_start(serve_one))
        return -1;
    lab_as_s3();
    /* GDAL's own stat, before vsitune takes anything over: only the request
     * it sends is judged (its answer from this small server differs by
     * release: GDAL 3.13 reads no size from it) */
    CPLPushErrorHandler(CPLQuietErrorHandler);
    if (VSIStatL("/vsis3/lb/stock.bin", &st) != 0)
        CPLDebug("VT_TEST", "GDAL's own stat of stock.bin found nothing");
    CPLPopErrorHandler();
    stock_before = VSIFileManager::GetHandler("/vsis3/");
    stock_type = typeid(*stock_before).name();
    cb = VSIAllocFilesystemPluginCallbacksStruct();
    if (!cb)
        return -1;
    vt__handler_fill_callbacks(cb, &vt__backend_s3, nullptr);
    rc = vt__takeover_install("/vsis3/", VT_READER_PREFIX, &vt__backend_s3, cb, 1);
    VSIFreeFilesystemPluginCallbacksStruct(cb);
    return rc;
}

static void test_stock_stat_is_gdals(void **state)
{
    (void)state;
    /* GDAL's own stat: one request of its own shape (3.6: a GET without a
     * Range, dropped after the headers; 3.13: a GET of bytes 0-16383), not
     * vsitune's header GET */
    assert_int_equal(seen("GET /lb/stock.bin ", NULL) + seen("HEAD /lb/stock.bin ", NULL), 1);
    assert_int_equal(seen("GET /lb/stock.bin ", "Range: bytes=0-65535\r\n"), 0);
}

static void test_handler_object_still_gdal(void **state)
{
    VSIFilesystemHandler *now = VSIFileManager::GetHandler("/vsis3/");

    (void)state;
    assert_ptr_equal(now, stock_before);
    assert_string_equal(typeid(*now).name(), stock_type.c_str());
    assert_true(VSIFileManager::GetHandler("/vsitune/") != now);
    assert_int_equal(vt__takeover_install("/vsis3/", VT_READER_PREFIX, &vt__backend_s3,
                                          nullptr, 1), 0); /* idempotent */
}

/* GDAL's requests for a name: its stat (a HEAD, or a GET of its shape). */
static int gdal_asked(const char *key)
{
    char head[128], get[128];

    snprintf(head, sizeof head, "HEAD /lb/%s ", key);
    snprintf(get, sizeof get, "GET /lb/%s ", key);
    return seen(head, NULL) + seen(get, NULL);
}

static void test_registered_stock_is_gdals(void **state)
{
    VSIStatBufL st;
    char **names;
    int lists = seen("GET /lb/?", NULL);

    (void)state;
    /* stat: GDAL's own request (not vsitune's header GET) for a 404; only
     * the requests are judged, not what GDAL's stat makes of the answer */
    (void)vt__stock_stat(&vt__backend_s3, "lb/gdal.bin", &st, 0);
    assert_int_equal(gdal_asked("gdal.bin"), 1);
    assert_int_equal(seen("GET /lb/gdal.bin ", "Range: bytes=0-65535\r\n"), 0);
    /* GDAL's cache keeps the 404: no request */
    (void)vt__stock_stat(&vt__backend_s3, "lb/gdal.bin", &st, 0);
    assert_int_equal(gdal_asked("gdal.bin"), 1);
    /* GDAL's PartialClearCache (the probe's slot) drops it: asked again */
    vt__stock_partial_clear(&vt__backend_s3, "lb/gdal.bin");
    (void)vt__stock_stat(&vt__backend_s3, "lb/gdal.bin", &st, 0);
    assert_int_equal(gdal_asked("gdal.bin"), 2);
    /* a listing: GDAL's own LIST */
    names = vt__stock_read_dir(&vt__backend_s3, "lb/sub", 0);
    CSLDestroy(names);
    assert_true(seen("GET /lb/?", NULL) > lists);
}

static void test_stat_and_read_are_vsitune(void **state)
{
    VSIStatBufL st;
    unsigned char buf[1000];
    VSILFILE *fp;

    (void)state;
    assert_int_equal(VSIStatL("/vsis3/lb/big.bin", &st), 0);
    assert_int_equal(st.st_size, BIG);
    assert_int_equal(seen("HEAD /lb/big.bin ", NULL), 0);
    assert_int_equal(seen("GET /lb/big.bin ", "Range: bytes=0-65535\r\n"), 1);

    fp = VSIFOpenL("/vsis3/lb/big.bin", "rb");
    assert_non_null(fp);
    assert_int_equal(VSIFSeekL(fp, 7000000, SEEK_SET), 0);
    assert_int_equal(VSIFReadL(buf, 1, sizeof buf, fp), sizeof buf);
    for (size_t i = 0; i < sizeof buf; i++)
        assert_int_equal(buf[i], lab_byte(7000000 + i));
    assert_int_equal(VSIFCloseL(fp), 0);
    assert_int_equal(seen("HEAD /lb/big.bin ", NULL), 0);
    assert_true(seen("GET /lb/big.bin ", "If-Match: \"e1\"") >= 1);
}

/* Stat big.bin through /vsis3/; returns how many header GETs of it the
 * lab has seen since the start. */
static int stat_big(void)
{
    VSIStatBufL st;

    assert_int_equal(VSIStatL("/vsis3/lb/big.bin", &st), 0);
    assert_int_equal(st.st_size, BIG);
    return seen("GET /lb/big.bin ", "Range: bytes=0-65535\r\n");
}

static void test_delete_is_gdal_then_forgotten(void **state)
{
    int gets = stat_big();

    (void)state;
    assert_int_equal(VSIUnlink("/vsis3/lb/big.bin"), 0);
    assert_int_equal(seen("DELETE /lb/big.bin ", NULL), 1);
    /* the lab still serves it: vsitune asks again, it does not answer from
     * what it knew before the delete */
    assert_int_equal(stat_big(), gets + 1);
}

static void test_clear_cache_reaches_vsitune(void **state)
{
    int gets = stat_big();

    (void)state;
    assert_int_equal(stat_big(), gets); /* known: no request */
    VSICurlClearCache();
    assert_int_equal(stat_big(), gets + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stock_stat_is_gdals),
        cmocka_unit_test(test_handler_object_still_gdal),
        cmocka_unit_test(test_registered_stock_is_gdals),
        cmocka_unit_test(test_stat_and_read_are_vsitune),
        cmocka_unit_test(test_delete_is_gdal_then_forgotten),
        cmocka_unit_test(test_clear_cache_reaches_vsitune),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
