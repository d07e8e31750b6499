/* test_handler_io.c: a GDAL handle's life after the open
 * (gdal/handler_io.c): seek, tell, eof, reads at and past the end, the
 * multi-range read's refusals, what a failure becomes for GDAL (CPLError
 * class, errno), and the clearing of GDAL's own caches on close under
 * CPL_VSIL_CURL_NON_CACHED; through the VSI callbacks installed on
 * /vsitune/ against a loopback S3 (http_lab.h), whose request log is the
 * judge (issue 19 item 8). test_handler.c tests stat, open and plain reads.
 *
 * A read starting exactly at the end is 0 bytes and EOF without a request; a
 * read beyond the end of a size only stated, never seen whole, asks one HEAD
 * (once); a multi-range read with a range past the end fails with a
 * CE_Failure and no request. The objects (12 MB) are larger than the header
 * and a block. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_vsi.h>

#include "gdal/handler.h"
#include "gdal/handler_int.h"
#include "gdal/stock.h"
#include "http_lab.h"
#include "handler_lab.h"
#include "object_lab.h"

#define BIG 12000000ULL

/* GDAL's own /vsis3/ code, faked: the test counts its cache clearings. */
static int stock_clears;
static char last_cleared[256];

static int fake_stat(const char *path, VSIStatBufL *st, int flags)
{
    (void)path;
    (void)flags;
    memset(st, 0, sizeof *st);
    return -1;
}

static void fake_partial_clear(const char *path)
{
    snprintf(last_cleared, sizeof last_cleared, "%s", path);
    stock_clears++;
}

static const vt_stock_callbacks fake_stock = { fake_stat, NULL, fake_partial_clear };

/* /lb/....bin: BIG bytes (HEAD too); /lb/bad.bin: 500 past its header;
 * anything else 404. */
static int serve_one(int fd, const char *head)
{
    char line[256];
    uint64_t first, last;

    lab_begin(head, line, sizeof line, &first, &last);
    if (strncmp(line, "HEAD /lb/", 9) == 0 && strstr(line, ".bin "))
        return lab_answer_head(fd, BIG);
    if (strncmp(line, "GET /lb/bad.bin ", 16) == 0 && first > 0)
        return answer(fd, "500 Internal Server Error", "",
                      "<Error><Code>InternalError</Code><Message>We encountered an "
                      "internal error. Please try again.</Message></Error>");
    if (strncmp(line, "GET /lb/", 8) == 0 && strstr(line, ".bin "))
        return lab_answer_range(fd, first, last, BIG, 0);
    return lab_answer_no_such_key(fd);
}

static int setup(void **state)
{
    (void)state;
    return handler_lab_setup(serve_one, &fake_stock);
}

static void test_seek_tell_eof(void **state)
{
    char b[16];
    VSILFILE *fp = VSIFOpenL("/vsitune/lb/s.bin", "rb");
    int before;

    (void)state;
    assert_non_null(fp);
    before = seen("", NULL);
    assert_int_equal(VSIFSeekL(fp, 0, SEEK_END), 0);
    assert_int_equal(VSIFTellL(fp), BIG);
    /* at the end: nothing, EOF, and no request (not even a HEAD) */
    assert_int_equal(VSIFReadL(b, 1, sizeof b, fp), 0);
    assert_true(VSIFEofL(fp));
    assert_int_equal(seen("", NULL), before);
    /* a seek clears EOF; SEEK_CUR moves from the position */
    assert_int_equal(VSIFSeekL(fp, 1000, SEEK_SET), 0);
    assert_false(VSIFEofL(fp));
    assert_int_equal(VSIFSeekL(fp, 24, SEEK_CUR), 0);
    assert_int_equal(VSIFTellL(fp), 1024);
    assert_int_equal(VSIFReadL(b, 1, sizeof b, fp), sizeof b);
    for (size_t i = 0; i < sizeof b; i++)
        assert_int_equal((unsigned char)b[i], lab_byte(1024 + i));
    assert_int_equal(VSIFTellL(fp), 1024 + sizeof b);
    assert_int_equal(VSIFCloseL(fp), 0);
}

static void test_beyond_end_checks_size_once(void **state)
{
    char b[16];
    VSILFILE *fp = VSIFOpenL("/vsitune/lb/end.bin", "rb");

    (void)state;
    assert_non_null(fp);
    assert_int_equal(seen("HEAD /lb/end.bin ", NULL), 0);
    assert_int_equal(VSIFSeekL(fp, BIG + 10, SEEK_SET), 0);
    assert_int_equal(VSIFReadL(b, 1, sizeof b, fp), 0);
    assert_true(VSIFEofL(fp));
    assert_int_equal(seen("HEAD /lb/end.bin ", NULL), 1);
    /* checked: not again */
    assert_int_equal(VSIFSeekL(fp, BIG + 20, SEEK_SET), 0);
    assert_int_equal(VSIFReadL(b, 1, sizeof b, fp), 0);
    assert_int_equal(seen("HEAD /lb/end.bin ", NULL), 1);
    assert_int_equal(VSIFCloseL(fp), 0);
}

