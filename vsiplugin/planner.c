/* planner.c: block runs and readahead (see planner.h). Pure. */
#include "planner.h"

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

uint64_t vt__readahead_update(vt_readahead *ra, uint64_t off, uint64_t len,
                              uint64_t min_win, uint64_t max_win)
{
    /* Sequential: starts where the previous read ended, or skips less than
     * min_win past it (COG tiles carry 4-byte leaders and trailers; a
     * striped file's strips can have padding between them). */
    if (off != 0 && off >= ra->next && off - ra->next <= min_win &&
        ra->next != 0) {
        if (ra->window == 0)
            ra->window = min_win;
        else if (ra->window < max_win)
            ra->window = ra->window * 2 > max_win ? max_win : ra->window * 2;
    } else {
        ra->window = 0;
    }
    ra->next = off + len;
    return ra->window;
}
