/* shmblocks.c: the blocks part of the shared segment underneath shmcache.c
 * (see shmblocks.h): the hash index of descriptors, the free lists of
 * descriptors and data slots, each slot's owner, eviction through LIRS, and
 * the part's initialisation at creation (vt__shmcache_init, called by
 * shmseg.c) and its repair after a lock owner died (vt__shmcache_repair).
 *
 * It calls the segment's locks and checks (shmlock.c) and its layout
 * (shmlayout.c: vt__shm_reserve), never shmcache.c or shmseg.c. */
#include "shm/shmblocks.h"

#include <stdlib.h>
#include <string.h>

#include "shm/shm_int.h"
#include "shm/shmcache.h"

#define NIL (-1)
#define FREE_TAG 0x46524545u /* "FREE" ^ slot: the 4 bytes after a free
                                slot's link */

static int off(vt_shm *s)
{
    return !vt__shm_usable(s);
}

static uint32_t bucket_of(const vt_shm *s, const uint8_t *digest, uint64_t index)
{
    uint64_t h;
    memcpy(&h, digest, sizeof h);
    h ^= index * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 29;
    return (uint32_t)h & (s->g.nbuckets - 1);
}

/* slot: checked by the caller (vt__shmb_slot_of). */
unsigned char *vt__shmb_slot_data(vt_shm *s, int32_t slot)
{
    return s->data + (uint64_t)slot * s->g.block_size;
}

/* A descriptor index read from the segment, checked. */
static int32_t desc_of(vt_shm *s, int32_t v)
{
    return vt__shm_index(s, v, s->g.ndesc, "descriptor");
}

/* A data slot read from the segment, checked. */
int32_t vt__shmb_slot_of(vt_shm *s, int32_t v)
{
    return vt__shm_index(s, v, s->g.nslots, "data slot");
}


/* LIRS runs on a copy of the segment's list heads whose links are checked
 * against our own descriptor count (lirs.h), written back after. */
vt_lirs *vt__shmb_lirs_in(vt_shm *s, vt_lirs *l)
{
    memcpy(l, &s->hdr->lirs, sizeof *l);
    l->nnodes = s->g.ndesc;
    l->bad = 0;
    return l;
}

void vt__shmb_lirs_out(vt_shm *s, vt_lirs *l)
{
    memcpy(&s->hdr->lirs, l, sizeof *l);
    if (l->bad)
        vt__shm_off(s, "the segment is damaged: its LIRS lists");
}

/* ---- the index (blocks lock held) ---- */

/* NIL when absent, or when the chain is damaged (then the segment is off). */
int32_t vt__shmb_find(vt_shm *s, const uint8_t *digest, uint64_t index)
{
    int32_t i = desc_of(s, VT_SHM_LD(s->buckets[bucket_of(s, digest, index)]));
    uint32_t guard = 0;
    while (i != NIL) {
        vt_shm_desc *d = &s->desc[i];
        if (guard++ >= s->g.ndesc) {
            vt__shm_off(s, "the segment is damaged: a hash chain loops");
            return NIL;
        }
        if (d->index == index && memcmp(d->digest, digest, VT_SHM_DIGEST) == 0)
            return i;
        i = desc_of(s, VT_SHM_LD(d->hnext));
    }
    return NIL;
}

void vt__shmb_hash_insert(vt_shm *s, int32_t i)
{
    vt_shm_desc *d = &s->desc[i];
    uint32_t b = bucket_of(s, d->digest, d->index);
    d->hnext = s->buckets[b];
    s->buckets[b] = i;
}

static void hash_remove(vt_shm *s, int32_t i)
{
    vt_shm_desc *d = &s->desc[i];
    int32_t *pp = &s->buckets[bucket_of(s, d->digest, d->index)], j;
    uint32_t guard = 0;
    while ((j = desc_of(s, VT_SHM_LD(*pp))) != NIL && j != i &&
           guard++ < s->g.ndesc)
        pp = &s->desc[j].hnext;
    if (j == i && i != NIL)
        *pp = d->hnext;
    d->hnext = NIL;
}

