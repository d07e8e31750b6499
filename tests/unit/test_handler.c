/* test_handler.c: the VSI callbacks (handler.c) as GDAL calls them: the
 * callbacks are installed in-process on /vsitune/ (VSIInstallPluginHandler,
 * as takeover.cpp does) over the real object layer, against objects a
 * loopback S3 (http_lab.h) serves; what the server received is the judge.
 * A stat costs one range GET of the header and gives size and mtime; reads
 * at any offset give the object's bytes, the same bytes again cost no
 * request; a read past the end is short and sets EOF; multi-range reads; a
 * read the server fails returns nothing and raises a CE_Failure naming the
 * object; a handle's read options are those set when it opened; a
 * missing object's stat fails. GDAL's own /vsis3/ code, which the
 * handler consults (stock.h's registered callbacks), is a fake that knows
 * nothing. The objects (12 MB) are larger
 * than the header GET, a cache block and a readahead window. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_vsi.h>

#include "gdal/handler.h"
#include "http_lab.h"
#include "handler_lab.h"
#include "gdal/stock.h"

#define BIG 12000000ULL
#define HEADER 65536 /* VSITUNE_HEADER_SIZE's default */

/* ---- GDAL's own /vsis3/ code (takeover.cpp registers it), faked: it knows
 * nothing, and the test sees what the handler asked of it ---- */
static int stock_stats, stock_read_dirs, stock_clears;

static int fake_stat(const char *path, VSIStatBufL *st, int flags)
{
    (void)path;
    (void)flags;
    memset(st, 0, sizeof *st);
    stock_stats++;
    return -1;
}

static char **fake_read_dir(const char *path, int max_files)
{
    (void)path;
    (void)max_files;
    stock_read_dirs++;
    return NULL;
}

static void fake_partial_clear(const char *path)
{
    (void)path;
    stock_clears++;
}

static const vt_stock_callbacks fake_stock = {
    fake_stat, fake_read_dir, fake_partial_clear
};

/* /lb/big.bin, /lb/opt.bin and /lb/bad.bin are BIG bytes; bad.bin answers 500 beyond
 * its header; anything else is 404 (and an empty listing). */
static int serve_one(int fd, const char *head)
{
    char line[256];
    uint64_t first, last;

    lab_begin(head, line, sizeof line, &first, &last);
    if (strncmp(line, "GET /lb/big.bin ", 16) == 0 ||
        strncmp(line, "GET /lb/opt.bin ", 16) == 0)
        return lab_answer_range(fd, first, last, BIG, 0);
    if (strncmp(line, "GET /lb/bad.bin ", 16) == 0) {
        if (first == 0)
            return lab_answer_range(fd, first, last, BIG, 0);
        return answer(fd, "500 Internal Server Error", "",
                      "<Error><Code>InternalError</Code><Message>We encountered an internal "
                      "error. Please try again.</Message></Error>");
    }
    if (strncmp(line, "GET /lb/?", 9) == 0)
        return lab_answer_empty_list(fd);
    return lab_answer_no_such_key(fd);
}

static int setup(void **state)
{
    (void)state;
    return handler_lab_setup(serve_one, &fake_stock);
}

/* Reads n bytes at off through fp and checks them against the object. */
static void read_at(VSILFILE *fp, uint64_t off, size_t n)
{
    unsigned char *buf = malloc(n);

    assert_non_null(buf);
    assert_int_equal(VSIFSeekL(fp, off, SEEK_SET), 0);
    assert_int_equal(VSIFReadL(buf, 1, n, fp), n);
    assert_int_equal(VSIFTellL(fp), off + n);
    for (size_t i = 0; i < n; i++)
        if (buf[i] != lab_byte(off + i))
            fail_msg("byte %llu differs", (unsigned long long)(off + i));
    free(buf);
}

