/* test_suspect.c: the decode-failure signals of suspect.c, against the GDAL
 * the tests link (its real error state: CPLError, CPLErrorReset), and the
 * once-per-block memory. The drop itself and the whole path through GDAL and
 * the lab are tested in tests/integration/test_reliability.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include <cpl_error.h>

#include "read/suspect.h"

#define PATH "lab/scenes/B04.tif"
#define BLOCK_FAIL "/vsis3/" PATH ", band 1: IReadBlock failed at X offset 2, " \
                   "Y offset 2: TIFFReadEncodedTile() failed."

#define BASE_FAIL "B04.tif, band 1: IReadBlock failed at X offset 2, " \
                  "Y offset 2: TIFFReadEncodedTile() failed."

static const uint64_t OFF[2] = {1000, 9000};
static const size_t LEN[2] = {500, 3000};

/* A handle's state right after a successful two-range read. */
static void read_done(vt_suspect *s)
{
    memset(s, 0, sizeof(*s));
    vt__suspect_after_read(s, 1, 1, 2, OFF, LEN);
}

static void test_blames(void **state)
{
    (void)state;
    assert_true(vt__suspect_blames(BLOCK_FAIL, 1, PATH));
    assert_true(vt__suspect_blames("`/vsis3/" PATH "' not recognized as a "
                                   "supported file format.", 1, PATH));
    assert_false(vt__suspect_blames(BLOCK_FAIL, 0, PATH));      /* a warning */
    assert_true(vt__suspect_blames(BLOCK_FAIL + 1, -1, PATH));  /* after reset */
    assert_false(vt__suspect_blames("vsis3/" PATH ": odd tag", -1, PATH));
    assert_false(vt__suspect_blames(BLOCK_FAIL, 1, "lab/other.tif"));
    /* GDAL 3.10 on: a band's error names the file only */
    assert_true(vt__suspect_blames(BASE_FAIL, 1, PATH));
    assert_true(vt__suspect_blames(BASE_FAIL + 1, -1, PATH));   /* after reset */
    assert_false(vt__suspect_blames(BASE_FAIL + 2, -1, PATH));  /* "4.tif" */
    assert_false(vt__suspect_blames(BASE_FAIL, 1, "lab/scenes/XB04.tif"));
    assert_false(vt__suspect_blames(BASE_FAIL, 1, "lab/scenes/04.tif"));
    assert_false(vt__suspect_blames("XB04.tif, band 1: IReadBlock failed", 1, PATH));
    assert_true(vt__suspect_blames("'B04.tif' not recognized as being in a "
                                   "supported file format.", 1, PATH));
    assert_false(vt__suspect_blames("IReadBlock failed at X offset 0, Y offset "
                                    "0: vsitune: read of s3://" PATH ": HTTP "
                                    "503 SlowDown", 1, PATH));  /* ours */
    assert_false(vt__suspect_blames(NULL, 1, PATH));
    assert_false(vt__suspect_blames(BLOCK_FAIL, 1, ""));
}

static void test_within(void **state)
{
    vt_suspect s;
    uint64_t off[3];
    size_t len[3];

    (void)state;
    read_done(&s);
    assert_int_equal(s.n, 2);
    assert_true(vt__suspect_within(&s, 2, OFF, LEN));            /* same */
    off[0] = 9004; len[0] = 2000;                                /* inside */
    assert_true(vt__suspect_within(&s, 1, off, len));
    off[0] = 9004; len[0] = 2997;                                /* 1 past */
    assert_false(vt__suspect_within(&s, 1, off, len));
    off[0] = 1000; len[0] = 500; off[1] = 2000; len[1] = 10;     /* 1 outside */
    assert_false(vt__suspect_within(&s, 2, off, len));
    off[0] = 999; len[0] = 10;
    assert_false(vt__suspect_within(&s, 1, off, len));
    off[0] = 50; len[0] = 0;                                     /* empty only */
    assert_false(vt__suspect_within(&s, 1, off, len));
    off[1] = 1200; len[1] = 1; off[2] = 12000; len[2] = 0;       /* empty ignored */
    assert_true(vt__suspect_within(&s, 3, off, len));
    off[0] = UINT64_MAX - 5; len[0] = 5;                         /* no overflow */
    assert_false(vt__suspect_within(&s, 1, off, len));
}

