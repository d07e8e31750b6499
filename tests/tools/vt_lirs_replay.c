/* vt_lirs_replay.c: replay a block-access trace through vsiplugin/cache/lirs.c, so
 * bench/policy_sim.py can show the shipped policy next to its reference
 * implementations on the same traces.
 *
 * stdin: "CAPACITY HIR_PCT NWARM" then one block id (0 <= id < 2^31) per line.
 * stdout: "HITRATIO MISSES_MEASURED MISSES_WARM" over the ids after the first
 * NWARM. The cache is driven as shmcache.c drives it: a miss takes the ghost
 * out, evicts a victim when full, then admits the block. Exit 2 on bad input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cache/lirs.h"

static vt_lirs_node *nodes;
static int32_t *node_of;      /* id -> node or -1 */
static int64_t *id_of;        /* node -> id */
static int32_t *free_nodes;
static size_t nfree;

static void gone(void *ctx, int32_t i)
{
    (void)ctx;
    node_of[id_of[i]] = -1;
    free_nodes[nfree++] = i;
}

int main(void)
{
    unsigned cap, pct;
    long nwarm, pos = 0, hits = 0, miss_m = 0, miss_w = 0, measured = 0;
    long id, maxid = 1 << 22;
    size_t nnodes, i, resident = 0;
    vt_lirs l;

    if (scanf("%u %u %ld", &cap, &pct, &nwarm) != 3 || cap == 0)
        return 2;
    nnodes = (size_t)cap * 3 + 2;
    nodes = calloc(nnodes, sizeof *nodes);
    id_of = calloc(nnodes, sizeof *id_of);
    free_nodes = calloc(nnodes, sizeof *free_nodes);
    node_of = malloc((size_t)maxid * sizeof *node_of);
    if (!nodes || !id_of || !free_nodes || !node_of)
        return 2;
    for (i = 0; i < (size_t)maxid; i++)
        node_of[i] = -1;
    for (i = nnodes; i-- > 0;)
        free_nodes[nfree++] = (int32_t)i;
    vt__lirs_init(&l, cap, pct, cap * 2);
    while (scanf("%ld", &id) == 1) {
        int32_t n;
        int hit = 0, ghost = 0;
        if (id < 0 || id >= maxid)
            return 2;
        n = node_of[id];
        if (n >= 0 && (nodes[n].status == VT_LIRS_LIR ||
                       nodes[n].status == VT_LIRS_HIR)) {
            vt__lirs_hit(&l, nodes, n, gone, NULL);
            hit = 1;
        } else {
            if (n >= 0)
                ghost = vt__lirs_take_ghost(&l, nodes, n);
            if (resident >= cap) {
                int32_t v = vt__lirs_victim(&l, nodes, 1, NULL, NULL);
                if (vt__lirs_evict(&l, nodes, v, gone, NULL))
                    gone(NULL, v);
                resident--;
            }
            if (n < 0) {
                if (nfree == 0)
                    return 3;
                n = free_nodes[--nfree];
                node_of[id] = n;
                id_of[n] = id;
            }
            vt__lirs_admit(&l, nodes, n, ghost, gone, NULL);
            resident++;
        }
        if (pos++ < nwarm) {
            miss_w += !hit;
        } else {
            measured++;
            hits += hit;
            miss_m += !hit;
        }
    }
    printf("%.6f %ld %ld\n", measured ? (double)hits / measured : 0.0, miss_m,
           miss_w);
    return 0;
}
