/* planner.h: range planning, pure functions with no I/O.
 *
 * Turns what GDAL asks for into what is sent: block-index runs merged across
 * small gaps (one request instead of several round trips), capped in size,
 * and a readahead window that grows while a handle reads sequentially. */
#ifndef VT_PLANNER_H
#define VT_PLANNER_H

#include <stddef.h>
#include <stdint.h>

typedef struct vt_block_run {
    uint64_t first;   /* first block index */
    uint64_t count;   /* number of blocks */
} vt_block_run;

/* idx: n block indices, sorted ascending, unique. Consecutive indices form a
 * run; two runs separated by at most gap_blocks missing indices are merged
 * (the gap is fetched and discarded: cheaper than a round trip), as long as
 * a run stays at most max_blocks long (>= 1). Writes the runs to out
 * (capacity n) and returns their count. */
size_t vt__plan_runs(const uint64_t *idx, size_t n, uint64_t gap_blocks,
                     uint64_t max_blocks, vt_block_run *out);

/* Sort n indices ascending and remove duplicates in place; returns the new
 * count. */
size_t vt__plan_sort_unique(uint64_t *idx, size_t n);

/* Sequential-read detector of one file handle. */
typedef struct vt_readahead {
    uint64_t next;     /* offset right after the previous read */
    uint64_t window;   /* current readahead, bytes (0: none) */
} vt_readahead;

/* Record a read of [off, off+len) and return how many bytes past its end to
 * fetch too. A read that starts where the previous one ended, or at most
 * min_win bytes after it, doubles the window, from min_win up to max_win;
 * any other read resets it to 0. */
uint64_t vt__readahead_update(vt_readahead *ra, uint64_t off, uint64_t len,
                              uint64_t min_win, uint64_t max_win);

#endif
