/* shmcache.c: cache blocks in the shared segment (see shmcache.h; layout
 * and crash-safety rules in shm_int.h).
 *
 * A descriptor is FREE, FILLING (holds a data slot its filler writes
 * outside the lock), READY (holds a data slot, in the LIRS lists), FAILED
 * (no data; its error for the waiters, in the hash until the next lookup
 * takes it over) or GHOST (no data; LIRS still remembers it). Every move
 * out of READY, and every (re)claim, bumps the generation first; moves
 * FILLING -> READY/FAILED do not (the waiters hold that generation).
 *
 * Data slots are reserved in the file system a chunk at a time as the
 * cache grows, so a full /dev/shm stops the growth instead of raising
 * SIGBUS; once they are all handed out, a fill evicts the LIRS victim.
 *
 * Every index read from the segment (bucket heads, hash links, data slots,
 * free lists, the LIRS links) is read once and checked against this
 * process's own bounds (s->g) before use; a free data slot carries a tag
 * naming it. Anything out of place turns the segment off for this process
 * (vt__shm_off): the caller gets PRIVATE and goes on with its own cache.
 * Each data slot names the descriptor that holds it (s->owner), so no slot
 * is handed out, written or read for a descriptor that does not own it:
 * a damaged link can lose blocks, never serve one block's bytes as
 * another's. */
#include "shm/shmcache.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "shm/shm_int.h"

#define NIL (-1)
#define POLL_MS 100     /* a waiter checks its filler is alive this often */
#define FREE_TAG 0x46524545u /* "FREE" ^ slot: the 4 bytes after a free
                                slot's link */

