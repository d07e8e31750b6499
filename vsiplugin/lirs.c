/* lirs.c: the LIRS eviction policy (interface and rationale in lirs.h).
 *
 * Three intrusive doubly-linked lists over one node array: the recency stack
 * S (s_prev/s_next, bottom = least recent), the resident-HIR queue Q and the
 * ghost FIFO (both on q_prev/q_next: a node is never in both). The invariant
 * LIRS rests on: the bottom of S is an LIR node ("pruning" pops HIR and ghost
 * nodes off the bottom until it is). All operations are O(1) amortised. */
#include "lirs.h"

#include <stddef.h>

#define NIL (-1)

/* ---- list primitives ---- */

static void s_unlink(vt_lirs *l, vt_lirs_node *n, int32_t i)
{
    if (!n[i].in_s)
        return;
    if (n[i].s_prev != NIL) n[n[i].s_prev].s_next = n[i].s_next;
    else l->s_bottom = n[i].s_next;
    if (n[i].s_next != NIL) n[n[i].s_next].s_prev = n[i].s_prev;
    else l->s_top = n[i].s_prev;
    n[i].s_prev = n[i].s_next = NIL;
    n[i].in_s = 0;
}

static void s_push_top(vt_lirs *l, vt_lirs_node *n, int32_t i)
{
    s_unlink(l, n, i);
    n[i].s_prev = l->s_top;
    n[i].s_next = NIL;
    if (l->s_top != NIL) n[l->s_top].s_next = i;
    else l->s_bottom = i;
    l->s_top = i;
    n[i].in_s = 1;
}

/* Q and the ghost FIFO share the q links; head/tail name the list. */
static void q_unlink(vt_lirs_node *n, int32_t *head, int32_t *tail, int32_t i)
{
    if (n[i].q_prev != NIL) n[n[i].q_prev].q_next = n[i].q_next;
    else *head = n[i].q_next;
    if (n[i].q_next != NIL) n[n[i].q_next].q_prev = n[i].q_prev;
    else *tail = n[i].q_prev;
    n[i].q_prev = n[i].q_next = NIL;
}

static void q_push_tail(vt_lirs_node *n, int32_t *head, int32_t *tail,
                        int32_t i)
{
    n[i].q_prev = *tail;
    n[i].q_next = NIL;
    if (*tail != NIL) n[*tail].q_next = i;
    else *head = i;
    *tail = i;
}

/* ---- the policy ---- */

/* A ghost leaves the policy altogether. */
static void drop_ghost(vt_lirs *l, vt_lirs_node *n, int32_t i,
                       vt_lirs_gone_fn gone, void *ctx)
{
    s_unlink(l, n, i);
    q_unlink(n, &l->g_head, &l->g_tail, i);
    n[i].status = VT_LIRS_NONE;
    l->nghost--;
    if (gone)
        gone(ctx, i);
}

/* Pop HIR and ghost nodes off the bottom of S until an LIR node is there. */
static void prune(vt_lirs *l, vt_lirs_node *n, vt_lirs_gone_fn gone, void *ctx)
{
    while (l->s_bottom != NIL && n[l->s_bottom].status != VT_LIRS_LIR) {
        int32_t j = l->s_bottom;
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
    j = l->s_bottom;
    if (j == NIL)
        return;
    s_unlink(l, n, j);
    n[j].status = VT_LIRS_HIR;
    l->nlir--;
    l->nhir++;
    q_push_tail(n, &l->q_head, &l->q_tail, j);
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
        int bottom = l->s_bottom == i;
        s_push_top(l, n, i);
        if (bottom)
            prune(l, n, gone, ctx);
    } else if (n[i].status == VT_LIRS_HIR) {
        if (n[i].in_s) {
            /* Reused while still in S: a short reuse distance, so LIR. */
            q_unlink(n, &l->q_head, &l->q_tail, i);
            n[i].status = VT_LIRS_LIR;
            l->nhir--;
            l->nlir++;
            s_push_top(l, n, i);
            if (l->nlir > l->lir_cap)
                demote_bottom(l, n, gone, ctx);
        } else {
            s_push_top(l, n, i);
            q_unlink(n, &l->q_head, &l->q_tail, i);
            q_push_tail(n, &l->q_head, &l->q_tail, i);
        }
    }
}

int vt__lirs_take_ghost(vt_lirs *l, vt_lirs_node *n, int32_t i)
{
    if (n[i].status != VT_LIRS_GHOST)
        return 0;
    s_unlink(l, n, i);
    q_unlink(n, &l->g_head, &l->g_tail, i);
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
        q_push_tail(n, &l->q_head, &l->q_tail, i);
    }
}

int32_t vt__lirs_victim(const vt_lirs *l, const vt_lirs_node *n, int lir_too,
                        int (*accept)(void *ctx, int32_t node), void *ctx)
{
    int32_t i;
    for (i = l->q_head; i != NIL; i = n[i].q_next)
        if (!accept || accept(ctx, i))
            return i;
    if (!lir_too)
        return NIL;
    for (i = l->s_bottom; i != NIL; i = n[i].s_next)
        if (n[i].status == VT_LIRS_LIR && (!accept || accept(ctx, i)))
            return i;
    return NIL;
}

int vt__lirs_evict(vt_lirs *l, vt_lirs_node *n, int32_t i, vt_lirs_gone_fn gone,
                   void *ctx)
{
    if (n[i].status == VT_LIRS_HIR) {
        q_unlink(n, &l->q_head, &l->q_tail, i);
        l->nhir--;
        if (n[i].in_s && l->ghost_cap > 0) {
            n[i].status = VT_LIRS_GHOST;
            l->nghost++;
            q_push_tail(n, &l->g_head, &l->g_tail, i);
            while (l->nghost > l->ghost_cap && l->g_head != i)
                drop_ghost(l, n, l->g_head, gone, ctx);
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
        q_unlink(n, &l->q_head, &l->q_tail, i);
        s_unlink(l, n, i);
        l->nhir--;
        break;
    case VT_LIRS_GHOST:
        s_unlink(l, n, i);
        q_unlink(n, &l->g_head, &l->g_tail, i);
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
    q_push_tail(n, &l->g_head, &l->g_tail, i);
    while (l->nghost > l->ghost_cap && l->g_head != i)
        drop_ghost(l, n, l->g_head, gone, ctx);
}

int32_t vt__lirs_oldest_ghost(const vt_lirs *l)
{
    return l->g_head;
}