static void test_stat_one_header_get(void **state)
{
    VSIStatBufL st;

    (void)state;
    assert_int_equal(VSIStatL("/vsitune/lb/big.bin", &st), 0);
    assert_int_equal(st.st_size, BIG);
    assert_int_equal(st.st_mtime, 1796119200LL);
    assert_true(VSI_ISREG(st.st_mode));
    assert_int_equal(seen("GET /lb/big.bin ", NULL), 1);
    assert_int_equal(seen("GET /lb/big.bin ", "Range: bytes=0-65535\r\n"), 1);
    /* known now: a second stat costs nothing, and says it did not ask */
    assert_int_equal(VSIStatL("/vsitune/lb/big.bin", &st), 0);
    assert_int_equal(seen("GET /lb/big.bin ", NULL), 1);
    assert_int_equal(vt__handler_stat_asked(), 0);
}

static void test_reads_bytes_and_cache(void **state)
{
    VSILFILE *fp;
    int before;
    char tail[100];

    (void)state;
    fp = VSIFOpenL("/vsitune/lb/big.bin", "rb");
    assert_non_null(fp);
    read_at(fp, 100, 4000); /* the header: no request */
    before = seen("GET /lb/big.bin ", NULL);
    read_at(fp, 5000000, 300000);
    assert_true(seen("GET /lb/big.bin ", NULL) > before);
    before = seen("GET /lb/big.bin ", NULL);
    read_at(fp, 5000000 + 1000, 200000); /* inside what was read: cached */
    read_at(fp, 10, 60000);
    assert_int_equal(seen("GET /lb/big.bin ", NULL), before);
    /* every GET after the header carries the ETag the header answered */
    assert_int_equal(seen("GET /lb/big.bin ", "If-Match: \"e1\""), before - 1);

    /* past the end: short, and EOF */
    assert_int_equal(VSIFSeekL(fp, BIG - 40, SEEK_SET), 0);
    assert_int_equal(VSIFReadL(tail, 1, sizeof tail, fp), 40);
    assert_true(VSIFEofL(fp));
    for (int i = 0; i < 40; i++)
        assert_int_equal((unsigned char)tail[i], lab_byte(BIG - 40 + i));
    assert_int_equal(VSIFSeekL(fp, 0, SEEK_END), 0);
    assert_int_equal(VSIFTellL(fp), BIG);
    assert_int_equal(VSIFCloseL(fp), 0);
}

static void test_read_multi_range(void **state)
{
    enum { N = 3 };
    vsi_l_offset offs[N] = { 9000000, 700000, 11990000 };
    size_t sizes[N] = { 70000, 10, 10000 };
    void *data[N];
    VSILFILE *fp = VSIFOpenL("/vsitune/lb/big.bin", "rb");

    (void)state;
    assert_non_null(fp);
    for (int i = 0; i < N; i++) {
        data[i] = malloc(sizes[i]);
        assert_non_null(data[i]);
    }
    assert_int_equal(VSIFReadMultiRangeL(N, data, offs, sizes, fp), 0);
    for (int i = 0; i < N; i++) {
        for (size_t j = 0; j < sizes[i]; j++)
            if (((unsigned char *)data[i])[j] != lab_byte(offs[i] + j))
                fail_msg("range %d byte %zu differs", i, j);
        free(data[i]);
    }
    assert_int_equal(VSIFCloseL(fp), 0);
}

static void test_failed_read_raises(void **state)
{
    char *buf = malloc(200000);
    VSILFILE *fp;

    (void)state;
    assert_non_null(buf);
    fp = VSIFOpenL("/vsitune/lb/bad.bin", "rb");
    assert_non_null(fp);
    read_at(fp, 0, 1000); /* the header came back */
    CPLErrorReset();
    CPLPushErrorHandler(CPLQuietErrorHandler);
    assert_int_equal(VSIFSeekL(fp, 6000000, SEEK_SET), 0);
    assert_int_equal(VSIFReadL(buf, 1, 200000, fp), 0); /* never a partial buffer */
    CPLPopErrorHandler();
    assert_int_equal(CPLGetLastErrorType(), CE_Failure);
    assert_non_null(strstr(CPLGetLastErrorMsg(), "s3://lb/bad.bin"));
    assert_non_null(strstr(CPLGetLastErrorMsg(), "HTTP 500 InternalError"));
    /* the header GET, then the failed block GET (no retry: GDAL_HTTP_MAX_RETRY=0) */
    assert_int_equal(seen("GET /lb/bad.bin ", NULL), 2);
    VSIFCloseL(fp);
    free(buf);
}

