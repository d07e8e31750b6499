/* planner.c: block runs and readahead (see planner.h). Pure but for the
 * process's readahead in flight, two atomic counters. */
#include "read/planner.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

size_t vt__plan_sort_unique(uint64_t *idx, size_t n)
{
    size_t i, m = 0;

    if (n == 0)
        return 0;
    qsort(idx, n, sizeof(*idx), cmp_u64);
    for (i = 1; i < n; i++) {
        if (idx[i] != idx[m])
            idx[++m] = idx[i];
    }
    return m + 1;
}

size_t vt__plan_runs(const uint64_t *idx, size_t n, uint64_t gap_blocks,
                     uint64_t max_blocks, vt_block_run *out)
{
    size_t i, nruns = 0;

    if (max_blocks == 0)
        max_blocks = 1;
    for (i = 0; i < n; i++) {
        if (nruns > 0) {
            vt_block_run *r = &out[nruns - 1];
            uint64_t end = r->first + r->count;    /* one past last */
            uint64_t gap = idx[i] - end;           /* idx sorted, unique */
            uint64_t merged = idx[i] - r->first + 1;
            if (idx[i] >= end && gap <= gap_blocks && merged <= max_blocks) {
                r->count = merged;
                continue;
            }
        }
        out[nruns].first = idx[i];
        out[nruns].count = 1;
        nruns++;
    }
    return nruns;
}

uint64_t vt__readahead_fetch(vt_readahead *ra, uint64_t first, uint64_t last,
                             uint64_t max_blocks)
{
    /* Sequential: this fetch starts where the previous one ended, or one
     * block later (a COG tile's 4-byte leader and trailer, a strip's
     * padding, can leave a block that nobody needs in between). */
    int seq = ra->next_block != 0 && first >= ra->next_block &&
              first - ra->next_block <= 1;
    uint64_t need = last - first + 1, w = 0;

    if (seq && max_blocks > 0) {
        w = 2 * ra->last > need ? 2 * ra->last - need : 0;
        if (w == 0)
            w = 1;
        if (w > max_blocks)
            w = max_blocks;
    }
    ra->last = need + w;
    ra->next_block = last + 1 + w;
    return w;
}

void vt__readahead_cut(vt_readahead *ra, uint64_t proposed, uint64_t w)
{
    if (w >= proposed)
        return;
    ra->last -= proposed - w;
    ra->next_block -= proposed - w;
}

static _Atomic uint64_t ra_in_flight; /* bytes */
static _Atomic uint64_t ra_holders;   /* fetches holding some */
static pthread_once_t ra_once = PTHREAD_ONCE_INIT;

/* A fork()ed child has one thread, the one that called fork(), never inside
 * a fetch: what the parent's other threads held is no one's in the child.
 * Without this a child forked mid-scan kept a reduced allowance for good. */
static void ra_child(void)
{
    atomic_store(&ra_in_flight, 0);
    atomic_store(&ra_holders, 0);
}

static void ra_install(void) { pthread_atfork(NULL, NULL, ra_child); }

uint64_t vt__readahead_take(uint64_t blocks, uint64_t bs, uint64_t limit)
{
    uint64_t cur, got, share;

    pthread_once(&ra_once, ra_install);
    cur = atomic_load(&ra_in_flight);
    share = bs ? limit / (atomic_load(&ra_holders) + 1) / bs : 0;

    do {
        uint64_t room = cur < limit && bs ? (limit - cur) / bs : 0;
        got = blocks < room ? blocks : room;
        if (got > share)
            got = share;
        if (got == 0)
            return 0;
    } while (!atomic_compare_exchange_weak(&ra_in_flight, &cur,
                                           cur + got * bs));
    atomic_fetch_add(&ra_holders, 1);
    return got;
}

void vt__readahead_give(uint64_t blocks, uint64_t bs)
{
    if (blocks > 0)
        atomic_fetch_sub(&ra_in_flight, blocks * bs);
}

void vt__readahead_done(uint64_t blocks, uint64_t bs)
{
    vt__readahead_give(blocks, bs);
    atomic_fetch_sub(&ra_holders, 1);
}

uint64_t vt__readahead_in_flight(void) { return atomic_load(&ra_in_flight); }
