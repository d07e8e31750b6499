/* tiffmap.h: where the images of a TIFF keep their pixels, read from the
 * header bytes vsitune fetched at open.
 *
 * Why: a COG stores each image (full resolution, each overview level, their
 * masks) in one run of bytes, the smallest level first. Reading a level
 * whole is a sequential scan, and readahead (planner.h) doubles its fetches;
 * at the level's end it would run on into the next, larger level, whose
 * bytes the read never asked for (issue 22: 4.5 MB past a 25% level). With
 * the levels' spans known, readahead stops at the end of the span the read
 * is in. Pure: bytes in, spans out; the caller owns every buffer. */
#ifndef VT_TIFFMAP_H
#define VT_TIFFMAP_H

#include <stddef.h>
#include <stdint.h>

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