/* Two 10-byte ranges two blocks apart (block b and b + 2) through fp: the
 * GETs this cost. */
static int gets_for_two_ranges(VSILFILE *fp, uint64_t b)
{
    vsi_l_offset offs[2] = { b * 65536, (b + 2) * 65536 };
    size_t sizes[2] = { 10, 10 };
    unsigned char a[10], c[10];
    void *data[2] = { a, c };
    int before = seen("GET /lb/opt.bin ", NULL);

    assert_int_equal(VSIFReadMultiRangeL(2, data, offs, sizes, fp), 0);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(a[i], lab_byte(offs[0] + i));
        assert_int_equal(c[i], lab_byte(offs[1] + i));
    }
    return seen("GET /lb/opt.bin ", NULL) - before;
}

/* A handle's read options are the ones set when it was opened
 * (vt_read_opts): VSITUNE_MERGE_GAP changed while it is open applies to the
 * handles opened after the change, not to its reads. */
static void test_options_resolved_at_open(void **state)
{
    VSILFILE *fp, *later;

    (void)state;
    CPLSetConfigOption("VSITUNE_MERGE_GAP", "0");
    fp = VSIFOpenL("/vsitune/lb/opt.bin", "rb");
    assert_non_null(fp);
    CPLSetConfigOption("VSITUNE_MERGE_GAP", "1M");
    later = VSIFOpenL("/vsitune/lb/opt.bin", "rb");
    assert_non_null(later);
    assert_int_equal(gets_for_two_ranges(fp, 100), 2);   /* gap 0: not merged */
    assert_int_equal(gets_for_two_ranges(later, 150), 1); /* 1M: one GET */
    CPLSetConfigOption("VSITUNE_MERGE_GAP", NULL);
    assert_int_equal(VSIFCloseL(fp), 0);
    assert_int_equal(VSIFCloseL(later), 0);
}

static void test_missing_stat_fails(void **state)
{
    VSIStatBufL st;

    (void)state;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    assert_int_not_equal(VSIStatL("/vsitune/lb/none.tif", &st), 0);
    CPLPopErrorHandler();
    assert_int_equal(seen("GET /lb/none.tif ", NULL), 1);
    assert_int_equal(vt__handler_stat_asked(), 1); /* the miss was asked */
}

/* What the handler asks GDAL's own code (a directory's stat, a listing,
 * GDAL's cache dropped under CPL_VSIL_CURL_NON_CACHED) lands in what was
 * registered (stock.h); with nothing registered the same calls fail
 * cleanly, and a stat vsitune answers itself still does. */
static void ask_gdal(int stat_dir, int read_dir, int clear)
{
    VSIStatBufL st;

    assert_int_equal(VSIStatExL("/vsitune/lb/dir/", &st, VSI_STAT_NATURE_FLAG), -1);
    assert_null(VSIReadDir("/vsitune/lb/dir"));
    CPLSetConfigOption("CPL_VSIL_CURL_NON_CACHED", "/vsis3/lb/");
    assert_int_equal(VSIStatL("/vsitune/lb/big.bin", &st), 0);
    CPLSetConfigOption("CPL_VSIL_CURL_NON_CACHED", NULL);
    assert_int_equal(st.st_size, BIG);
    assert_int_equal(stock_stats, stat_dir);
    assert_int_equal(stock_read_dirs, read_dir);
    assert_int_equal(stock_clears, clear);
}

static void test_gdal_questions_go_to_registered(void **state)
{
    (void)state;
    stock_stats = stock_read_dirs = stock_clears = 0;
    /* the directory's stat, then big.bin's cache-only look in GDAL's cache */
    ask_gdal(2, 1, 1);
    vt__stock_set_callbacks(NULL);
    ask_gdal(2, 1, 1);
    vt__stock_set_callbacks(&fake_stock);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stat_one_header_get),
        cmocka_unit_test(test_reads_bytes_and_cache),
        cmocka_unit_test(test_read_multi_range),
        cmocka_unit_test(test_failed_read_raises),
        cmocka_unit_test(test_options_resolved_at_open),
        cmocka_unit_test(test_missing_stat_fails),
        cmocka_unit_test(test_gdal_questions_go_to_registered),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