static void test_multi_range_past_end_refused(void **state)
{
    vsi_l_offset offs[2] = { 6000000, BIG - 100 };
    size_t sizes[2] = { 100, 200 };
    char a[100], b[200];
    void *data[2] = { a, b };
    VSILFILE *fp = VSIFOpenL("/vsitune/lb/mr.bin", "rb");
    int before = seen("GET /lb/mr.bin ", NULL);

    (void)state;
    assert_non_null(fp);
    CPLErrorReset();
    CPLPushErrorHandler(CPLQuietErrorHandler);
    assert_int_equal(VSIFReadMultiRangeL(2, data, offs, sizes, fp), -1);
    CPLPopErrorHandler();
    assert_int_equal(CPLGetLastErrorType(), CE_Failure);
    assert_non_null(strstr(CPLGetLastErrorMsg(), "mr.bin"));
    assert_int_equal(seen("GET /lb/mr.bin ", NULL), before);
    assert_int_equal(VSIFCloseL(fp), 0);
}

static void test_failed_read_class_and_errno(void **state)
{
    char *buf = malloc(100000);
    VSILFILE *fp = VSIFOpenL("/vsitune/lb/bad.bin", "rb");

    (void)state;
    assert_non_null(buf);
    assert_non_null(fp);
    assert_int_equal(VSIFSeekL(fp, 7000000, SEEK_SET), 0);
    CPLErrorReset();
    errno = 0;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    assert_int_equal(VSIFReadL(buf, 1, 100000, fp), 0);
    CPLPopErrorHandler();
    assert_int_equal(errno, EIO);
    assert_int_equal(CPLGetLastErrorType(), CE_Failure);
    assert_int_equal(CPLGetLastErrorNo(), CPLE_FileIO);
    assert_non_null(strstr(CPLGetLastErrorMsg(), "bad.bin"));
    assert_true(seen("GET /lb/bad.bin ", "Range: bytes=69") >= 1);
    assert_int_equal(VSIFCloseL(fp), 0);
    free(buf);
}

static void test_error_class_table(void **state)
{
    (void)state;
    assert_int_equal(vt__handler_cple_for(403, "SignatureDoesNotMatch"),
                     CPLE_AWSSignatureDoesNotMatch);
    assert_int_equal(vt__handler_cple_for(403, "InvalidAccessKeyId"),
                     CPLE_AWSInvalidCredentials);
    assert_int_equal(vt__handler_cple_for(404, "NoSuchBucket"), CPLE_AWSBucketNotFound);
    assert_int_equal(vt__handler_cple_for(404, "NoSuchKey"), CPLE_AWSObjectNotFound);
    assert_int_equal(vt__handler_cple_for(403, "AccessDenied"), CPLE_AWSAccessDenied);
    assert_int_equal(vt__handler_cple_for(500, "InternalError"), CPLE_AWSError);
    assert_int_equal(vt__handler_cple_for(0, "timed out"), CPLE_FileIO);
    assert_int_equal(vt__handler_errno_for(VT_ENOTFOUND), ENOENT);
    assert_int_equal(vt__handler_errno_for(VT_EACCESS), EACCES);
    assert_int_equal(vt__handler_errno_for(VT_EINVAL), EINVAL);
    assert_int_equal(vt__handler_errno_for(VT_ENOMEM), ENOMEM);
    assert_int_equal(vt__handler_errno_for(VT_ECHANGED), EIO);
}

static void test_close_clears_gdal_cache_when_non_cached(void **state)
{
    VSILFILE *fp;
    char b[16];

    (void)state;
    fp = VSIFOpenL("/vsitune/lb/nc/a.bin", "rb");
    assert_non_null(fp);
    assert_int_equal(VSIFReadL(b, 1, sizeof b, fp), sizeof b);
    stock_clears = 0;
    assert_int_equal(VSIFCloseL(fp), 0);
    assert_int_equal(stock_clears, 0); /* not asked for */

    CPLSetConfigOption("CPL_VSIL_CURL_NON_CACHED", "/vsis3/lb/nc");
    fp = VSIFOpenL("/vsitune/lb/nc/a.bin", "rb");
    assert_non_null(fp);
    assert_int_equal(VSIFReadL(b, 1, sizeof b, fp), sizeof b);
    stock_clears = 0;
    assert_int_equal(VSIFCloseL(fp), 0);
    CPLSetConfigOption("CPL_VSIL_CURL_NON_CACHED", NULL);
    assert_true(stock_clears >= 1);
    assert_non_null(strstr(last_cleared, "lb/nc"));
    assert_null(strstr(last_cleared, "a.bin")); /* its directory */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seek_tell_eof),
        cmocka_unit_test(test_beyond_end_checks_size_once),
        cmocka_unit_test(test_multi_range_past_end_refused),
        cmocka_unit_test(test_failed_read_class_and_errno),
        cmocka_unit_test(test_error_class_table),
        cmocka_unit_test(test_close_clears_gdal_cache_when_non_cached),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
