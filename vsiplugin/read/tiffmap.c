/* tiffmap.c: the spans of a TIFF's images from its header bytes (see
 * tiffmap.h). Pure. Every offset read from the bytes is checked against n
 * before it is followed: the bytes come from a server. */
#include "read/tiffmap.h"

#include <string.h>

#define MAX_IFDS 256

enum { TAG_STRIP_OFFSETS = 273, TAG_STRIP_COUNTS = 279,
       TAG_TILE_OFFSETS = 324, TAG_TILE_COUNTS = 325 };

typedef struct tif {
    const unsigned char *buf;
    size_t n;
    int big;      /* BigTIFF: 8-byte offsets and counts, 20-byte entries */
    int be;       /* "MM": big-endian */
} tif;

/* An unsigned integer of w bytes at off (the caller checked it fits). */
static uint64_t get(const tif *t, uint64_t off, unsigned w)
{
    uint64_t v = 0;
    unsigned i;

    for (i = 0; i < w; i++) {
        unsigned char b = t->buf[off + (t->be ? i : w - 1 - i)];
        v = (v << 8) | b;
    }
    return v;
}

static int fits(const tif *t, uint64_t off, uint64_t len)
{
    return off <= t->n && len <= t->n - off;
}

/* An IFD entry's array: where its values start and how wide each is. */
typedef struct arr {
    uint64_t at, count;
    unsigned w;
} arr;

/* The entry at e: its array, when of an integer type and inside buf. */
static int entry_array(const tif *t, uint64_t e, arr *a)
{
    unsigned type = (unsigned)get(t, e + 2, 2), inl = t->big ? 8 : 4;
    uint64_t count = get(t, e + 4, t->big ? 8 : 4);

    switch (type) {
    case 3: a->w = 2; break;              /* SHORT */
    case 4: case 13: a->w = 4; break;     /* LONG, IFD */
    case 16: case 18: a->w = 8; break;    /* LONG8, IFD8 */
    default: return 0;
    }
    if (count == 0 || count > t->n / a->w)
        return 0;
    a->count = count;
    a->at = count * a->w <= inl ? e + (t->big ? 12 : 8)
                                : get(t, e + (t->big ? 12 : 8), t->big ? 8 : 4);
    return fits(t, a->at, count * a->w);
}

/* One IFD at off: its image's span into *sp (0 when it has no data), the
 * next IFD's offset into *next. Returns 0 when the IFD does not fit. */
static int one_ifd(const tif *t, uint64_t off, vt_tiff_span *sp, uint64_t *next)
{
    unsigned esz = t->big ? 20 : 12, csz = t->big ? 8 : 2, nsz = t->big ? 8 : 4;
    uint64_t ne, i, e;
    arr offs = {0, 0, 0}, cnts = {0, 0, 0};

    if (!fits(t, off, csz))
        return 0;
    ne = get(t, off, csz);
    if (ne > (t->n / esz) || !fits(t, off + csz, ne * esz + nsz))
        return 0;
    for (i = 0; i < ne; i++) {
        unsigned tag;
        e = off + csz + i * esz;
        tag = (unsigned)get(t, e, 2);
        if (tag == TAG_TILE_OFFSETS || tag == TAG_STRIP_OFFSETS) {
            if (!entry_array(t, e, &offs))
                return 0;
        } else if (tag == TAG_TILE_COUNTS || tag == TAG_STRIP_COUNTS) {
            if (!entry_array(t, e, &cnts))
                return 0;
        }
    }
    *next = get(t, off + csz + ne * esz, nsz);
    sp->start = UINT64_MAX;
    sp->end = 0;
    if (offs.count != cnts.count)
        return offs.count == 0 || cnts.count == 0 ? 1 : 0;
    for (i = 0; i < offs.count; i++) {
        uint64_t o = get(t, offs.at + i * offs.w, offs.w);
        uint64_t c = get(t, cnts.at + i * cnts.w, cnts.w);
        if (c == 0)
            continue;           /* a sparse tile: no bytes */
        if (o > UINT64_MAX - c)
            return 0;
        if (o < sp->start)
            sp->start = o;
        if (o + c > sp->end)
            sp->end = o + c;
    }
    return 1;
}

/* Sort by start (insertion: a handful of spans) and merge overlaps. */
static size_t sort_merge(vt_tiff_span *s, size_t k)
{
    size_t i, j, m = 0;

    for (i = 1; i < k; i++) {
        vt_tiff_span v = s[i];
        for (j = i; j > 0 && s[j - 1].start > v.start; j--)
            s[j] = s[j - 1];
        s[j] = v;
    }
    for (i = 0; i < k; i++) {
        if (m > 0 && s[i].start < s[m - 1].end) {
            if (s[i].end > s[m - 1].end)
                s[m - 1].end = s[i].end;
        } else {
            s[m++] = s[i];
        }
    }
    return m;
}

size_t vt__tiffmap_spans(const unsigned char *buf, size_t n, vt_tiff_span *out,
                         size_t cap)
{
    tif t = {buf, n, 0, 0};
    uint64_t off, next = 0;
    size_t k = 0, ifds;

    if (n < 16)
        return 0;
    if (!memcmp(buf, "II*\0", 4) || !memcmp(buf, "MM\0*", 4)) {
        t.be = buf[0] == 'M';
        off = get(&t, 4, 4);
    } else if (!memcmp(buf, "II+\0", 4) || !memcmp(buf, "MM\0+", 4)) {
        t.be = buf[0] == 'M';
        t.big = 1;
        if (get(&t, 4, 2) != 8 || get(&t, 6, 2) != 0)
            return 0;
        off = get(&t, 8, 8);
    } else {
        return 0;
    }
    for (ifds = 0; off != 0; ifds++) {
        vt_tiff_span sp;
        if (ifds == MAX_IFDS || !one_ifd(&t, off, &sp, &next))
            return 0;
        if (sp.end > sp.start) {
            if (k == cap)
                return 0;
            out[k++] = sp;
        }
        off = next;
    }
    return sort_merge(out, k);
}

uint64_t vt__tiffmap_boundary(const vt_tiff_span *s, size_t n, uint64_t pos)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (pos < s[i].start)
            return s[i].start;
        if (pos < s[i].end)
            return s[i].end;
    }
    return 0;
}
