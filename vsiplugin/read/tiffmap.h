/* tiffmap.h: what the first bytes of a TIFF say about the rest of it: where
 * its structure ends and where its images keep their pixels. One reader of
 * the classic/BigTIFF header and IFD chain (tiffmap.c) answers both.
 *
 * Where the structure ends: what an open of a TIFF (a COG above all) reads
 * before any pixel is the header, every IFD of the chain and the values its
 * entries point to (tile and strip offset and size arrays, GeoTIFF keys,
 * metadata). The end of the last of those is the header size the file needs
 * (docs/architecture.md "Header prefetch"): what hdrsize.c learns per prefix.
 *
 * Where the images are: a COG stores each image (full resolution, each
 * overview level, their masks) in one run of bytes, the smallest level
 * first. Reading a level whole is a sequential scan, and readahead
 * (planner.h) doubles its fetches; at the level's end it would run on into
 * the next, larger level, whose bytes the read never asked for (issue 22:
 * 4.5 MB past a 25% level). With the levels' spans known, readahead stops
 * at the end of the span the read is in.
 *
 * Pure: bytes in, numbers and spans out, no allocation, no GDAL; the caller
 * owns every buffer. */
#ifndef VT_TIFFMAP_H
#define VT_TIFFMAP_H

#include <stddef.h>
#include <stdint.h>

typedef enum vt_tiff_need {
    VT_TIFF_NOT = 0,     /* not a TIFF (or a broken one): nothing known */
    VT_TIFF_EXACT = 1,   /* *need is where the structure ends */
    VT_TIFF_MORE = 2     /* an IFD lies past the bytes given: the structure
                            ends at or after *need (> len) */
} vt_tiff_need;

/* The end of the TIFF structure (classic or BigTIFF, either byte order)
 * whose first len bytes are p: the largest end of the header, of each IFD
 * of the chain (at most 1024 of them) and of each entry's out-of-line
 * value. *need is 0 for VT_TIFF_NOT. Values whose type is unknown count
 * nothing (libtiff skips them too); offsets that overflow make it
 * VT_TIFF_NOT. */
vt_tiff_need vt__tiff_header_need(const unsigned char *p, size_t len,
                                  uint64_t *need);

typedef struct vt_tiff_span {
    uint64_t start;   /* first byte of the image's first tile or strip */
    uint64_t end;     /* one past the last byte of its last tile or strip */
} vt_tiff_span;

/* buf: the first n bytes of an object. When they are a TIFF or BigTIFF whose
 * whole IFD chain and every TileOffsets/TileByteCounts (or Strip...) array
 * lie inside buf, writes the spans of its images to out (at most cap),
 * sorted by start, spans that overlap (a mask interleaved with its image)
 * merged, and returns their count. Returns 0 when the bytes are not such a
 * TIFF, when anything needed lies past n, or when more than cap spans (or
 * 256 IFDs) would be needed: the caller then knows nothing and caps nothing. */
size_t vt__tiffmap_spans(const unsigned char *buf, size_t n, vt_tiff_span *out,
                         size_t cap);

/* The byte a sequential read that has reached byte `pos` should not read
 * past: the end of the span holding pos, else the start of the next span
 * (pos in a gap or before the data). 0 when no span holds or follows pos. */
uint64_t vt__tiffmap_boundary(const vt_tiff_span *s, size_t n, uint64_t pos);

#endif
