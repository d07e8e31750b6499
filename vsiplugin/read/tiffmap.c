/* tiffmap.c: what a TIFF's first bytes say (see tiffmap.h): where its
 * structure ends (for hdrsize.c) and the byte spans of its images (for
 * readahead). Why its own file: a parser of outside bytes (they come from a
 * server), tested and fuzzed alone (tests/unit/test_tiffmap.c,
 * tests/fuzz/fuzz_tiffmap.c). One reader of the header and one walker of
 * the IFD chain serve both questions; ifd_at() and entry_at() are the only
 * places that check an offset read from the bytes against their length.
 * Reads nothing past the bytes given. */
#include "read/tiffmap.h"

#define HEAD_MAX_IFDS 1024   /* structure end: the walk stops there */
#define SPAN_MAX_IFDS 256    /* spans: a longer chain, nothing known */

enum { TAG_STRIP_OFFSETS = 273, TAG_STRIP_COUNTS = 279,
       TAG_TILE_OFFSETS = 324, TAG_TILE_COUNTS = 325 };

typedef struct tiff {
    const unsigned char *p;
    size_t len;
    int be;       /* big-endian ("MM") */
    int big;      /* BigTIFF: 8-byte offsets and counts, 20-byte entries */
} tiff;

/* One IFD: where it lies and where the next one is. */
typedef struct ifd {
    uint64_t off;     /* its first byte (the entry count) */
    uint64_t n;       /* its entries */
    uint64_t end;     /* one past its next-IFD offset */
    uint64_t next;    /* the next IFD's offset; 0: the last */
} ifd;

/* One IFD entry and where its values are. */
typedef struct entry {
    unsigned tag, type;
    unsigned w;       /* bytes per value; 0: a type of unknown size */
    int inl;          /* the values fit in the entry itself */
    uint64_t count;
    uint64_t at;      /* where the values start */
} entry;

enum { IFD_IN, IFD_PAST, IFD_BAD };
enum { WALK_END, WALK_LIMIT, WALK_PAST, WALK_BAD };

/* Called on each IFD of the chain that lies in the bytes; non-zero stops
 * the walk (WALK_BAD). */
typedef int (*ifd_fn)(const tiff *t, const ifd *d, void *arg);

/* n (<= 8) bytes at off as an unsigned integer in the file's byte order;
 * the caller checked off + n <= len. */
static uint64_t get(const tiff *t, uint64_t off, unsigned n)
{
    uint64_t v = 0;
    unsigned i;

    for (i = 0; i < n; i++) {
        unsigned k = t->be ? i : n - 1 - i;
        v = (v << 8) | t->p[off + k];
    }
    return v;
}

/* Bytes per value of a TIFF field type; 0: unknown. */
static unsigned type_size(uint64_t type)
{
    switch (type) {
    case 1: case 2: case 6: case 7:
        return 1;                  /* BYTE ASCII SBYTE UNDEFINED */
    case 3: case 8:
        return 2;                  /* SHORT SSHORT */
    case 4: case 9: case 11: case 13:
        return 4;                  /* LONG SLONG FLOAT IFD */
    case 5: case 10: case 12: case 16: case 17: case 18:
        return 8;                  /* RATIONAL SRATIONAL DOUBLE LONG8 SLONG8
                                      IFD8 */
    default:
        return 0;
    }
}

/* The header of len bytes at p (classic or BigTIFF, either byte order)
 * into *t; *first: the first IFD's offset, *hlen: the header's length.
 * 0 when the bytes are not a TIFF. */
static int open_header(tiff *t, const unsigned char *p, size_t len,
                       uint64_t *first, uint64_t *hlen)
{
    uint64_t magic;

    t->p = p;
    t->len = len;
    t->be = t->big = 0;
    if (len < 8 || !((p[0] == 'I' && p[1] == 'I') ||
                     (p[0] == 'M' && p[1] == 'M')))
        return 0;
    t->be = p[0] == 'M';
    magic = get(t, 2, 2);
    if (magic == 43) {
        if (len < 16 || get(t, 4, 2) != 8 || get(t, 6, 2) != 0)
            return 0;
        t->big = 1;
        *hlen = 16;
        *first = get(t, 8, 8);
        return 1;
    }
    if (magic != 42)
        return 0;
    *hlen = 8;
    *first = get(t, 4, 4);
    return 1;
}

/* The IFD at off into *d: IFD_IN when all of it (count, entries, next
 * offset) lies in the bytes; IFD_PAST when not (d->end then a lower bound
 * of its end); IFD_BAD when its size overflows. */
static int ifd_at(const tiff *t, uint64_t off, ifd *d)
{
    unsigned cw = t->big ? 8 : 2, ew = t->big ? 20 : 12, vw = t->big ? 8 : 4;

    d->off = off;
    d->n = d->next = 0;
    if (off > t->len || t->len - off < cw) {
        d->end = off + cw;
        return IFD_PAST;
    }
    d->n = get(t, off, cw);
    if (d->n > (UINT64_MAX - off - cw - vw) / ew)
        return IFD_BAD;
    d->end = off + cw + d->n * ew + vw;
    if (d->end > t->len)
        return IFD_PAST;
    d->next = get(t, d->end - vw, vw);
    return IFD_IN;
}

/* Entry i of d (an IFD_IN one) into *e. 0 when its values' end overflows
 * (only an entry of known type whose values are not inline can). */