/* Descriptor i (no data, out of LIRS) becomes FREE. */
void vt__shmb_desc_free(vt_shm *s, int32_t i)
{
    vt_shm_desc *d = &s->desc[i];
    atomic_fetch_add(&d->gen, 1);
    hash_remove(s, i);
    d->data = NIL;
    atomic_store(&d->state, VT_D_FREE);
    d->hnext = s->hdr->free_desc;
    s->hdr->free_desc = i;
}

/* LIRS let go of a ghost. */
void vt__shmb_gone(void *ctx, int32_t i)
{
    vt__shmb_desc_free(ctx, i);
}

void vt__shmb_lirs_node_clear(vt_lirs_node *n)
{
    n->s_prev = n->s_next = n->q_prev = n->q_next = NIL;
    n->status = VT_LIRS_NONE;
    n->in_s = 0;
}

/* ---- data slots (blocks lock held) ---- */

/* 1 when slot (checked) is held by descriptor i (NIL: by none), else the
 * segment is off. */
int vt__shmb_owned_by(vt_shm *s, int32_t slot, int32_t i)
{
    int32_t o = VT_SHM_LD(s->owner[slot]);
    if (o == i)
        return 1;
    vt__shm_off(s, "the segment is damaged: slot %d is held by %d, not %d",
                (int)slot, (int)o, (int)i);
    return 0;
}

/* Slot `slot` (checked) joins the free list: its link, then its tag. */
void vt__shmb_data_push(vt_shm *s, int32_t slot)
{
    int32_t next = s->hdr->free_data;
    uint32_t tag = FREE_TAG ^ (uint32_t)slot;
    if (slot < 0)
        return;
    s->owner[slot] = NIL;
    memcpy(vt__shmb_slot_data(s, slot), &next, sizeof next);
    memcpy(vt__shmb_slot_data(s, slot) + sizeof next, &tag, sizeof tag);
    s->hdr->free_data = slot;
}

static int evictable(void *ctx, int32_t i)
{
    vt_shm *s = ctx;
    return atomic_load(&s->desc[i].state) == VT_D_READY;
}

/* Evict the LIRS victim (an LIR block only when lir_too); returns its data
 * slot or NIL. */
static int32_t evict_one(vt_shm *s, int lir_too)
{
    vt_shm_hdr *h = s->hdr;
    vt_lirs l;
    int32_t v = vt__lirs_victim(vt__shmb_lirs_in(s, &l), s->lirs, lir_too,
                                evictable, s);
    int32_t slot;
    vt_shm_desc *d;
    int freed;

    vt__shmb_lirs_out(s, &l);
    if (v == NIL || off(s))
        return NIL;
    d = &s->desc[v];
    atomic_fetch_add(&d->gen, 1);        /* readers copying it now: stale */
    slot = vt__shmb_slot_of(s, VT_SHM_LD(d->data));
    if (slot == NIL || !vt__shmb_owned_by(s, slot, v))
        return NIL;
    s->owner[slot] = NIL; /* the caller claims it at once */
    d->data = NIL;
    h->resident--;
    atomic_fetch_add_explicit(&h->ctr.evictions, 1, memory_order_relaxed);
    freed = vt__lirs_evict(vt__shmb_lirs_in(s, &l), s->lirs, v, vt__shmb_gone, s);
    vt__shmb_lirs_out(s, &l);
    if (freed)
        vt__shmb_desc_free(s, v);
    else
        atomic_store(&d->state, VT_D_GHOST);
    return off(s) ? NIL : slot;
}

/* A data slot for a new fill: a free one, a never used one (reserving the
 * next chunk of the file first), else the LIRS victim's (see evict_one).
 * NIL when nothing may go: then the block is not kept. */
