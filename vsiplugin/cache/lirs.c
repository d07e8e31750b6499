/* lirs.c: the LIRS eviction policy (interface and rationale in lirs.h).
 *
 * Three intrusive doubly-linked lists over one node array: the recency stack
 * S (s_prev/s_next, bottom = least recent), the resident-HIR queue Q and the
 * ghost FIFO (both on q_prev/q_next: a node is never in both). The invariant
 * LIRS rests on: the bottom of S is an LIR node ("pruning" pops HIR and ghost
 * nodes off the bottom until it is). All operations are O(1) amortised. */
#include "cache/lirs.h"

#include <stddef.h>

#define NIL (-1)

/* ---- checked links (lirs.h: nnodes, bad) ---- */

/* v as a link: a node index below nnodes, or NIL; anything else is bad. */
static int32_t lk(vt_lirs *l, int32_t v)
{
    if (v == NIL || (v >= 0 && (uint32_t)v < l->nnodes))
        return v;
    l->bad = 1;
    return NIL;
}

/* Each link is read once (relaxed: others may write the array). */
#define LD(f) __atomic_load_n(&(f), __ATOMIC_RELAXED)
#define SP(i) lk(l, LD(n[i].s_prev))
#define SN(i) lk(l, LD(n[i].s_next))
#define QP(i) lk(l, LD(n[i].q_prev))
#define QN(i) lk(l, LD(n[i].q_next))

/* A walk longer than the array is a cycle: bad. */
static int walk_ok(vt_lirs *l, uint32_t *steps)
{
    if (++*steps <= l->nnodes)
        return 1;
    l->bad = 1;
    return 0;
}

/* ---- list primitives ---- */

static void s_unlink(vt_lirs *l, vt_lirs_node *n, int32_t i)
{
    int32_t p, x;
    if (!n[i].in_s)
        return;
    p = SP(i);
    x = SN(i);
    if (p != NIL) n[p].s_next = x;
    else l->s_bottom = x;
    if (x != NIL) n[x].s_prev = p;
    else l->s_top = p;
    n[i].s_prev = n[i].s_next = NIL;
    n[i].in_s = 0;
}

static void s_push_top(vt_lirs *l, vt_lirs_node *n, int32_t i)
{
    int32_t top;
    s_unlink(l, n, i);
    top = lk(l, l->s_top);
    n[i].s_prev = top;
    n[i].s_next = NIL;
    if (top != NIL) n[top].s_next = i;
    else l->s_bottom = i;
    l->s_top = i;
    n[i].in_s = 1;
}

/* Q and the ghost FIFO share the q links; head/tail name the list. */
static void q_unlink(vt_lirs *l, vt_lirs_node *n, int32_t *head,
                     int32_t *tail, int32_t i)
{
    int32_t p = QP(i), x = QN(i);
    if (p != NIL) n[p].q_next = x;
    else *head = x;
    if (x != NIL) n[x].q_prev = p;
    else *tail = p;
    n[i].q_prev = n[i].q_next = NIL;
}

static void q_push_tail(vt_lirs *l, vt_lirs_node *n, int32_t *head,
                        int32_t *tail, int32_t i)
{
    int32_t t = lk(l, *tail);
    n[i].q_prev = t;
    n[i].q_next = NIL;
    if (t != NIL) n[t].q_next = i;
    else *head = i;
    *tail = i;
}

/* ---- the policy ---- */

/* A ghost leaves the policy altogether. */
static void drop_ghost(vt_lirs *l, vt_lirs_node *n, int32_t i,
                       vt_lirs_gone_fn gone, void *ctx)
{
    s_unlink(l, n, i);
    q_unlink(l, n, &l->g_head, &l->g_tail, i);
    n[i].status = VT_LIRS_NONE;
    l->nghost--;
    if (gone)
        gone(ctx, i);
}

/* Let go of the oldest ghosts while there are more than ghost_cap (never
 * of `keep`, the one just added). */