static int entry_at(const tiff *t, const ifd *d, uint64_t i, entry *e)
{
    unsigned cw = t->big ? 8 : 2, ew = t->big ? 20 : 12, vw = t->big ? 8 : 4;
    uint64_t at = d->off + cw + i * ew;

    e->tag = (unsigned)get(t, at, 2);
    e->type = (unsigned)get(t, at + 2, 2);
    e->w = type_size(e->type);
    e->count = get(t, at + 4, vw);
    e->at = at + 4 + vw;
    e->inl = e->w == 0 || e->count <= vw / e->w;
    if (e->inl)
        return 1;
    if (e->count > UINT64_MAX / e->w)
        return 0;
    e->at = get(t, at + 4 + vw, vw);
    return e->at <= UINT64_MAX - e->count * e->w;
}

/* Follows the chain from the IFD at off, calling fn on each IFD in order.
 * WALK_END at an offset of 0; WALK_LIMIT when max IFDs were seen and the
 * chain goes on (a loop ends so); WALK_PAST at an IFD not all in the bytes
 * (*past: a lower bound of its end); WALK_BAD at one whose size overflows,
 * or when fn said stop. */
static int walk(const tiff *t, uint64_t off, unsigned max, ifd_fn fn,
                void *arg, uint64_t *past)
{
    unsigned k;
    ifd d;

    for (k = 0; off != 0; k++) {
        int r;
        if (k == max)
            return WALK_LIMIT;
        r = ifd_at(t, off, &d);
        if (r == IFD_PAST) {
            *past = d.end;
            return WALK_PAST;
        }
        if (r == IFD_BAD || fn(t, &d, arg) != 0)
            return WALK_BAD;
        off = d.next;
    }
    return WALK_END;
}

/* Where the structure ends: raises *arg (a uint64_t) to the end of the IFD
 * and of each out-of-line value of a known type. */
static int head_ifd(const tiff *t, const ifd *d, void *arg)
{
    uint64_t *end = arg, i;

    if (d->end > *end)
        *end = d->end;
    for (i = 0; i < d->n; i++) {
        entry e;
        if (!entry_at(t, d, i, &e))
            return -1;
        if (!e.inl && e.at + e.count * e.w > *end)
            *end = e.at + e.count * e.w;
    }
    return 0;
}

vt_tiff_need vt__tiff_header_need(const unsigned char *p, size_t len,
                                  uint64_t *need)
{
    tiff t;
    uint64_t first, end, past = 0;

    *need = 0;
    if (!open_header(&t, p, len, &first, &end))
        return VT_TIFF_NOT;
    switch (walk(&t, first, HEAD_MAX_IFDS, head_ifd, &end, &past)) {
    case WALK_BAD:
        return VT_TIFF_NOT;
    case WALK_PAST:
        if (past > end)
            end = past;
        *need = end > len ? end : (uint64_t)len + 1;
        return VT_TIFF_MORE;
    default:
        *need = end;
        return VT_TIFF_EXACT;
    }
}

/* The spans found so far. */
typedef struct spans {
    vt_tiff_span *out;
    size_t cap, k;
} spans;

/* An offsets or counts array: of an unsigned integer type, not empty, all
 * inside the bytes. */
static int ints_inside(const tiff *t, const entry *e)
{
    switch (e->type) {
    case 3: case 4: case 13: case 16: case 18:
        break;                     /* SHORT LONG IFD LONG8 IFD8 */
    default:
        return 0;
    }
    return e->count != 0 && e->count <= t->len / e->w &&
           e->at <= t->len && e->count * e->w <= t->len - e->at;
}

/* The span of one IFD's image (none when it has no offsets or no counts,
 * or every tile is sparse) appended to *arg (spans). */
static int span_ifd(const tiff *t, const ifd *d, void *arg)
{
    spans *s = arg;
    entry offs = {0, 0, 0, 0, 0, 0}, cnts = offs, e;
    vt_tiff_span sp = {UINT64_MAX, 0};
    uint64_t i;

    for (i = 0; i < d->n; i++) {
        int ok = entry_at(t, d, i, &e);
        if (e.tag == TAG_TILE_OFFSETS || e.tag == TAG_STRIP_OFFSETS) {
            if (!ok || !ints_inside(t, &e))
                return -1;
            offs = e;
        } else if (e.tag == TAG_TILE_COUNTS || e.tag == TAG_STRIP_COUNTS) {
            if (!ok || !ints_inside(t, &e))
                return -1;
            cnts = e;
        }
    }
    if (offs.count != cnts.count)
        return offs.count == 0 || cnts.count == 0 ? 0 : -1;
    for (i = 0; i < offs.count; i++) {
        uint64_t o = get(t, offs.at + i * offs.w, offs.w);
        uint64_t c = get(t, cnts.at + i * cnts.w, cnts.w);
        if (c == 0)
            continue;           /* a sparse tile: no bytes */
        if (o > UINT64_MAX - c)
            return -1;
        if (o < sp.start)
            sp.start = o;
        if (o + c > sp.end)
            sp.end = o + c;
    }
    if (sp.end > sp.start) {
        if (s->k == s->cap)
            return -1;
        s->out[s->k++] = sp;
    }
    return 0;
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
    tiff t;
    uint64_t first, hlen, past;
    spans s = {out, cap, 0};

    if (n < 16 || !open_header(&t, buf, n, &first, &hlen))
        return 0;
    if (walk(&t, first, SPAN_MAX_IFDS, span_ifd, &s, &past) != WALK_END)
        return 0;
    return sort_merge(out, s.k);
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
