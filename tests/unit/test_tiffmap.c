/* test_tiffmap.c: what a TIFF's first bytes say (read/tiffmap.c), on TIFFs
 * built here byte by byte.
 * Where its structure ends (vt__tiff_header_need): classic little-endian
 * with two IFDs and out-of-line arrays, BigTIFF big-endian, a chain leaving
 * the bytes given, inline values, unknown types, loops, overflowing offsets
 * and non-TIFFs.
 * The spans of its images (vt__tiffmap_spans): classic and BigTIFF, both
 * byte orders, arrays inline and out of line, a mask interleaved with its
 * image, and bytes that must give nothing (truncated, looping, not TIFF). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "read/tiffmap.h"

/* ---- where the structure ends ---- */

static unsigned char hbuf[8192];

/* n bytes of v at off, in the chosen byte order. */
static void hput(int be, size_t off, uint64_t v, unsigned n)
{
    unsigned i;
    for (i = 0; i < n; i++)
        hbuf[off + (be ? n - 1 - i : i)] = (unsigned char)(v >> (8 * i));
}

/* A classic TIFF entry at e: tag, type, count, value/offset. */
static void hentry(int be, size_t e, unsigned tag, unsigned type,
                  uint32_t count, uint32_t val)
{
    hput(be, e, tag, 2);
    hput(be, e + 2, type, 2);
    hput(be, e + 4, count, 4);
    hput(be, e + 8, val, 4);
}

/* II*: IFD0 at 8 (3 entries: inline width, 100 LONG offsets at 1000,
 * 100 LONG sizes at 1400), IFD1 at 200 (1 entry: 10 DOUBLE at 3000), end. */
static size_t hclassic(int be)
{
    memset(hbuf, 0, sizeof hbuf);
    hbuf[0] = hbuf[1] = be ? 'M' : 'I';
    hput(be, 2, 42, 2);
    hput(be, 4, 8, 4);
    hput(be, 8, 3, 2);
    hentry(be, 10, 256, 3, 1, 512);          /* inline SHORT */
    hentry(be, 22, 324, 4, 100, 1000);       /* TileOffsets: 1000..1400 */
    hentry(be, 34, 325, 4, 100, 1400);       /* TileByteCounts: ..1800 */
    hput(be, 46, 200, 4);                    /* next IFD */
    hput(be, 200, 1, 2);
    hentry(be, 202, 33550, 12, 10, 3000);    /* 10 DOUBLE: ..3080 */
    hput(be, 214, 0, 4);
    return 3080;
}

static void test_classic_two_ifds(void **state)
{
    uint64_t need;
    size_t end;
    (void)state;
    end = hclassic(0);
    assert_int_equal(vt__tiff_header_need(hbuf, sizeof hbuf, &need),
                     VT_TIFF_EXACT);
    assert_int_equal(need, end);
    end = hclassic(1);
    assert_int_equal(vt__tiff_header_need(hbuf, sizeof hbuf, &need),
                     VT_TIFF_EXACT);
    assert_int_equal(need, end);
    /* the arrays need not be inside the bytes, only the IFDs */
    assert_int_equal(vt__tiff_header_need(hbuf, 300, &need), VT_TIFF_EXACT);
    assert_int_equal(need, end);
}

static void test_chain_leaves_the_bytes(void **state)
{
    uint64_t need;
    (void)state;
    hclassic(0);
    hput(0, 214, 5000, 4);               /* a third IFD at 5000 */
    assert_int_equal(vt__tiff_header_need(hbuf, 4096, &need), VT_TIFF_MORE);
    assert_true(need > 4096);
    /* the second IFD's entries cut */
    assert_int_equal(vt__tiff_header_need(hbuf, 210, &need), VT_TIFF_MORE);
    assert_true(need > 210);
}

static void test_unknown_type_and_inline(void **state)
{
    uint64_t need;
    (void)state;
    hclassic(0);
    hentry(0, 202, 33550, 99, 1000000, 7000000); /* unknown type: nothing */
    assert_int_equal(vt__tiff_header_need(hbuf, sizeof hbuf, &need),
                     VT_TIFF_EXACT);
    assert_int_equal(need, 1800);
    hentry(0, 202, 33550, 2, 4, 7000000);   /* 4 ASCII: inline */
    assert_int_equal(vt__tiff_header_need(hbuf, sizeof hbuf, &need),
                     VT_TIFF_EXACT);
    assert_int_equal(need, 1800);
}