int32_t vt__shmb_data_alloc(vt_shm *s, int lir_too)
{
    vt_shm_hdr *h = s->hdr;
    int32_t slot = vt__shmb_slot_of(s, VT_SHM_LD(h->free_data)), next;
    uint32_t tag;
    if (slot != NIL) {
        memcpy(&next, vt__shmb_slot_data(s, slot), sizeof next);
        memcpy(&tag, vt__shmb_slot_data(s, slot) + sizeof next, sizeof tag);
        if (tag != (FREE_TAG ^ (uint32_t)slot) ||
            !vt__shmb_owned_by(s, slot, NIL)) {
            vt__shm_off(s, "the segment is damaged: free slot %d is not free",
                        (int)slot);
            return NIL;
        }
        h->free_data = next; /* checked when it is taken */
        return slot;
    }
    if (off(s) || h->data_used > h->data_cap || h->data_cap > s->g.nslots) {
        vt__shm_off(s, "the segment is damaged: %u slots used of %u reserved, "
                    "%u in all", h->data_used, h->data_cap, s->g.nslots);
        return NIL;
    }
    if (h->data_used == h->data_cap && h->data_cap < s->g.nslots &&
        !h->chunk_failed) {
        uint64_t per = VT_SHM_CHUNK / s->g.block_size, cap;
        if (per == 0)
            per = 1;
        cap = h->data_cap + per > s->g.nslots ? s->g.nslots : h->data_cap + per;
        if (vt__shm_reserve(s, (uint64_t)h->data_cap * s->g.block_size,
                            (cap - h->data_cap) * s->g.block_size) == 0) {
            h->data_cap = (uint32_t)cap;
        } else {
            /* The file system is full: this is the budget from now on. */
            h->chunk_failed = 1;
            h->lirs.lir_cap = h->data_cap > s->g.nslots / 10 + 1
                                  ? h->data_cap - (s->g.nslots / 10 + 1)
                                  : 0;
        }
    }
    if (h->data_used < h->data_cap) {
        int32_t fresh = (int32_t)h->data_used;
        if (!vt__shmb_owned_by(s, fresh, NIL))
            return NIL;
        h->data_used++;
        return fresh;
    }
    return evict_one(s, lir_too);
}

/* A free descriptor: from the free list, else let go of the oldest ghost,
 * else of a failed block nobody asked for again. */
int32_t vt__shmb_desc_alloc(vt_shm *s)
{
    vt_shm_hdr *h = s->hdr;
    int32_t i = desc_of(s, VT_SHM_LD(h->free_desc)), g;
    uint32_t k;
    vt_lirs l;

    if (i == NIL && !off(s) &&
        (g = vt__lirs_oldest_ghost(vt__shmb_lirs_in(s, &l))) != NIL) {
        vt__lirs_remove(&l, s->lirs, g, vt__shmb_gone, s);
        vt__shmb_lirs_out(s, &l);
        vt__shmb_desc_free(s, g);
        i = desc_of(s, VT_SHM_LD(h->free_desc));
    }
    for (k = 0; i == NIL && !off(s) && k < s->g.ndesc; k++)
        if (atomic_load(&s->desc[k].state) == VT_D_FAILED) {
            vt__shmb_desc_free(s, (int32_t)k);
            i = desc_of(s, VT_SHM_LD(h->free_desc));
        }
    if (i == NIL || off(s))
        return NIL;
    if (atomic_load(&s->desc[i].state) != VT_D_FREE) {
        vt__shm_off(s, "the segment is damaged: free descriptor %d is in use",
                    (int)i);
        return NIL;
    }
    h->free_desc = s->desc[i].hnext; /* checked when it is taken */
    s->desc[i].hnext = NIL;
    return i;
}

/* What a READY descriptor's check word holds: its slot and length bound
 * to its name, so a slot or length that changed without the publishing
 * steps (a stray write) is told from a real one. */
uint32_t vt__shmb_desc_check(int32_t slot, uint32_t len, const uint8_t *digest,
                             uint64_t index)
{
    uint64_t h;
    memcpy(&h, digest + 16, sizeof h);
    h ^= index * 0x9e3779b97f4a7c15ULL;
    h ^= ((uint64_t)(uint32_t)slot << 32 | len) * 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 29;
    h *= 0x94d049bb133111ebULL;
    return (uint32_t)(h >> 32) | 1u; /* never 0: a zeroed descriptor fails */
}

