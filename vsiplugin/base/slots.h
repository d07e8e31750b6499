/* slots.h: the slot a bounded table fills next.
 *
 * Three process-wide tables keep names in a fixed array and, when full,
 * replace the oldest (gdal/streaming.c: the URLs GDAL's streaming handler
 * asked about; backends/failmem.c: the last failure of each name;
 * backends/curl/curl_redirect.c: where a signed redirect led): one rule for
 * all, here. Pure: the caller holds its table's lock. */
#ifndef VT_SLOTS_H
#define VT_SLOTS_H

#include <stddef.h>

/* The index of the slot to fill in a table of cap slots of stride bytes
 * each, starting at table: the first slot whose pointer member at byte
 * offset off is NULL (a free slot), else *next, which then advances by one
 * (round robin: the oldest entry, as the table filled in order). *evict:
 * 1 when the slot returned is in use (the caller clears it first), else 0.
 * cap > 0. */
size_t vt__slot_take(const void *table, size_t stride, size_t cap, size_t off,
                     size_t *next, int *evict);

#endif