static void test_bigtiff(void **state)
{
    uint64_t need;
    (void)state;
    memset(hbuf, 0, sizeof hbuf);
    hbuf[0] = hbuf[1] = 'M';
    hput(1, 2, 43, 2);
    hput(1, 4, 8, 2);
    hput(1, 8, 16, 8);                    /* IFD at 16 */
    hput(1, 16, 1, 8);                    /* one entry */
    hput(1, 24, 324, 2);
    hput(1, 26, 16, 2);                   /* LONG8 */
    hput(1, 28, 50, 8);                   /* 50 of them */
    hput(1, 36, 2000, 8);                 /* at 2000: ..2400 */
    hput(1, 44, 0, 8);
    assert_int_equal(vt__tiff_header_need(hbuf, sizeof hbuf, &need),
                     VT_TIFF_EXACT);
    assert_int_equal(need, 2400);
    hput(1, 28, 1, 8);                    /* one LONG8: inline */
    assert_int_equal(vt__tiff_header_need(hbuf, sizeof hbuf, &need),
                     VT_TIFF_EXACT);
    assert_int_equal(need, 52);          /* the IFD's own end */
}

static void test_not_tiff_and_broken(void **state)
{
    uint64_t need = 7;
    (void)state;
    memset(hbuf, 0, sizeof hbuf);
    memcpy(hbuf, "\x89HDF\r\n\x1a\n", 8);
    assert_int_equal(vt__tiff_header_need(hbuf, sizeof hbuf, &need),
                     VT_TIFF_NOT);
    assert_int_equal(need, 0);
    hclassic(0);
    assert_int_equal(vt__tiff_header_need(hbuf, 7, &need), VT_TIFF_NOT);
    hput(0, 2, 44, 2);                    /* neither 42 nor 43 */
    assert_int_equal(vt__tiff_header_need(hbuf, sizeof hbuf, &need),
                     VT_TIFF_NOT);
    /* an offset + size past 2^64 */
    memset(hbuf, 0, sizeof hbuf);
    hbuf[0] = hbuf[1] = 'I';
    hput(0, 2, 43, 2);
    hput(0, 4, 8, 2);
    hput(0, 8, 16, 8);
    hput(0, 16, 1, 8);
    hput(0, 26, 16, 2);
    hput(0, 28, 4, 8);
    hput(0, 36, UINT64_MAX - 8, 8);
    assert_int_equal(vt__tiff_header_need(hbuf, sizeof hbuf, &need),
                     VT_TIFF_NOT);
}

static void test_loop_is_bounded(void **state)
{
    uint64_t need;
    (void)state;
    hclassic(0);
    hput(0, 214, 8, 4);                   /* IFD1 leads back to IFD0 */
    assert_int_equal(vt__tiff_header_need(hbuf, sizeof hbuf, &need),
                     VT_TIFF_EXACT);
    assert_int_equal(need, 3080);
}

/* ---- the spans of the images ---- */

typedef struct w {
    unsigned char b[4096];
    int big, be;
} w;

static void put(w *t, size_t at, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        t->b[at + (t->be ? n - 1 - i : i)] = (unsigned char)(v >> (8 * i));
}

static void header(w *t, int big, int be, uint64_t first)
{
    memset(t->b, 0, sizeof(t->b));
    t->big = big;
    t->be = be;
    memcpy(t->b, be ? "MM" : "II", 2);
    put(t, 2, big ? 43 : 42, 2);
    if (big) {
        put(t, 4, 8, 2);
        put(t, 8, first, 8);
    } else {
        put(t, 4, first, 4);
    }
}

/* An IFD at `at` with TileOffsets at offs_at and TileByteCounts at cnts_at
 * (n LONG/LONG8 values each, written there unless n fits inline), an unrelated
 * tag first, and `next`. Returns the bytes it took. */
static size_t ifd(w *t, size_t at, const uint64_t *offs, const uint64_t *cnts,
                  unsigned n, size_t arrays_at, uint64_t next)
{
    unsigned esz = t->big ? 20 : 12, csz = t->big ? 8 : 2, vw = t->big ? 8 : 4;
    unsigned type = t->big ? 16 : 4, inl = t->big ? 8 : 4;
    size_t e = at + csz;

    put(t, at, 3, csz);
    put(t, e, 256, 2);              /* ImageWidth, SHORT 512 */
    put(t, e + 2, 3, 2);
    put(t, e + 4, 1, t->big ? 8 : 4);
    put(t, e + (t->big ? 12 : 8), 512, 2);
    for (int k = 0; k < 2; k++) {
        const uint64_t *v = k ? cnts : offs;
        size_t ek = e + (size_t)(k + 1) * esz, vat = ek + (t->big ? 12 : 8);
        put(t, ek, k ? 325 : 324, 2);
        put(t, ek + 2, type, 2);
        put(t, ek + 4, n, t->big ? 8 : 4);
        if (n * vw > inl) {
            put(t, vat, arrays_at + (size_t)k * n * vw, vw);
            vat = arrays_at + (size_t)k * n * vw;
        }
        for (unsigned i = 0; i < n; i++)
            put(t, vat + i * vw, v[i], vw);
    }
    put(t, e + 3 * esz, next, t->big ? 8 : 4);
    return csz + 3 * esz + (t->big ? 8 : 4);
}

/* A three-level COG-like file: level 2 (smallest) first, then 1, then 0;
 * the full level's mask interleaved with it. */