static void trim_ghosts(vt_lirs *l, vt_lirs_node *n, int32_t keep,
                        vt_lirs_gone_fn gone, void *ctx)
{
    uint32_t steps = 0;
    int32_t g;
    while (l->nghost > l->ghost_cap && (g = lk(l, l->g_head)) != NIL &&
           g != keep && walk_ok(l, &steps))
        drop_ghost(l, n, g, gone, ctx);
}

/* Pop HIR and ghost nodes off the bottom of S until an LIR node is there. */
static void prune(vt_lirs *l, vt_lirs_node *n, vt_lirs_gone_fn gone, void *ctx)
{
    uint32_t steps = 0;
    int32_t j;
    while ((j = lk(l, l->s_bottom)) != NIL && n[j].status != VT_LIRS_LIR &&
           walk_ok(l, &steps)) {
        if (n[j].status == VT_LIRS_GHOST)
            drop_ghost(l, n, j, gone, ctx);
        else
            s_unlink(l, n, j);   /* resident HIR: stays in Q */
    }
}

/* The least recent LIR node becomes resident HIR (at the tail of Q). */
static void demote_bottom(vt_lirs *l, vt_lirs_node *n, vt_lirs_gone_fn gone,
                          void *ctx)
{
    int32_t j;
    prune(l, n, gone, ctx);
    j = lk(l, l->s_bottom);
    if (j == NIL)
        return;
    s_unlink(l, n, j);
    n[j].status = VT_LIRS_HIR;
    l->nlir--;
    l->nhir++;
    q_push_tail(l, n, &l->q_head, &l->q_tail, j);
    prune(l, n, gone, ctx);
}

void vt__lirs_reset(vt_lirs *l, uint32_t capacity, uint32_t hir_pct,
                    uint32_t ghost_cap)
{
    uint32_t hir = (uint32_t)((uint64_t)capacity * hir_pct / 100);
    if (hir < 1)
        hir = 1;
    l->s_bottom = l->s_top = NIL;
    l->q_head = l->q_tail = NIL;
    l->g_head = l->g_tail = NIL;
    l->nlir = l->nhir = l->nghost = 0;
    l->lir_cap = capacity > hir ? capacity - hir : 0;
    l->ghost_cap = ghost_cap;
    l->nnodes = UINT32_MAX;
    l->bad = 0;
}

void vt__lirs_init(vt_lirs *l, uint32_t capacity, uint32_t hir_pct,
                   uint32_t ghost_cap)
{
    vt__lirs_reset(l, capacity, hir_pct, ghost_cap);
}

void vt__lirs_hit(vt_lirs *l, vt_lirs_node *n, int32_t i, vt_lirs_gone_fn gone,
                  void *ctx)
{
    if (n[i].status == VT_LIRS_LIR) {
        int bottom = lk(l, l->s_bottom) == i;
        s_push_top(l, n, i);
        if (bottom)
            prune(l, n, gone, ctx);
    } else if (n[i].status == VT_LIRS_HIR) {
        if (n[i].in_s) {
            /* Reused while still in S: a short reuse distance, so LIR. */
            q_unlink(l, n, &l->q_head, &l->q_tail, i);
            n[i].status = VT_LIRS_LIR;
            l->nhir--;
            l->nlir++;
            s_push_top(l, n, i);
            if (l->nlir > l->lir_cap)
                demote_bottom(l, n, gone, ctx);
        } else {
            s_push_top(l, n, i);
            q_unlink(l, n, &l->q_head, &l->q_tail, i);
            q_push_tail(l, n, &l->q_head, &l->q_tail, i);
        }
    }
}

int vt__lirs_take_ghost(vt_lirs *l, vt_lirs_node *n, int32_t i)
{
    if (n[i].status != VT_LIRS_GHOST)
        return 0;
    s_unlink(l, n, i);
    q_unlink(l, n, &l->g_head, &l->g_tail, i);
    n[i].status = VT_LIRS_NONE;
    l->nghost--;
    return 1;
}

