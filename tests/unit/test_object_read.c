/* test_object_read.c: the block read path (read/object_read.c) through its
 * interface, vt__object_read, against objects a loopback S3 (http_lab.h)
 * serves; what the server received is the judge (issue 19 item 8: each
 * module of the read path has tests of its own).
 *
 * A read returns the object's bytes; its missing blocks go out as
 * block-aligned range GETs no larger than the handle's max request size,
 * each pinned with If-Match to the ETag the object was opened with; bytes
 * once read cost no request; ranges apart by more than the merge gap are
 * separate GETs, closer ones one GET; a range outside the object is refused
 * without a request; a 412 is VT_ECHANGED and drops the object, so the
 * next open asks again; a 500 fails the read naming the object; the copy out
 * of the blocks (vt__object_copy_ranges) refuses a block shorter than a
 * range needs. The object
 * (12 MB) is larger than the header GET (64 KB), a block (64 KB) and the
 * max request size the tests set (1 MB). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_lab.h"
#include "object_lab.h"
#include "read/object_int.h"

#define BIG 12000000ULL
#define BS 65536u      /* VSITUNE_BLOCK_SIZE, as setup sets it */
#define MAXREQ 1048576u /* the handle's max request size in these tests */
#define CAP 20000u     /* cap.bin's server answers at most this many bytes */

/* /lb/<name>.bin: BIG bytes. chg.bin answers 412 past its header, bad.bin
 * 500, cap.bin at most CAP bytes of any range (Content-Range saying so);
 * anything else 404. */
static int serve_one(int fd, const char *head)
{
    char line[256];
    uint64_t first, last;

    lab_begin(head, line, sizeof line, &first, &last);
    if (strncmp(line, "GET /lb/chg.bin ", 16) == 0 && first > 0)
        return answer(fd, "412 Precondition Failed", "",
                      "<Error><Code>PreconditionFailed</Code><Message>At least one "
                      "of the pre-conditions you specified did not hold</Message></Error>");
    if (strncmp(line, "GET /lb/bad.bin ", 16) == 0 && first > 0)
        return answer(fd, "500 Internal Server Error", "",
                      "<Error><Code>InternalError</Code><Message>We encountered an "
                      "internal error. Please try again.</Message></Error>");
    if (strncmp(line, "GET /lb/cap.bin ", 16) == 0 && last - first + 1 > CAP)
        last = first + CAP - 1; /* a server capping range lengths */
    return lab_answer_object(fd, line, first, last, BIG);
}

static int setup(void **state)
{
    (void)state;
    /* the ranges below are drawn for 64 KiB blocks (the default is 16 KiB):
     * set before the first open creates the cache */
    CPLSetConfigOption("VSITUNE_BLOCK_SIZE", "65536");
    return lab_setup_s3(serve_one);
}

static vt_object *open_obj(const char *path)
{
    vt_object *o = NULL;
    long status;
    char err[512];

    assert_int_equal(lab_open(path, &o, &status, err), VT_OK);
    assert_int_equal(vt__object_size(o), BIG);
    return o;
}

/* The ranges of the logged GETs of line past the header (first > 0), in
 * log order, into first[]/last[]; returns how many. */
static int logged_ranges(const char *line, uint64_t *first, uint64_t *last, int max)
{
    int n = 0;

    pthread_mutex_lock(&log_mu);
    for (int i = 0; i < n_logged && n < max; i++) {
        uint64_t f, l;
        if (strncmp(req_log[i], line, strlen(line)) != 0)
            continue;
        lab_range(req_log[i], &f, &l);
        if (f == 0)
            continue;
        first[n] = f;
        last[n] = l;
        n++;
    }
    pthread_mutex_unlock(&log_mu);
    return n;
}

static void test_read_split_by_max_request(void **state)
{
    const vt_read_opts opts = { BS, MAXREQ, 0, 0, 0 };
    const uint64_t off = 3 * 1048576ULL + 100; /* not on a block boundary */
    const size_t len = 5 * 1048576;
    uint64_t first[64], last[64], from, to, expect;
    unsigned char *buf = malloc(len);
    char err[512];
    vt_object *o = open_obj("lb/split.bin");
    int n;

    (void)state;
    assert_non_null(buf);
    assert_int_equal(lab_read1(o, &opts, buf, off, len, err), VT_OK);
    lab_check_bytes(buf, off, len);

    /* The blocks the read touched went out in block-aligned GETs of at most
     * MAXREQ bytes, covering them once, each pinned to the ETag. */
    n = logged_ranges("GET /lb/split.bin ", first, last, 64);
    from = off / BS * BS;
    to = (off + len + BS - 1) / BS * BS; /* exclusive */
    expect = 0;
    assert_true(n >= (int)((to - from + MAXREQ - 1) / MAXREQ));
    for (int i = 0; i < n; i++) {
        assert_int_equal(first[i] % BS, 0);
        assert_int_equal((last[i] + 1) % BS, 0);
        assert_true(last[i] - first[i] + 1 <= MAXREQ);
        assert_true(first[i] >= from && last[i] < to);
        expect += last[i] - first[i] + 1;
    }
    assert_int_equal(expect, to - from);
    assert_int_equal(seen("GET /lb/split.bin ", "If-Match: \"e1\"\r\n"), n);

    /* The same bytes again: from memory. */
    memset(buf, 0, len);
    assert_int_equal(lab_read1(o, &opts, buf, off, len, err), VT_OK);
    lab_check_bytes(buf, off, len);
    assert_int_equal(logged_ranges("GET /lb/split.bin ", first, last, 64), n);
    vt__object_release(o);
    free(buf);
}