/* Many ranges are kept as their span (for dropping), never for re-reads. */
static void test_many_ranges(void **state)
{
    vt_suspect s;
    uint64_t off[VT_SUSPECT_RANGES + 1];
    size_t len[VT_SUSPECT_RANGES + 1];

    (void)state;
    for (size_t i = 0; i <= VT_SUSPECT_RANGES; i++) {
        off[i] = 100000 - 1000 * i;
        len[i] = 10;
    }
    memset(&s, 0, sizeof(s));
    vt__suspect_after_read(&s, 1, 1, VT_SUSPECT_RANGES + 1, off, len);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.off[0], 100000 - 1000 * VT_SUSPECT_RANGES);
    assert_int_equal(s.len[0], 1000 * VT_SUSPECT_RANGES + 10);
    assert_false(s.multi[0]);
    assert_false(vt__suspect_within(&s, 1, off, len));
    vt__suspect_after_read(&s, 0, 1, 2, OFF, LEN);               /* failed */
    assert_int_equal(s.n, 0);
}

/* The last VT_SUSPECT_READS reads are kept, within VT_SUSPECT_RANGES
 * ranges; only the very last one, a multi-range, is a re-read's match. */
static void test_last_reads(void **state)
{
    vt_suspect s;
    uint64_t off[VT_SUSPECT_RANGES];
    size_t len[VT_SUSPECT_RANGES];
    uint64_t one = 0;
    size_t n1 = 1080;

    (void)state;
    read_done(&s);                                  /* multi: 2 ranges */
    vt__suspect_after_read(&s, 1, 0, 1, &one, &n1); /* a header read after */
    assert_int_equal(s.n, 3);
    assert_false(vt__suspect_within(&s, 2, OFF, LEN)); /* not just before */
    assert_false(vt__suspect_within(&s, 1, &one, &n1)); /* single: no */
    for (unsigned i = 0; i < VT_SUSPECT_READS - 2; i++)
        vt__suspect_after_read(&s, 1, 0, 1, &one, &n1);
    assert_int_equal(s.n, 2 + VT_SUSPECT_READS - 1);    /* still kept */
    vt__suspect_after_read(&s, 1, 0, 1, &one, &n1);     /* one too many */
    assert_int_equal(s.n, VT_SUSPECT_READS);
    vt__suspect_after_read(&s, 1, 1, 2, OFF, LEN);      /* multi again */
    assert_true(vt__suspect_within(&s, 2, OFF, LEN));

    /* Ranges are capped: a big read pushes out the oldest reads. */
    read_done(&s);
    for (size_t i = 0; i < VT_SUSPECT_RANGES - 1; i++) {
        off[i] = 1u << 20 | (i * 100);
        len[i] = 50;
    }
    vt__suspect_after_read(&s, 1, 1, VT_SUSPECT_RANGES - 1, off, len);
    assert_int_equal(s.n, VT_SUSPECT_RANGES - 1);
    assert_false(vt__suspect_within(&s, 2, OFF, LEN));
    assert_true(vt__suspect_within(&s, 3, off + 5, len + 5));
}

/* The error state after a read, as GDAL's own code and its clients leave
 * it: a decode failure is seen before and after a CPLErrorReset, nothing
 * else is. */