void vt__lirs_admit(vt_lirs *l, vt_lirs_node *n, int32_t i, int was_ghost,
                    vt_lirs_gone_fn gone, void *ctx)
{
    n[i].s_prev = n[i].s_next = n[i].q_prev = n[i].q_next = NIL;
    n[i].in_s = 0;
    if (l->nlir < l->lir_cap || was_ghost) {
        n[i].status = VT_LIRS_LIR;
        l->nlir++;
        s_push_top(l, n, i);
        if (l->nlir > l->lir_cap)
            demote_bottom(l, n, gone, ctx);
    } else {
        n[i].status = VT_LIRS_HIR;
        l->nhir++;
        s_push_top(l, n, i);
        q_push_tail(l, n, &l->q_head, &l->q_tail, i);
    }
}

int32_t vt__lirs_victim(vt_lirs *l, const vt_lirs_node *n, int lir_too,
                        int (*accept)(void *ctx, int32_t node), void *ctx)
{
    uint32_t steps = 0;
    int32_t i;
    for (i = lk(l, l->q_head); i != NIL && walk_ok(l, &steps); i = QN(i))
        if (!accept || accept(ctx, i))
            return i;
    if (!lir_too || l->bad)
        return NIL;
    steps = 0;
    for (i = lk(l, l->s_bottom); i != NIL && walk_ok(l, &steps); i = SN(i))
        if (n[i].status == VT_LIRS_LIR && (!accept || accept(ctx, i)))
            return i;
    return NIL;
}

int vt__lirs_evict(vt_lirs *l, vt_lirs_node *n, int32_t i, vt_lirs_gone_fn gone,
                   void *ctx)
{
    if (n[i].status == VT_LIRS_HIR) {
        q_unlink(l, n, &l->q_head, &l->q_tail, i);
        l->nhir--;
        if (n[i].in_s && l->ghost_cap > 0) {
            n[i].status = VT_LIRS_GHOST;
            l->nghost++;
            q_push_tail(l, n, &l->g_head, &l->g_tail, i);
            trim_ghosts(l, n, i, gone, ctx);
            return 0;
        }
        s_unlink(l, n, i);
        n[i].status = VT_LIRS_NONE;
        return 1;
    }
    if (n[i].status == VT_LIRS_LIR) {
        s_unlink(l, n, i);
        n[i].status = VT_LIRS_NONE;
        l->nlir--;
        prune(l, n, gone, ctx);
        return 1;
    }
    return n[i].status == VT_LIRS_NONE;
}

void vt__lirs_remove(vt_lirs *l, vt_lirs_node *n, int32_t i,
                     vt_lirs_gone_fn gone, void *ctx)
{
    switch (n[i].status) {
    case VT_LIRS_LIR:
        s_unlink(l, n, i);
        l->nlir--;
        break;
    case VT_LIRS_HIR:
        q_unlink(l, n, &l->q_head, &l->q_tail, i);
        s_unlink(l, n, i);
        l->nhir--;
        break;
    case VT_LIRS_GHOST:
        s_unlink(l, n, i);
        q_unlink(l, n, &l->g_head, &l->g_tail, i);
        l->nghost--;
        break;
    default:
        break;
    }
    n[i].status = VT_LIRS_NONE;
    prune(l, n, gone, ctx);
}

void vt__lirs_note_ghost(vt_lirs *l, vt_lirs_node *n, int32_t i,
                         vt_lirs_gone_fn gone, void *ctx)
{
    n[i].s_prev = n[i].s_next = n[i].q_prev = n[i].q_next = NIL;
    n[i].in_s = 0;
    if (l->ghost_cap == 0) {
        n[i].status = VT_LIRS_NONE;
        if (gone)
            gone(ctx, i);
        return;
    }
    s_push_top(l, n, i);
    n[i].status = VT_LIRS_GHOST;
    l->nghost++;
    q_push_tail(l, n, &l->g_head, &l->g_tail, i);
    trim_ghosts(l, n, i, gone, ctx);
}

int32_t vt__lirs_oldest_ghost(vt_lirs *l)
{
    return lk(l, l->g_head);
}