/* ---- creation and repair ---- */

static void reset_structure(vt_shm *s)
{
    vt_shm_hdr *h = s->hdr;
    uint32_t i;
    for (i = 0; i < s->g.nbuckets; i++)
        s->buckets[i] = NIL;
    for (i = 0; i < s->g.ndesc; i++)
        vt__shmb_lirs_node_clear(&s->lirs[i]);
    h->free_desc = NIL;
    h->free_data = NIL;
    h->resident = 0;
    vt__lirs_reset(&h->lirs, s->g.nslots, VT_SHM_HIR_PCT, s->g.nslots * 2);
}

void vt__shmcache_init(vt_shm *s)
{
    vt_shm_hdr *h = s->hdr;
    uint32_t i;
    reset_structure(s);
    for (i = s->g.ndesc; i-- > 0;) {
        vt_shm_desc *d = &s->desc[i];
        memset(d, 0, sizeof *d);
        d->data = NIL;
        d->hnext = h->free_desc;
        h->free_desc = (int32_t)i;
    }
    for (i = 0; i < s->g.nslots; i++)
        s->owner[i] = NIL;
    h->data_used = h->data_cap = 0;
    h->chunk_failed = 0;
    h->err_next = 0;
}

/* Keep READY and FILLING descriptors whose data slot is sane and unshared,
 * and FAILED ones (no data); everything else becomes FREE. The LIRS order
 * is lost (blocks re-enter it in index order), nothing else. Every count
 * comes from s->g; the slot counters are clamped to it. */
void vt__shmcache_repair(vt_shm *s)
{
    vt_shm_hdr *h = s->hdr;
    unsigned char *used = calloc(s->g.nslots, 1);
    uint32_t i;
    vt_lirs l;

    if (h->data_cap > s->g.nslots)
        h->data_cap = s->g.nslots;
    if (h->data_used > h->data_cap)
        h->data_used = h->data_cap;
    reset_structure(s);
    for (i = 0; i < s->g.nslots; i++)
        s->owner[i] = NIL;
    for (i = s->g.ndesc; i-- > 0;) {
        vt_shm_desc *d = &s->desc[i];
        uint32_t st = atomic_load(&d->state);
        int32_t slot = VT_SHM_LD(d->data);
        int keep = 0;
        if (st == VT_D_READY || st == VT_D_FILLING) {
            keep = slot >= 0 && (uint32_t)slot < h->data_used &&
                   d->len <= s->g.block_size && used && !used[slot] &&
                   (st == VT_D_FILLING ||
                    d->check == vt__shmb_desc_check(slot, d->len, d->digest,
                                                    d->index));
            if (keep)
                used[slot] = 1;
        } else if (st == VT_D_FAILED) {
            d->data = slot = NIL;
            keep = 1;
        }
        if (!keep) {
            atomic_fetch_add(&d->gen, 1);
            d->data = NIL;
            atomic_store(&d->state, VT_D_FREE);
            d->hnext = h->free_desc;
            h->free_desc = (int32_t)i;
            continue;
        }
        d->data = slot;
        if (slot != NIL)
            s->owner[slot] = (int32_t)i;
        vt__shmb_hash_insert(s, (int32_t)i);
        if (slot != NIL)
            h->resident++;
    }
    vt__shmb_lirs_in(s, &l);
    for (i = 0; i < s->g.ndesc; i++)
        if (atomic_load(&s->desc[i].state) == VT_D_READY)
            vt__lirs_admit(&l, s->lirs, (int32_t)i, 0, vt__shmb_gone, s);
    vt__shmb_lirs_out(s, &l);
    for (i = h->data_used; i-- > 0;)
        if (!used || !used[i])
            vt__shmb_data_push(s, (int32_t)i);
    free(used);
}
