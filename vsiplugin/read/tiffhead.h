/* tiffhead.h: where a TIFF's structure ends, from its first bytes.
 *
 * What an open of a TIFF (a COG above all) reads before any pixel: the
 * header, every IFD of the chain and the values its entries point to (tile
 * and strip offset and size arrays, GeoTIFF keys, metadata). The end of the
 * last of those is the header size the file needs (docs/architecture.md
 * "Header prefetch"): what hdrsize.c learns per prefix. Pure: bytes in,
 * numbers out, no allocation, no GDAL. */
#ifndef VT_TIFFHEAD_H
#define VT_TIFFHEAD_H

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

#endif