/* Issue 20: a server that answers every range with at most CAP bytes, its
 * Content-Range stating the shorter span (as GDAL's vsigs autotest server
 * does, and stock GDAL reads on). The open takes the size from the first
 * answer (no HEAD); reads across several blocks are byte-exact, the rest
 * of each short answer asked for further on, never the same span again. */
static void test_capped_ranges_read_on(void **state)
{
    const vt_read_opts opts = { BS, MAXREQ, 0, 0, 0 };
    const uint64_t off = 5000037; /* not on a block boundary */
    const size_t len = 200000;    /* 4 blocks, 10 times CAP */
    uint64_t first[128], last[128];
    unsigned char *buf = malloc(len);
    char err[512];
    vt_object *o = open_obj("lb/cap.bin");
    int n;

    (void)state;
    assert_non_null(buf);
    assert_int_equal(seen("HEAD /lb/cap.bin ", NULL), 0);
    assert_int_equal(lab_read1(o, &opts, buf, off, len, err), VT_OK);
    lab_check_bytes(buf, off, len);
    /* across the end of the first answer's CAP bytes */
    assert_int_equal(lab_read1(o, &opts, buf, 100, len, err), VT_OK);
    lab_check_bytes(buf, 100, len);

    n = logged_ranges("GET /lb/cap.bin ", first, last, 128);
    assert_true(n >= (int)(len / CAP));
    for (int i = 0; i < n; i++) {
        /* a block's start, the end of the GET from 0 (not listed), or ... */
        int after = first[i] % BS == 0 || first[i] == CAP;
        for (int j = 0; j < i; j++) {
            assert_false(first[j] == first[i]); /* no span asked twice */
            after |= first[j] + CAP == first[i]; /* ... where one's CAP ended */
        }
        assert_true(after);
    }
    assert_int_equal(seen("HEAD /lb/cap.bin ", NULL), 0);
    vt__object_release(o);
    free(buf);
}

/* Two ranges of one read, 2 blocks apart: merged into one GET when the merge
 * gap covers the hole, two GETs when it does not. */
static void two_ranges(const char *path, const char *line, uint64_t gap, int gets)
{
    const vt_read_opts opts = { gap, MAXREQ, 0, 0, 0 };
    unsigned char a[1000], b[1000];
    void *dst[2] = { a, b };
    uint64_t off[2] = { 40 * BS + 10, 43 * BS + 10 }, first[8], last[8];
    size_t len[2] = { sizeof a, sizeof b };
    char err[512];
    vt_object *o = open_obj(path);

    assert_int_equal(vt__object_read(o, &opts, 2, dst, off, len, NULL, err, sizeof err), VT_OK);
    lab_check_bytes(a, off[0], sizeof a);
    lab_check_bytes(b, off[1], sizeof b);
    assert_int_equal(logged_ranges(line, first, last, 8), gets);
    if (gets == 1) {
        assert_int_equal(first[0], 40 * BS);
        assert_int_equal(last[0], 44 * BS - 1);
    } else {
        assert_int_equal(first[0] == 40 * BS ? last[0] : last[1], 41 * BS - 1);
        assert_int_equal(first[0] == 40 * BS ? first[1] : first[0], 43 * BS);
    }
    vt__object_release(o);
}

static void test_merge_gap(void **state)
{
    (void)state;
    two_ranges("lb/apart.bin", "GET /lb/apart.bin ", 0, 2);
    two_ranges("lb/close.bin", "GET /lb/close.bin ", 2 * BS, 1);
}

