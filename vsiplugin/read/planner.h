/* planner.h: range planning, pure functions with no I/O.
 *
 * Turns what GDAL asks for into what is sent: block-index runs merged across
 * small gaps (one request instead of several round trips), capped in size,
 * and a readahead window that grows while a handle's fetches are sequential. */
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

/* Sequential-fetch detector of one file handle (zero-initialised).
 *
 * Readahead grows per network fetch, not per read: a fetch that starts
 * where this handle's previous fetch ended (at most one block later) is made
 * twice as large as that previous fetch (its own blocks plus readahead, at
 * least one block of it), up to the cap; any other fetch carries none. So
 * GDAL's small header reads (served from memory) never grow it, the first
 * fetch of a handle never carries it, a small read far from the previous
 * fetch (a COG overview tile after the header) costs only its own blocks,
 * and a scan, whose every fetch continues the last, doubles its requests'
 * sizes (about log2(size / block) requests, as stock GDAL's doubling). */
typedef struct vt_readahead {
    uint64_t next_block;   /* block right after the previous fetch (0: none) */
    uint64_t last;         /* blocks in the previous fetch, readahead included */
} vt_readahead;

/* A fetch of the missing blocks first..last (inclusive) is about to go to
 * the network; returns how many blocks past `last` to fetch with it (at most
 * max_blocks; 0 when max_blocks is 0) and records the fetch. */
uint64_t vt__readahead_fetch(vt_readahead *ra, uint64_t first, uint64_t last,
                             uint64_t max_blocks);

/* vt__readahead_fetch proposed `proposed` blocks but the fetch carries only
 * w (< proposed): the handle's record follows what is really fetched. */
void vt__readahead_cut(vt_readahead *ra, uint64_t proposed, uint64_t w);

/* The readahead of every handle of the process in flight together, bounded
 * (issue 22: 16 threads scanning took 8 MiB of it each; with the body and
 * the blocks it fills, 1.8x stock GDAL's peak RSS) and shared fairly. A
 * fetch takes its readahead from one allowance of `limit` bytes:
 * vt__readahead_take reserves up to `blocks` blocks of bs bytes, at most an
 * equal share of the allowance among the fetches holding some, and returns
 * how many it got; with any, the fetch holds some until vt__readahead_done
 * gives back what is left (vt__readahead_give: a part, holding on).
 * Thread-safe (atomic counters); a fork()ed child starts with all of it.
 */
uint64_t vt__readahead_take(uint64_t blocks, uint64_t bs, uint64_t limit);
void vt__readahead_give(uint64_t blocks, uint64_t bs);
void vt__readahead_done(uint64_t blocks, uint64_t bs);
uint64_t vt__readahead_in_flight(void); /* bytes taken, not given back */

#endif