static size_t cog(w *t, int big, int be)
{
    uint64_t o0[] = {30000, 40000, 50000}, c0[] = {9000, 9000, 9000};
    uint64_t m0[] = {39000, 49000, 59000}, mc[] = {900, 900, 900};
    uint64_t o1[] = {20000, 24000}, c1[] = {4000, 5000};
    uint64_t o2[] = {16000}, c2[] = {3000};

    header(t, big, be, 100);
    ifd(t, 100, o0, c0, 3, 1000, 300);
    ifd(t, 300, m0, mc, 3, 1100, 500);
    ifd(t, 500, o1, c1, 2, 1200, 700);
    ifd(t, 700, o2, c2, 1, 1300, 0);
    return 2048;
}

static void check_cog(const vt_tiff_span *s, size_t n)
{
    assert_int_equal(n, 3);
    assert_int_equal(s[0].start, 16000);   /* level 2 */
    assert_int_equal(s[0].end, 19000);
    assert_int_equal(s[1].start, 20000);   /* level 1 */
    assert_int_equal(s[1].end, 29000);
    assert_int_equal(s[2].start, 30000);   /* level 0 and its mask, merged */
    assert_int_equal(s[2].end, 59900);
}

static void test_classic_and_big_both_orders(void **state)
{
    w t;
    vt_tiff_span s[8];
    (void)state;
    for (int big = 0; big < 2; big++)
        for (int be = 0; be < 2; be++) {
            size_t len = cog(&t, big, be);
            check_cog(s, vt__tiffmap_spans(t.b, len, s, 8));
        }
}

static void test_boundary(void **state)
{
    w t;
    vt_tiff_span s[8];
    size_t n;
    (void)state;
    n = vt__tiffmap_spans(t.b, cog(&t, 0, 0), s, 8);
    assert_int_equal(vt__tiffmap_boundary(s, n, 0), 16000);      /* header */
    assert_int_equal(vt__tiffmap_boundary(s, n, 16000), 19000);  /* in level 2 */
    assert_int_equal(vt__tiffmap_boundary(s, n, 18999), 19000);
    assert_int_equal(vt__tiffmap_boundary(s, n, 19000), 20000);  /* gap */
    assert_int_equal(vt__tiffmap_boundary(s, n, 25000), 29000);
    assert_int_equal(vt__tiffmap_boundary(s, n, 59899), 59900);
    assert_int_equal(vt__tiffmap_boundary(s, n, 59900), 0);      /* past all */
    assert_int_equal(vt__tiffmap_boundary(NULL, 0, 5), 0);
}

static void test_nothing_known(void **state)
{
    w t;
    vt_tiff_span s[8];
    size_t len;
    (void)state;
    len = cog(&t, 0, 0);
    /* an array past the bytes given, an IFD past them, a short buffer */
    assert_int_equal(vt__tiffmap_spans(t.b, 1100, s, 8), 0);
    assert_int_equal(vt__tiffmap_spans(t.b, 600, s, 8), 0);
    assert_int_equal(vt__tiffmap_spans(t.b, 8, s, 8), 0);
    /* more images than room */
    assert_int_equal(vt__tiffmap_spans(t.b, len, s, 2), 0);
    /* an IFD chain that loops */
    put(&t, 700 + 2 + 3 * 12, 100, 4);
    assert_int_equal(vt__tiffmap_spans(t.b, len, s, 8), 0);
    /* not a TIFF */
    cog(&t, 0, 0);
    t.b[2] = 41;
    assert_int_equal(vt__tiffmap_spans(t.b, len, s, 8), 0);
    /* BigTIFF with a wrong offset size */
    cog(&t, 1, 0);
    put(&t, 4, 4, 2);
    assert_int_equal(vt__tiffmap_spans(t.b, len, s, 8), 0);
    /* an offset + count that wraps */
    {
        uint64_t o[] = {UINT64_MAX - 10}, c[] = {100};
        header(&t, 1, 0, 100);
        ifd(&t, 100, o, c, 1, 1000, 0);
    }
    assert_int_equal(vt__tiffmap_spans(t.b, len, s, 8), 0);
}

static void test_sparse_tiles_and_no_data(void **state)
{
    w t;
    vt_tiff_span s[8];
    uint64_t o[] = {0, 5000, 0}, c[] = {0, 100, 0};
    (void)state;
    header(&t, 0, 0, 100);
    ifd(&t, 100, o, c, 3, 1000, 0);
    assert_int_equal(vt__tiffmap_spans(t.b, 2048, s, 8), 1);
    assert_int_equal(s[0].start, 5000);
    assert_int_equal(s[0].end, 5100);
    c[1] = 0; /* every tile sparse: no span, and nothing to cap */
    header(&t, 0, 0, 100);
    ifd(&t, 100, o, c, 3, 1000, 0);
    assert_int_equal(vt__tiffmap_spans(t.b, 2048, s, 8), 0);
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
        cmocka_unit_test(test_classic_and_big_both_orders),
        cmocka_unit_test(test_boundary),
        cmocka_unit_test(test_nothing_known),
        cmocka_unit_test(test_sparse_tiles_and_no_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