static void test_outside_refused_without_request(void **state)
{
    const vt_read_opts opts = { BS, MAXREQ, 0, 0, 0 };
    unsigned char buf[100];
    char err[512];
    vt_object *o = open_obj("lb/edge.bin");
    int before = seen("GET /lb/edge.bin ", NULL);

    (void)state;
    assert_int_equal(lab_read1(o, &opts, buf, BIG - 50, sizeof buf, err), VT_EINVAL);
    assert_non_null(strstr(err, "lb/edge.bin"));
    assert_int_equal(seen("GET /lb/edge.bin ", NULL), before);
    /* the last 50 bytes are inside */
    assert_int_equal(lab_read1(o, &opts, buf, BIG - 50, 50, err), VT_OK);
    lab_check_bytes(buf, BIG - 50, 50);
    vt__object_release(o);
}

static void test_412_drops_object(void **state)
{
    const vt_read_opts opts = { BS, MAXREQ, 0, 0, 0 };
    unsigned char *buf = malloc(2 * MAXREQ);
    char err[512];
    vt_object *o = open_obj("lb/chg.bin");

    (void)state;
    assert_non_null(buf);
    assert_int_equal(seen("GET /lb/chg.bin ", "Range: bytes=0-"), 1);
    assert_int_equal(lab_read1(o, &opts, buf, 5 * MAXREQ, 2 * MAXREQ, err), VT_ECHANGED);
    assert_non_null(strstr(err, "chg.bin"));
    vt__object_release(o);
    /* dropped from the table: the next open asks the server again */
    o = open_obj("lb/chg.bin");
    assert_int_equal(seen("GET /lb/chg.bin ", "Range: bytes=0-"), 2);
    vt__object_release(o);
    free(buf);
}

static void test_500_fails_naming_object(void **state)
{
    const vt_read_opts opts = { BS, MAXREQ, 0, 0, 0 };
    unsigned char *buf = malloc(MAXREQ);
    char err[512];
    vt_object *o = open_obj("lb/bad.bin");

    (void)state;
    assert_non_null(buf);
    assert_int_not_equal(lab_read1(o, &opts, buf, 7 * MAXREQ, MAXREQ, err), VT_OK);
    assert_non_null(strstr(err, "bad.bin"));
    assert_non_null(strstr(err, "500"));
    /* not cached as bytes: a second read asks again */
    {
        int before = seen("GET /lb/bad.bin ", "Range: bytes=7");
        assert_int_not_equal(lab_read1(o, &opts, buf, 7 * MAXREQ, MAXREQ, err), VT_OK);
        assert_true(seen("GET /lb/bad.bin ", "Range: bytes=7") > before);
    }
    vt__object_release(o);
    free(buf);
}

/* vt__object_copy_ranges, which both read paths copy with: ranges across
 * block ends come out whole; a block shorter than a range needs, or one
 * not there, is -1. Blocks of 4 bytes: block i holds 10*i .. 10*i+3. */
typedef struct four_blocks {
    unsigned char b[3][4];
    size_t blen[3];
} four_blocks;

static const unsigned char *four_bytes(const void *ctx, uint64_t idx,
                                       size_t *blen)
{
    const four_blocks *f = ctx;

    if (idx >= 3)
        return NULL;
    *blen = f->blen[idx];
    return f->b[idx];
}

static void test_copy_ranges_across_blocks(void **state)
{
    four_blocks f = {{{0}}, {4, 4, 2}};
    unsigned char a[6] = {0}, b[3] = {0}, c[2] = {0};
    void *dst[3] = {a, b, c};
    uint64_t off[3] = {1, 9, 7};
    size_t len[3] = {6, 1, 2}, i, j;
    (void)state;

    for (i = 0; i < 3; i++)
        for (j = 0; j < 4; j++)
            f.b[i][j] = (unsigned char)(10 * i + j);
    assert_int_equal(vt__object_copy_ranges(4, 3, dst, off, len, four_bytes, &f), 0);
    assert_memory_equal(a, ((unsigned char[]){1, 2, 3, 10, 11, 12}), 6);
    assert_int_equal(b[0], 21);
    assert_memory_equal(c, ((unsigned char[]){13, 20}), 2);
    /* block 2 holds 2 bytes: offset 10 is past it; offset 12 has no block */
    off[0] = 9, len[0] = 2;
    assert_int_equal(vt__object_copy_ranges(4, 1, dst, off, len, four_bytes, &f), -1);
    off[0] = 12, len[0] = 1;
    assert_int_equal(vt__object_copy_ranges(4, 1, dst, off, len, four_bytes, &f), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_split_by_max_request),
        cmocka_unit_test(test_merge_gap),
        cmocka_unit_test(test_capped_ranges_read_on),
        cmocka_unit_test(test_outside_refused_without_request),
        cmocka_unit_test(test_412_drops_object),
        cmocka_unit_test(test_500_fails_naming_object),
        cmocka_unit_test(test_copy_ranges_across_blocks),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