static void test_evidence(void **state)
{
    vt_suspect s;

    (void)state;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    CPLErrorReset();

    read_done(&s);
    assert_false(vt__suspect_evidence(&s, PATH));           /* nothing new */
    CPLError(CE_Failure, CPLE_AppDefined, "%s", BLOCK_FAIL);
    assert_true(vt__suspect_evidence(&s, PATH));            /* no reset */
    CPLErrorReset();                                        /* UseExceptions */
    assert_int_equal(CPLGetLastErrorMsg()[0], '\0');
    assert_true(vt__suspect_evidence(&s, PATH));            /* what it left */
    assert_false(vt__suspect_evidence(&s, "lab/other.tif"));

    read_done(&s);                          /* GDAL 3.10 on: the file name */
    CPLError(CE_Failure, CPLE_AppDefined, "%s", BASE_FAIL);
    CPLErrorReset();
    assert_true(vt__suspect_evidence(&s, PATH));

    read_done(&s);              /* a new read: that failure was before it */
    assert_false(vt__suspect_evidence(&s, PATH));
    CPLError(CE_Warning, CPLE_AppDefined, "/vsis3/" PATH ": odd tag");
    assert_false(vt__suspect_evidence(&s, PATH));
    CPLErrorReset();
    assert_false(vt__suspect_evidence(&s, PATH));

    read_done(&s);
    CPLError(CE_Failure, CPLE_AppDefined, "vsitune: read of s3://" PATH
             ": HTTP 503 SlowDown");
    assert_false(vt__suspect_evidence(&s, PATH));           /* ours */

    read_done(&s);
    CPLError(CE_Failure, CPLE_AppDefined, "%s", BLOCK_FAIL);
    CPLError(CE_Failure, CPLE_AppDefined, "%s", BLOCK_FAIL); /* same text */
    assert_true(vt__suspect_evidence(&s, PATH));            /* counter moved */

    memset(&s, 0, sizeof(s));                               /* no read kept */
    assert_false(vt__suspect_evidence(&s, PATH));
    CPLErrorReset();
    CPLPopErrorHandler();
}

static void *other_thread(void *arg)
{
    return (void *)(intptr_t)vt__suspect_evidence(arg, PATH);
}

/* Errors are per thread: another thread's use of the handle says nothing. */
static void test_evidence_other_thread(void **state)
{
    vt_suspect s;
    pthread_t t;
    void *ret = NULL;

    (void)state;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    read_done(&s);
    CPLError(CE_Failure, CPLE_AppDefined, "%s", BLOCK_FAIL);
    assert_int_equal(pthread_create(&t, NULL, other_thread, &s), 0);
    pthread_join(t, &ret);
    assert_int_equal((intptr_t)ret, 0);
    assert_true(vt__suspect_evidence(&s, PATH));
    CPLErrorReset();
    CPLPopErrorHandler();
}

static void test_once(void **state)
{
    (void)state;
    assert_true(vt__suspect_once("b/k\nE1", 3, 1000));
    assert_false(vt__suspect_once("b/k\nE1", 3, 1001));      /* refetched */
    assert_false(vt__suspect_once("b/k\nE1", 3,
                                  1000 + VT_SUSPECT_MEMORY - 1));
    assert_true(vt__suspect_once("b/k\nE1", 4, 1001));       /* other block */
    assert_true(vt__suspect_once("b/k\nE2", 3, 1001));       /* other version */
    assert_true(vt__suspect_once("b/k\nE1", 3,
                                 1000 + VT_SUSPECT_MEMORY)); /* forgotten */
    /* The memory is bounded: a thousand other drops push one out. */
    assert_true(vt__suspect_once("b/x\nE", 0, 5000));
    for (uint64_t i = 1; i <= 1024; i++)
        assert_true(vt__suspect_once("b/y\nE", i, 5000));
    assert_true(vt__suspect_once("b/x\nE", 0, 5000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blames),
        cmocka_unit_test(test_within),
        cmocka_unit_test(test_many_ranges),
        cmocka_unit_test(test_last_reads),
        cmocka_unit_test(test_evidence),
        cmocka_unit_test(test_evidence_other_thread),
        cmocka_unit_test(test_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