void vt__shm_digest(const char *identity, uint8_t out[32])
{
    unsigned int n = 0;
    if (!EVP_Digest(identity, strlen(identity), out, &n, EVP_sha256(), NULL) ||
        n != 32)
        memset(out, 0, 32); /* never happens; all-zero names nothing real */
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
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

/* slot: checked by the caller (slot_of). */
static unsigned char *slot_data(vt_shm *s, int32_t slot)
{
    return s->data + (uint64_t)slot * s->g.block_size;
}

/* A descriptor index read from the segment, checked. */
static int32_t desc_of(vt_shm *s, int32_t v)
{
    return vt__shm_index(s, v, s->g.ndesc, "descriptor");
}

/* A data slot read from the segment, checked. */
static int32_t slot_of(vt_shm *s, int32_t v)
{
    return vt__shm_index(s, v, s->g.nslots, "data slot");
}

static int off(vt_shm *s)
{
    return !vt__shm_usable(s);
}

/* LIRS runs on a copy of the segment's list heads whose links are checked
 * against our own descriptor count (lirs.h), written back after. */
static vt_lirs *lirs_in(vt_shm *s, vt_lirs *l)
{
    memcpy(l, &s->hdr->lirs, sizeof *l);
    l->nnodes = s->g.ndesc;
    l->bad = 0;
    return l;
}

static void lirs_out(vt_shm *s, vt_lirs *l)
{
    memcpy(&s->hdr->lirs, l, sizeof *l);
    if (l->bad)
        vt__shm_off(s, "the segment is damaged: its LIRS lists");
}

/* ---- the index (blocks lock held) ---- */

/* NIL when absent, or when the chain is damaged (then the segment is off). */
static int32_t find(vt_shm *s, const uint8_t *digest, uint64_t index)
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

static void hash_insert(vt_shm *s, int32_t i)
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
static void desc_free(vt_shm *s, int32_t i)
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
static void gone(void *ctx, int32_t i)
{
    desc_free(ctx, i);
}

static void lirs_node_clear(vt_lirs_node *n)
{
    n->s_prev = n->s_next = n->q_prev = n->q_next = NIL;
    n->status = VT_LIRS_NONE;
    n->in_s = 0;
}

/* ---- data slots (blocks lock held) ---- */

/* 1 when slot (checked) is held by descriptor i (NIL: by none), else the
 * segment is off. */
static int owned_by(vt_shm *s, int32_t slot, int32_t i)
{
    int32_t o = VT_SHM_LD(s->owner[slot]);
    if (o == i)
        return 1;
    vt__shm_off(s, "the segment is damaged: slot %d is held by %d, not %d",
                (int)slot, (int)o, (int)i);
    return 0;
}

/* Slot `slot` (checked) joins the free list: its link, then its tag. */
static void data_push(vt_shm *s, int32_t slot)
{
    int32_t next = s->hdr->free_data;
    uint32_t tag = FREE_TAG ^ (uint32_t)slot;
    if (slot < 0)
        return;
    s->owner[slot] = NIL;
    memcpy(slot_data(s, slot), &next, sizeof next);
    memcpy(slot_data(s, slot) + sizeof next, &tag, sizeof tag);
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
    int32_t v = vt__lirs_victim(lirs_in(s, &l), s->lirs, lir_too, evictable, s);
    int32_t slot;
    vt_shm_desc *d;
    int freed;

    lirs_out(s, &l);
    if (v == NIL || off(s))
        return NIL;
    d = &s->desc[v];
    atomic_fetch_add(&d->gen, 1);        /* readers copying it now: stale */
    slot = slot_of(s, VT_SHM_LD(d->data));
    if (slot == NIL || !owned_by(s, slot, v))
        return NIL;
    s->owner[slot] = NIL; /* the caller claims it at once */
    d->data = NIL;
    h->resident--;
    atomic_fetch_add_explicit(&h->ctr.evictions, 1, memory_order_relaxed);
    freed = vt__lirs_evict(lirs_in(s, &l), s->lirs, v, gone, s);
    lirs_out(s, &l);
    if (freed)
        desc_free(s, v);
    else
        atomic_store(&d->state, VT_D_GHOST);
    return off(s) ? NIL : slot;
}

/* A data slot for a new fill: a free one, a never used one (reserving the
 * next chunk of the file first), else the LIRS victim's (see evict_one).
 * NIL when nothing may go: then the block is not kept. */
static int32_t data_alloc(vt_shm *s, int lir_too)
{
    vt_shm_hdr *h = s->hdr;
    int32_t slot = slot_of(s, VT_SHM_LD(h->free_data)), next;
    uint32_t tag;
    if (slot != NIL) {
        memcpy(&next, slot_data(s, slot), sizeof next);
        memcpy(&tag, slot_data(s, slot) + sizeof next, sizeof tag);
        if (tag != (FREE_TAG ^ (uint32_t)slot) || !owned_by(s, slot, NIL)) {
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
        if (!owned_by(s, fresh, NIL))
            return NIL;
        h->data_used++;
        return fresh;
    }
    return evict_one(s, lir_too);
}

/* A free descriptor: from the free list, else let go of the oldest ghost,
 * else of a failed block nobody asked for again. */
static int32_t desc_alloc(vt_shm *s)
{
    vt_shm_hdr *h = s->hdr;
    int32_t i = desc_of(s, VT_SHM_LD(h->free_desc)), g;
    uint32_t k;
    vt_lirs l;

    if (i == NIL && !off(s) &&
        (g = vt__lirs_oldest_ghost(lirs_in(s, &l))) != NIL) {
        vt__lirs_remove(&l, s->lirs, g, gone, s);
        lirs_out(s, &l);
        desc_free(s, g);
        i = desc_of(s, VT_SHM_LD(h->free_desc));
    }
    for (k = 0; i == NIL && !off(s) && k < s->g.ndesc; k++)
        if (atomic_load(&s->desc[k].state) == VT_D_FAILED) {
            desc_free(s, (int32_t)k);
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

/* Descriptor i becomes FILLING by us with data slot `slot`. Generation
 * first, fields next, state last (shm_int.h rule 2). */
static void claim(vt_shm *s, int32_t i, int32_t slot, int me, uint32_t epoch,
                  int was_ghost, vt_shmc_ref *ref)
{
    vt_shm_desc *d = &s->desc[i];
    ref->desc = i;
    ref->gen = atomic_fetch_add(&d->gen, 1) + 1;
    s->owner[slot] = i;
    d->data = slot;
    d->len = 0;
    d->filler_proc = (uint32_t)me;
    d->filler_epoch = epoch;
    d->was_ghost = (uint32_t)was_ghost;
    d->err = 0;
    s->hdr->resident++;
    atomic_store(&d->state, VT_D_FILLING);
}

/* What a READY descriptor's check word holds: its slot and length bound
 * to its name, so a slot or length that changed without the publishing
 * steps (a stray write) is told from a real one. */
static uint32_t desc_check(int32_t slot, uint32_t len, const uint8_t *digest,
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

/* Copy a READY block out and check nothing changed meanwhile (seqlock). */
static int copy_ready(vt_shm *s, int32_t i, uint32_t gen, int32_t slot,
                      uint32_t len, const uint8_t *digest, uint64_t index,
                      unsigned char *dst)
{
    vt_shm_desc *d = &s->desc[i];
    uint32_t check = VT_SHM_LD(d->check);
    if (slot == NIL)
        return 0; /* evicted as we looked (a waiter reads it unlocked) */
    if (slot < 0 || (uint32_t)slot >= s->g.nslots || len > s->g.block_size) {
        vt__shm_off(s, "the segment is damaged: block %d in slot %d, %u bytes",
                    (int)i, (int)slot, len);
        return 0;
    }
    memcpy(dst, slot_data(s, slot), len);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load(&d->gen) != gen || atomic_load(&d->state) != VT_D_READY)
        return 0; /* changed while we copied: look again */
    if (check != desc_check(slot, len, digest, index) || !owned_by(s, slot, i)) {
        vt__shm_off(s, "the segment is damaged: block %d does not match its "
                    "check word", (int)i);
        return 0;
    }
    return 1;
}

/* Take a block whose filler died: it is ours now (same data slot). */
static int take_over(vt_shm *s, vt_shmc_ref *ref, uint32_t fproc,
                     uint32_t fepoch, int me, uint32_t epoch)
{
    vt_shm_desc *d = &s->desc[ref->desc];
    int ok = 0;
    int32_t slot;
    if (vt__shm_lock(s, &s->hdr->blocks_mu, vt__shmcache_repair) != 0)
        return 0;
    if (atomic_load(&d->gen) == ref->gen &&
        atomic_load(&d->state) == VT_D_FILLING && d->filler_proc == fproc &&
        d->filler_epoch == fepoch &&
        (slot = slot_of(s, VT_SHM_LD(d->data))) != NIL &&
        owned_by(s, slot, ref->desc)) {
        ref->gen = atomic_fetch_add(&d->gen, 1) + 1;
        d->filler_proc = (uint32_t)me;
        d->filler_epoch = epoch;
        atomic_fetch_add_explicit(&s->hdr->ctr.takeovers, 1,
                                  memory_order_relaxed);
        ok = 1;
    }
    vt__shm_unlock(&s->hdr->blocks_mu);
    return ok;
}

vt_shmc_role vt__shmc_lookup(vt_shm *s, const uint8_t digest[32],
                             uint64_t index, unsigned char *dst, size_t *len,
                             vt_shmc_ref *ref)
{
    vt_shm_hdr *h = s->hdr;
    uint32_t epoch;
    int me = vt__shm_attached(s, &epoch), attempt;

    *len = 0;
    if (me < 0)
        return VT_SHMC_PRIVATE;
    for (attempt = 0; attempt < 4; attempt++) {
        int32_t i, slot;
        vt_shm_desc *d;
        uint32_t st, fproc, fepoch, n;
        int was_ghost = 0;
        vt_lirs l;

        if (vt__shm_lock(s, &h->blocks_mu, vt__shmcache_repair) != 0)
            return VT_SHMC_PRIVATE;
        i = find(s, digest, index);
        if (off(s)) {
            vt__shm_unlock(&h->blocks_mu);
            return VT_SHMC_PRIVATE;
        }
        d = i != NIL ? &s->desc[i] : NULL;
        st = d ? atomic_load(&d->state) : VT_D_FREE;
        if (d && st == VT_D_READY) {
            vt__lirs_hit(lirs_in(s, &l), s->lirs, i, gone, s);
            lirs_out(s, &l);
            ref->desc = i;
            ref->gen = atomic_load(&d->gen);
            slot = VT_SHM_LD(d->data);
            n = VT_SHM_LD(d->len);
            vt__shm_unlock(&h->blocks_mu);
            if (copy_ready(s, i, ref->gen, slot, n, digest, index, dst)) {
                *len = n;
                atomic_fetch_add_explicit(&h->ctr.hits, 1, memory_order_relaxed);
                return VT_SHMC_HIT;
            }
            continue; /* evicted while we copied: look again */
        }
        if (d && st == VT_D_FILLING) {
            ref->desc = i;
            ref->gen = atomic_load(&d->gen);
            fproc = d->filler_proc;
            fepoch = d->filler_epoch;
            vt__shm_unlock(&h->blocks_mu);
            if (vt__shm_given_up(s, fproc, fepoch)) {
                /* A wait for this filler timed out already: its other
                 * blocks are not waited for either; fetch them ourselves
                 * (with the rest of our run), kept private. */
                atomic_fetch_add_explicit(&h->ctr.wait_timeouts, 1,
                                          memory_order_relaxed);
                return VT_SHMC_PRIVATE;
            }
            if (vt__shm_proc_alive(s, fproc, fepoch)) {
                atomic_fetch_add_explicit(&h->ctr.waits, 1, memory_order_relaxed);
                return VT_SHMC_WAIT;
            }
            if (take_over(s, ref, fproc, fepoch, me, epoch)) {
                atomic_fetch_add_explicit(&h->ctr.misses, 1, memory_order_relaxed);
                return VT_SHMC_FILL;
            }
            continue;
        }
        if (d && st == VT_D_GHOST) {
            was_ghost = vt__lirs_take_ghost(lirs_in(s, &l), s->lirs, i);
            lirs_out(s, &l);
        }
        if (!d) {
            i = desc_alloc(s);
            if (i == NIL) {
                vt__shm_unlock(&h->blocks_mu);
                return VT_SHMC_PRIVATE;
            }
            d = &s->desc[i];
            atomic_fetch_add(&d->gen, 1);
            memcpy(d->digest, digest, VT_SHM_DIGEST);
            d->index = index;
            lirs_node_clear(&s->lirs[i]);
            hash_insert(s, i);
            atomic_store(&d->state, VT_D_GHOST); /* named, no data yet */
        }
        /* Only a block that came back while LIRS still remembered it may
         * push an LIR block out; one seen once takes a resident HIR slot or
         * is not kept (LIRS remembers it as a ghost), so a scan or many
         * fetches in flight never wash out the LIR set. */
        slot = data_alloc(s, was_ghost);
        if (slot == NIL) {
            if (!off(s) && atomic_load(&d->state) == VT_D_GHOST &&
                s->lirs[i].status == VT_LIRS_NONE) {
                vt__lirs_note_ghost(lirs_in(s, &l), s->lirs, i, gone, s);
                lirs_out(s, &l);
            }
            vt__shm_unlock(&h->blocks_mu);
            return VT_SHMC_PRIVATE;
        }
        claim(s, i, slot, me, epoch, was_ghost, ref);
        vt__shm_unlock(&h->blocks_mu);
        atomic_fetch_add_explicit(&h->ctr.misses, 1, memory_order_relaxed);
        return VT_SHMC_FILL;
    }
    return VT_SHMC_PRIVATE;
}

void vt__shmc_fill(vt_shm *s, const vt_shmc_ref *ref, const void *data,
                   size_t len)
{
    vt_shm_hdr *h = s->hdr;
    vt_shm_desc *d = &s->desc[ref->desc];
    int32_t slot;
    vt_lirs l;

    if (len > s->g.block_size)
        len = s->g.block_size;
    if (off(s) || atomic_load(&d->gen) != ref->gen ||
        atomic_load(&d->state) != VT_D_FILLING)
        return;
    /* The slot is ours alone while FILLING under our generation. */
    slot = slot_of(s, VT_SHM_LD(d->data));
    if (slot == NIL || !owned_by(s, slot, ref->desc))
        return;
    if (len)
        memcpy(slot_data(s, slot), data, len);
    if (vt__shm_lock(s, &h->blocks_mu, vt__shmcache_repair) != 0)
        return;
    if (atomic_load(&d->gen) == ref->gen &&
        atomic_load(&d->state) == VT_D_FILLING && d->data == slot) {
        d->len = (uint32_t)len;
        d->check = desc_check(slot, (uint32_t)len, d->digest, d->index);
        vt__lirs_admit(lirs_in(s, &l), s->lirs, ref->desc, (int)d->was_ghost,
                       gone, s);
        lirs_out(s, &l);
        atomic_store_explicit(&d->state, VT_D_READY, memory_order_release);
        atomic_fetch_add_explicit(&h->ctr.fills, 1, memory_order_relaxed);
    }
    vt__shm_unlock(&h->blocks_mu);
    vt__shm_wake(&d->state);
}

void vt__shmc_fail(vt_shm *s, const vt_shmc_ref *ref, int err, const char *msg)
{
    vt_shm_hdr *h = s->hdr;
    vt_shm_desc *d = &s->desc[ref->desc];
    int32_t slot;

    if (vt__shm_lock(s, &h->blocks_mu, vt__shmcache_repair) != 0)
        return;
    if (atomic_load(&d->gen) == ref->gen &&
        atomic_load(&d->state) == VT_D_FILLING) {
        uint32_t k = h->err_next++ % VT_SHM_ERR_RING;
        vt_shm_errmsg *e = &h->err_ring[k];
        uint32_t seq = atomic_load(&e->seq) | 1; /* odd: being written */
        atomic_store(&e->seq, seq);
        snprintf(e->text, sizeof e->text, "%s", msg ? msg : "");
        atomic_store(&e->seq, seq + 1);
        d->err = err == VT_OK ? VT_EPROTO : err;
        d->err_slot = k;
        d->err_seq = seq + 1;
        slot = slot_of(s, VT_SHM_LD(d->data));
        if (slot != NIL && owned_by(s, slot, ref->desc)) {
            data_push(s, slot);
            h->resident--;
        }
        d->data = NIL;
        atomic_store_explicit(&d->state, VT_D_FAILED, memory_order_release);
        atomic_fetch_add_explicit(&h->ctr.fails, 1, memory_order_relaxed);
    }
    vt__shm_unlock(&h->blocks_mu);
    vt__shm_wake(&d->state);
}

void vt__shmc_abandon(vt_shm *s, const vt_shmc_ref *ref)
{
    vt__shmc_fail(s, ref, VT_EAGAIN, NULL);
}

int vt__shmc_drop(vt_shm *s, const uint8_t digest[32], uint64_t index)
{
    vt_shm_hdr *h = s->hdr;
    vt_shm_desc *d;
    int32_t i, slot;
    int dropped = 0;

    if (vt__shm_lock(s, &h->blocks_mu, vt__shmcache_repair) != 0)
        return 0;
    i = find(s, digest, index);
    d = i != NIL ? &s->desc[i] : NULL;
    if (d && atomic_load(&d->state) == VT_D_READY) {
        vt_lirs l;
        atomic_fetch_add(&d->gen, 1);    /* readers copying it now: stale */
        vt__lirs_remove(lirs_in(s, &l), s->lirs, i, gone, s);
        lirs_out(s, &l);
        slot = slot_of(s, VT_SHM_LD(d->data));
        if (slot != NIL && owned_by(s, slot, i))
            data_push(s, slot);
        d->data = NIL;
        h->resident--;
        desc_free(s, i);
        dropped = 1;
    }
    vt__shm_unlock(&h->blocks_mu);
    return dropped;
}

/* The error of a FAILED descriptor; 0 when it changed while we read. */
static int read_failure(vt_shm *s, const vt_shmc_ref *ref, int *err,
                        char *msg, size_t msglen)
{
    vt_shm_desc *d = &s->desc[ref->desc];
    uint32_t k = d->err_slot % VT_SHM_ERR_RING, seq = d->err_seq;
    vt_shm_errmsg *e = &s->hdr->err_ring[k];
    *err = d->err;
    if (msg && msglen) {
        size_t n = strnlen(e->text, sizeof e->text);
        if (n >= msglen)
            n = msglen - 1;
        memcpy(msg, e->text, n);
        msg[n] = '\0';
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load(&e->seq) != seq)
            msg[0] = '\0'; /* the ring came round: the code alone */
    }
    atomic_thread_fence(memory_order_acquire);
    return atomic_load(&d->gen) == ref->gen &&
           atomic_load(&d->state) == VT_D_FAILED;
}

vt_shmc_role vt__shmc_wait(vt_shm *s, vt_shmc_ref *ref,
                           const uint8_t digest[32], uint64_t index,
                           long timeout_ms, unsigned char *dst, size_t *len,
                           int *err, char *msg, size_t msglen)
{
    uint64_t deadline = now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
    uint32_t epoch;
    int me = vt__shm_attached(s, &epoch), relooks = 0;

    *len = 0;
    *err = 0;
    if (me < 0)
        return VT_SHMC_PRIVATE;
    for (;;) {
        vt_shm_desc *d = &s->desc[ref->desc];
        uint32_t st = atomic_load_explicit(&d->state, memory_order_acquire);
        vt_shmc_role role;

        if (off(s))
            return VT_SHMC_PRIVATE;
        if (atomic_load(&d->gen) == ref->gen) {
            if (st == VT_D_READY) {
                int32_t slot = VT_SHM_LD(d->data);
                uint32_t n = VT_SHM_LD(d->len);
                if (copy_ready(s, ref->desc, ref->gen, slot, n, digest, index,
                               dst)) {
                    *len = n;
                    return VT_SHMC_HIT;
                }
            } else if (st == VT_D_FAILED) {
                if (read_failure(s, ref, err, msg, msglen))
                    return VT_SHMC_FAILED;
            } else if (st == VT_D_FILLING) {
                uint64_t now = now_ms();
                uint32_t fproc = d->filler_proc, fepoch = d->filler_epoch;
                if (now >= deadline || vt__shm_given_up(s, fproc, fepoch)) {
                    /* Too slow (stopped, or stalled): not waited for again
                     * for its other blocks, in this read or the next. */
                    vt__shm_give_up(s, fproc, fepoch);
                    atomic_fetch_add_explicit(&s->hdr->ctr.wait_timeouts, 1,
                                              memory_order_relaxed);
                    return VT_SHMC_PRIVATE;
                }
                vt__shm_wait(&d->state, VT_D_FILLING,
                             (long)(deadline - now < POLL_MS ? deadline - now
                                                             : POLL_MS));
                if (atomic_load(&d->gen) == ref->gen &&
                    atomic_load(&d->state) == VT_D_FILLING &&
                    !vt__shm_proc_alive(s, fproc, fepoch) &&
                    take_over(s, ref, fproc, fepoch, me, epoch))
                    return VT_SHMC_FILL;
                continue;
            }
        }
        /* Changed under us (taken over, evicted, refilled): look again. */
        if (++relooks > 4)
            return VT_SHMC_PRIVATE;
        role = vt__shmc_lookup(s, digest, index, dst, len, ref);
        if (role != VT_SHMC_WAIT)
            return role;
    }
}

/* ---- creation and repair ---- */

static void reset_structure(vt_shm *s)
{
    vt_shm_hdr *h = s->hdr;
    uint32_t i;
    for (i = 0; i < s->g.nbuckets; i++)
        s->buckets[i] = NIL;
    for (i = 0; i < s->g.ndesc; i++)
        lirs_node_clear(&s->lirs[i]);
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
                    d->check == desc_check(slot, d->len, d->digest, d->index));
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
        hash_insert(s, (int32_t)i);
        if (slot != NIL)
            h->resident++;
    }
    lirs_in(s, &l);
    for (i = 0; i < s->g.ndesc; i++)
        if (atomic_load(&s->desc[i].state) == VT_D_READY)
            vt__lirs_admit(&l, s->lirs, (int32_t)i, 0, gone, s);
    lirs_out(s, &l);
    for (i = h->data_used; i-- > 0;)
        if (!used || !used[i])
            data_push(s, (int32_t)i);
    free(used);
}
