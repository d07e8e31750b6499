/* sizeparse.h: the size syntax of vsitune's options, one parser for the
 * plugin (config.c) and tunerd (`tunerd detect` shows what the plugin would
 * take from VSITUNE_SHARED_CACHE_SIZE), so the two never disagree on a value.
 * Pure: no GDAL, no I/O. */
#ifndef VT_SIZEPARSE_H
#define VT_SIZEPARSE_H

#include <stdint.h>

/* A size: a whole decimal number, blanks around, an optional K, M or G
 * suffix (powers of 1024, optionally followed by B). Nothing else: no sign,
 * no fraction, no NaN or infinity, no overflow of 64 bits. 0 on success
 * (*out set), -1 otherwise (*out 0). */
int vt__parse_size(const char *s, uint64_t *out);

#endif
