/* lirs.h: the LIRS eviction policy on index-linked nodes (pure, no I/O).
 *
 * Why LIRS (Jiang and Zhang, SIGMETRICS 2002): the shared cache must keep a
 * useful share of a repeated scan larger than its budget (a Dask or process
 * pool pass over a region, read twice). LRU, CLOCK, S3-FIFO keep none of it:
 * each evicts a block just before the scan comes back to it. LIRS ranks
 * blocks by reuse distance: once the LIR set is full, a block seen once goes
 * through a small resident-HIR queue and leaves, so the LIR blocks survive
 * the scan. bench/policy_sim.py measured it against LRU, CLOCK, S3-FIFO,
 * SLRU and ARC on the workloads (docs/architecture.md has the table).
 *
 * Layout: the caller owns an array of vt_lirs_node (in shared memory for the
 * shared cache; any memory for tests) and one vt_lirs; nodes are named by
 * their index in the array. The structure holds no pointers, so it works at
 * any mapping address. Nodes: LIR (resident, in the stack S), HIR resident
 * (in queue Q, and in S while its recency is short), ghost (non-resident HIR
 * still in S; at most ghost_cap of them, kept in FIFO order on the q links).
 *
 * The policy decides, the caller allocates: a block enters with
 * vt__lirs_admit once its data is resident; vt__lirs_victim names the node to
 * evict and vt__lirs_evict makes it a ghost or lets it go. Nodes the policy
 * lets go (a ghost pruned from S, a ghost over the cap) are reported through
 * the `gone` callback, so the caller can free their descriptors.
 *
 * Untrusted nodes: see nnodes and bad in vt_lirs.
 *
 * Thread-safety: none; the caller serialises (the shared cache's lock). Every
 * function leaves the structure consistent, but a process killed inside one
 * may leave it half-updated: vt__lirs_reset + re-admitting every resident
 * node rebuilds it (shmcache.c does that after a lock owner died). */
#ifndef VT_LIRS_H
#define VT_LIRS_H

#include <stdint.h>

enum { VT_LIRS_NONE = 0, VT_LIRS_LIR = 1, VT_LIRS_HIR = 2, VT_LIRS_GHOST = 3 };

typedef struct vt_lirs_node {
    int32_t s_prev, s_next;  /* stack S, toward the bottom / the top */
    int32_t q_prev, q_next;  /* queue Q (HIR) or the ghost FIFO */
    uint8_t status;          /* VT_LIRS_* */
    uint8_t in_s;
    uint8_t pad[2];
} vt_lirs_node;

typedef struct vt_lirs {
    int32_t s_bottom, s_top;
    int32_t q_head, q_tail;      /* resident HIR: head is evicted first */
    int32_t g_head, g_tail;      /* ghosts, oldest first */
    uint32_t nlir, nhir, nghost;
    uint32_t lir_cap, ghost_cap;
    /* Bounds for a node array others can write (shared memory): every link
     * read from it is checked against nnodes (UINT32_MAX after init: no
     * check) and every walk is bounded by it; a link out of range or a
     * walk too long reads as the end of its list and sets bad. The shared
     * cache runs each operation on a copy of its vt_lirs with nnodes set
     * from its own validated count, and checks bad after (shmcache.c). */
    uint32_t nnodes, bad;
} vt_lirs;

typedef void (*vt_lirs_gone_fn)(void *ctx, int32_t node);

/* capacity: resident blocks the cache can hold; hir_pct: percent of it kept
 * for resident HIR blocks (at least one). ghost_cap: non-resident entries. */
void vt__lirs_init(vt_lirs *l, uint32_t capacity, uint32_t hir_pct,
                   uint32_t ghost_cap);

/* Forget every node (the caller resets each node's status to NONE). */
void vt__lirs_reset(vt_lirs *l, uint32_t capacity, uint32_t hir_pct,
                    uint32_t ghost_cap);

/* A resident node (LIR or HIR) was read. */
void vt__lirs_hit(vt_lirs *l, vt_lirs_node *n, int32_t i, vt_lirs_gone_fn gone,
                  void *ctx);

/* Node i was missed and is being fetched: if it is a ghost it leaves S now
 * and the return value says so (1: its reuse distance was short, pass it to
 * vt__lirs_admit as was_ghost); 0 otherwise. */
int vt__lirs_take_ghost(vt_lirs *l, vt_lirs_node *n, int32_t i);

/* Node i (status NONE) now holds data: make it LIR or resident HIR. */
void vt__lirs_admit(vt_lirs *l, vt_lirs_node *n, int32_t i, int was_ghost,
                    vt_lirs_gone_fn gone, void *ctx);

/* The resident node to evict next: the oldest resident HIR node, or -1.
 * accept(ctx, i) may refuse a node (it is busy): the next one is tried.
 * With lir_too, when no HIR node can go, the least recent LIR node: only for
 * a block that has shown reuse (a ghost coming back), never for a block
 * seen once, or a scan would push the LIR set out (blocks being fetched
 * hold slots outside the policy, so Q can be empty under load). */
int32_t vt__lirs_victim(vt_lirs *l, const vt_lirs_node *n, int lir_too,
                        int (*accept)(void *ctx, int32_t node), void *ctx);

/* Node i (status NONE) was missed and will not be kept (no room): remember
 * its recency as a ghost, so a reuse soon after makes it LIR. */
void vt__lirs_note_ghost(vt_lirs *l, vt_lirs_node *n, int32_t i,
                         vt_lirs_gone_fn gone, void *ctx);

/* Evict resident node i: it stays as a ghost while in S (reported through
 * `gone` later), or is let go now (returns 1: the caller frees it). */
int vt__lirs_evict(vt_lirs *l, vt_lirs_node *n, int32_t i, vt_lirs_gone_fn gone,
                   void *ctx);

/* The oldest ghost (to let go of when descriptors run short), or -1. */
int32_t vt__lirs_oldest_ghost(vt_lirs *l);

/* Take node i out of the policy entirely (invalidated), whatever its status;
 * i itself is not reported through `gone`. */
void vt__lirs_remove(vt_lirs *l, vt_lirs_node *n, int32_t i,
                     vt_lirs_gone_fn gone, void *ctx);

#endif
