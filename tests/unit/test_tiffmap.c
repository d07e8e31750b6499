/* test_tiffmap.c: the spans of a TIFF's images from its header bytes
 * (tiffmap.c), on TIFFs built here byte by byte: classic and BigTIFF, both
 * byte orders, arrays inline and out of line, a mask interleaved with its
 * image, and bytes that must give nothing (truncated, looping, not TIFF). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "read/tiffmap.h"

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
        cmocka_unit_test(test_classic_and_big_both_orders),
        cmocka_unit_test(test_boundary),
        cmocka_unit_test(test_nothing_known),
        cmocka_unit_test(test_sparse_tiles_and_no_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
