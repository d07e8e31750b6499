/* tiffhead.c: where a TIFF's structure ends (see tiffhead.h). Why its own
 * file: a parser of outside bytes, tested and fuzzed alone
 * (tests/unit/test_tiffhead.c), used by the header load to learn how much
 * a prefix's files need (hdrsize.c). Reads nothing past p + len. */
#include "read/tiffhead.h"

#define MAX_IFDS 1024

typedef struct tiff {
    const unsigned char *p;
    size_t len;
    int be;       /* big-endian ("MM") */
    int big;      /* BigTIFF: 8-byte offsets and counts */
} tiff;

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

/* The end of the IFD at off and of the values it points to, into *end
 * (raised, never lowered); *next: the next IFD's offset. 0, or -1 when
 * the IFD is not all inside the bytes (*end then holds a lower bound) or
 * an offset overflows (-2). */
static int walk_ifd(const tiff *t, uint64_t off, uint64_t *end,
                    uint64_t *next)
{
    unsigned cw = t->big ? 8 : 2, ew = t->big ? 20 : 12, vw = t->big ? 8 : 4;
    uint64_t n, i, stop;

    if (off > t->len || t->len - off < cw) {
        if (off + cw > *end)
            *end = off + cw;
        return -1;
    }
    n = get(t, off, cw);
    if (n > (UINT64_MAX - off - cw - vw) / ew)
        return -2;
    stop = off + cw + n * ew + vw;
    if (stop > *end)
        *end = stop;
    if (stop > t->len)
        return -1;
    for (i = 0; i < n; i++) {
        uint64_t e = off + cw + i * ew;
        uint64_t type = get(t, e + 2, 2);
        uint64_t count = get(t, e + 4, t->big ? 8 : 4);
        uint64_t at = get(t, e + 4 + vw, vw);
        unsigned ts = type_size(type);
        if (ts == 0 || count <= vw / ts)
            continue;              /* unknown, or inline in the entry */
        if (count > (UINT64_MAX / ts) || at > UINT64_MAX - count * ts)
            return -2;
        if (at + count * ts > *end)
            *end = at + count * ts;
    }
    *next = get(t, stop - vw, vw);
    return 0;
}

vt_tiff_need vt__tiff_header_need(const unsigned char *p, size_t len,
                                  uint64_t *need)
{
    tiff t = {p, len, 0, 0};
    uint64_t end, ifd, magic;
    unsigned nifd;

    *need = 0;
    if (len < 8 || !((p[0] == 'I' && p[1] == 'I') ||
                     (p[0] == 'M' && p[1] == 'M')))
        return VT_TIFF_NOT;
    t.be = p[0] == 'M';
    magic = get(&t, 2, 2);
    if (magic == 43) {
        if (len < 16 || get(&t, 4, 2) != 8 || get(&t, 6, 2) != 0)
            return VT_TIFF_NOT;
        t.big = 1;
        end = 16;
        ifd = get(&t, 8, 8);
    } else if (magic == 42) {
        end = 8;
        ifd = get(&t, 4, 4);
    } else {
        return VT_TIFF_NOT;
    }
    for (nifd = 0; ifd != 0 && nifd < MAX_IFDS; nifd++) {
        uint64_t next = 0;
        int r = walk_ifd(&t, ifd, &end, &next);
        if (r == -2)
            return VT_TIFF_NOT;
        if (r == -1) {
            *need = end > len ? end : (uint64_t)len + 1;
            return VT_TIFF_MORE;
        }
        ifd = next;
    }
    *need = end;
    return VT_TIFF_EXACT;
}
