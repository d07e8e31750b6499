/* test_tiffhead.c: where a TIFF's structure ends (read/tiffhead.c), on
 * TIFFs built byte by byte: classic little-endian with two IFDs and
 * out-of-line arrays, BigTIFF big-endian, a chain leaving the bytes given,
 * inline values, unknown types, loops, overflowing offsets and non-TIFFs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "read/tiffhead.h"

static unsigned char buf[8192];

/* n bytes of v at off, in the chosen byte order. */
static void put(int be, size_t off, uint64_t v, unsigned n)
{
    unsigned i;
    for (i = 0; i < n; i++)
        buf[off + (be ? n - 1 - i : i)] = (unsigned char)(v >> (8 * i));
}

/* A classic TIFF entry at e: tag, type, count, value/offset. */
static void entry(int be, size_t e, unsigned tag, unsigned type,
                  uint32_t count, uint32_t val)
{
    put(be, e, tag, 2);
    put(be, e + 2, type, 2);
    put(be, e + 4, count, 4);
    put(be, e + 8, val, 4);
}

/* II*: IFD0 at 8 (3 entries: inline width, 100 LONG offsets at 1000,
 * 100 LONG sizes at 1400), IFD1 at 200 (1 entry: 10 DOUBLE at 3000), end. */
static size_t classic(int be)
{
    memset(buf, 0, sizeof buf);
    buf[0] = buf[1] = be ? 'M' : 'I';
    put(be, 2, 42, 2);
    put(be, 4, 8, 4);
    put(be, 8, 3, 2);
    entry(be, 10, 256, 3, 1, 512);          /* inline SHORT */
    entry(be, 22, 324, 4, 100, 1000);       /* TileOffsets: 1000..1400 */
    entry(be, 34, 325, 4, 100, 1400);       /* TileByteCounts: ..1800 */
    put(be, 46, 200, 4);                    /* next IFD */
    put(be, 200, 1, 2);
    entry(be, 202, 33550, 12, 10, 3000);    /* 10 DOUBLE: ..3080 */
    put(be, 214, 0, 4);
    return 3080;
}

static void test_classic_two_ifds(void **state)
{
    uint64_t need;
    size_t end;
    (void)state;
    end = classic(0);
    assert_int_equal(vt__tiff_header_need(buf, sizeof buf, &need),
                     VT_TIFF_EXACT);
    assert_int_equal(need, end);
    end = classic(1);
    assert_int_equal(vt__tiff_header_need(buf, sizeof buf, &need),
                     VT_TIFF_EXACT);
    assert_int_equal(need, end);
    /* the arrays need not be inside the bytes, only the IFDs */
    assert_int_equal(vt__tiff_header_need(buf, 300, &need), VT_TIFF_EXACT);
    assert_int_equal(need, end);
}

static void test_chain_leaves_the_bytes(void **state)
{
    uint64_t need;
    (void)state;
    classic(0);
    put(0, 214, 5000, 4);               /* a third IFD at 5000 */
    assert_int_equal(vt__tiff_header_need(buf, 4096, &need), VT_TIFF_MORE);
    assert_true(need > 4096);
    /* the second IFD's entries cut */
    assert_int_equal(vt__tiff_header_need(buf, 210, &need), VT_TIFF_MORE);
    assert_true(need > 210);
}

static void test_unknown_type_and_inline(void **state)
{
    uint64_t need;
    (void)state;
    classic(0);
    entry(0, 202, 33550, 99, 1000000, 7000000); /* unknown type: nothing */
    assert_int_equal(vt__tiff_header_need(buf, sizeof buf, &need),
                     VT_TIFF_EXACT);
    assert_int_equal(need, 1800);
    entry(0, 202, 33550, 2, 4, 7000000);   /* 4 ASCII: inline */
    assert_int_equal(vt__tiff_header_need(buf, sizeof buf, &need),
                     VT_TIFF_EXACT);
    assert_int_equal(need, 1800);
}

static void test_bigtiff(void **state)
{
    uint64_t need;
    (void)state;
    memset(buf, 0, sizeof buf);
    buf[0] = buf[1] = 'M';
    put(1, 2, 43, 2);
    put(1, 4, 8, 2);
    put(1, 8, 16, 8);                    /* IFD at 16 */
    put(1, 16, 1, 8);                    /* one entry */
    put(1, 24, 324, 2);
    put(1, 26, 16, 2);                   /* LONG8 */
    put(1, 28, 50, 8);                   /* 50 of them */
    put(1, 36, 2000, 8);                 /* at 2000: ..2400 */
    put(1, 44, 0, 8);
    assert_int_equal(vt__tiff_header_need(buf, sizeof buf, &need),
                     VT_TIFF_EXACT);
    assert_int_equal(need, 2400);
    put(1, 28, 1, 8);                    /* one LONG8: inline */
    assert_int_equal(vt__tiff_header_need(buf, sizeof buf, &need),
                     VT_TIFF_EXACT);
    assert_int_equal(need, 52);          /* the IFD's own end */
}

static void test_not_tiff_and_broken(void **state)
{
    uint64_t need = 7;
    (void)state;
    memset(buf, 0, sizeof buf);
    memcpy(buf, "\x89HDF\r\n\x1a\n", 8);
    assert_int_equal(vt__tiff_header_need(buf, sizeof buf, &need),
                     VT_TIFF_NOT);
    assert_int_equal(need, 0);
    classic(0);
    assert_int_equal(vt__tiff_header_need(buf, 7, &need), VT_TIFF_NOT);
    put(0, 2, 44, 2);                    /* neither 42 nor 43 */
    assert_int_equal(vt__tiff_header_need(buf, sizeof buf, &need),
                     VT_TIFF_NOT);
    /* an offset + size past 2^64 */
    memset(buf, 0, sizeof buf);
    buf[0] = buf[1] = 'I';
    put(0, 2, 43, 2);
    put(0, 4, 8, 2);
    put(0, 8, 16, 8);
    put(0, 16, 1, 8);
    put(0, 26, 16, 2);
    put(0, 28, 4, 8);
    put(0, 36, UINT64_MAX - 8, 8);
    assert_int_equal(vt__tiff_header_need(buf, sizeof buf, &need),
                     VT_TIFF_NOT);
}

static void test_loop_is_bounded(void **state)
{
    uint64_t need;
    (void)state;
    classic(0);
    put(0, 214, 8, 4);                   /* IFD1 leads back to IFD0 */
    assert_int_equal(vt__tiff_header_need(buf, sizeof buf, &need),
                     VT_TIFF_EXACT);
    assert_int_equal(need, 3080);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classic_two_ifds),
        cmocka_unit_test(test_chain_leaves_the_bytes),
        cmocka_unit_test(test_unknown_type_and_inline),
        cmocka_unit_test(test_bigtiff),
        cmocka_unit_test(test_not_tiff_and_broken),
        cmocka_unit_test(test_loop_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
