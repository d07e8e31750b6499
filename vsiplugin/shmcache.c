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
 * SIGBUS; once they are all handed out, a fill evicts the LIRS victim. */
#include "shmcache.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "shm_int.h"

#define NIL (-1)
#define POLL_MS 100     /* a waiter checks its filler is alive this often */

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
    return (uint32_t)h & (s->hdr->nbuckets - 1);
}

static unsigned char *slot_data(vt_shm *s, int32_t slot)
{
    return s->data + (uint64_t)slot * s->hdr->block_size;
}

/* ---- the index (blocks lock held) ---- */

static int32_t find(vt_shm *s, const uint8_t *digest, uint64_t index)
{
    int32_t i = s->buckets[bucket_of(s, digest, index)];
    uint32_t guard = 0;
    while (i != NIL && guard++ < s->hdr->ndesc) {
        vt_shm_desc *d = &s->desc[i];
        if (d->index == index && memcmp(d->digest, digest, VT_SHM_DIGEST) == 0)
            return i;
        i = d->hnext;
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
    int32_t *pp = &s->buckets[bucket_of(s, d->digest, d->index)];
    uint32_t guard = 0;
    while (*pp != NIL && *pp != i && guard++ < s->hdr->ndesc)
        pp = &s->desc[*pp].hnext;
    if (*pp == i)
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

static void data_push(vt_shm *s, int32_t slot)
{
    int32_t next = s->hdr->free_data;
    memcpy(slot_data(s, slot), &next, sizeof next);
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
    int32_t v = vt__lirs_victim(&h->lirs, s->lirs, lir_too, evictable, s), slot;
    vt_shm_desc *d;

    if (v == NIL)
        return NIL;
    d = &s->desc[v];
    atomic_fetch_add(&d->gen, 1);        /* readers copying it now: stale */
    slot = d->data;
    d->data = NIL;
    h->resident--;
    atomic_fetch_add_explicit(&h->ctr.evictions, 1, memory_order_relaxed);
    if (vt__lirs_evict(&h->lirs, s->lirs, v, gone, s))
        desc_free(s, v);
    else
        atomic_store(&d->state, VT_D_GHOST);
    return slot;
}

/* A data slot for a new fill: a free one, a never used one (reserving the
 * next chunk of the file first), else the LIRS victim's (see evict_one).
 * NIL when nothing may go: then the block is not kept. */
static int32_t data_alloc(vt_shm *s, int lir_too)
{
    vt_shm_hdr *h = s->hdr;
    int32_t slot = h->free_data;
    if (slot != NIL) {
        memcpy(&h->free_data, slot_data(s, slot), sizeof h->free_data);
        return slot;
    }
    if (h->data_used == h->data_cap && h->data_cap < h->nslots &&
        !h->chunk_failed) {
        uint64_t per = VT_SHM_CHUNK / h->block_size, cap;
        if (per == 0)
            per = 1;
        cap = h->data_cap + per > h->nslots ? h->nslots : h->data_cap + per;
        if (vt__shm_reserve(s, (uint64_t)h->data_cap * h->block_size,
                            (cap - h->data_cap) * h->block_size) == 0) {
            h->data_cap = (uint32_t)cap;
        } else {
            /* The file system is full: this is the budget from now on. */
            h->chunk_failed = 1;
            h->lirs.lir_cap = h->data_cap > h->nslots / 10 + 1
                                  ? h->data_cap - (h->nslots / 10 + 1)
                                  : 0;
        }
    }
    if (h->data_used < h->data_cap)
        return (int32_t)h->data_used++;
    return evict_one(s, lir_too);
}

/* A free descriptor: from the free list, else let go of the oldest ghost,
 * else of a failed block nobody asked for again. */
static int32_t desc_alloc(vt_shm *s)
{
    vt_shm_hdr *h = s->hdr;
    int32_t i = h->free_desc, g;
    uint32_t k;

    if (i == NIL && (g = vt__lirs_oldest_ghost(&h->lirs)) != NIL) {
        vt__lirs_remove(&h->lirs, s->lirs, g, gone, s);
        desc_free(s, g);
        i = h->free_desc;
    }
    for (k = 0; i == NIL && k < h->ndesc; k++)
        if (atomic_load(&s->desc[k].state) == VT_D_FAILED) {
            desc_free(s, (int32_t)k);
            i = h->free_desc;
        }
    if (i == NIL)
        return NIL;
    h->free_desc = s->desc[i].hnext;
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
    d->data = slot;
    d->len = 0;
    d->filler_proc = (uint32_t)me;
    d->filler_epoch = epoch;
    d->was_ghost = (uint32_t)was_ghost;
    d->err = 0;
    s->hdr->resident++;
    atomic_store(&d->state, VT_D_FILLING);
}

/* Copy a READY block out and check nothing changed meanwhile (seqlock). */
static int copy_ready(vt_shm *s, int32_t i, uint32_t gen, int32_t slot,
                      uint32_t len, unsigned char *dst)
{
    vt_shm_desc *d = &s->desc[i];
    if (slot < 0 || (uint32_t)slot >= s->hdr->nslots || len > s->hdr->block_size)
        return 0;
    memcpy(dst, slot_data(s, slot), len);
    atomic_thread_fence(memory_order_acquire);
    return atomic_load(&d->gen) == gen &&
           atomic_load(&d->state) == VT_D_READY;
}

/* Take a block whose filler died: it is ours now (same data slot). */
static int take_over(vt_shm *s, vt_shmc_ref *ref, uint32_t fproc,
                     uint32_t fepoch, int me, uint32_t epoch)
{
    vt_shm_desc *d = &s->desc[ref->desc];
    int ok = 0;
    if (vt__shm_lock(s, &s->hdr->blocks_mu, vt__shmcache_repair) != 0)
        return 0;
    if (atomic_load(&d->gen) == ref->gen &&
        atomic_load(&d->state) == VT_D_FILLING && d->filler_proc == fproc &&
        d->filler_epoch == fepoch) {
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

        if (vt__shm_lock(s, &h->blocks_mu, vt__shmcache_repair) != 0)
            return VT_SHMC_PRIVATE;
        i = find(s, digest, index);
        d = i != NIL ? &s->desc[i] : NULL;
        st = d ? atomic_load(&d->state) : VT_D_FREE;
        if (d && st == VT_D_READY) {
            vt__lirs_hit(&h->lirs, s->lirs, i, gone, s);
            ref->desc = i;
            ref->gen = atomic_load(&d->gen);
            slot = d->data;
            n = d->len;
            vt__shm_unlock(&h->blocks_mu);
            if (copy_ready(s, i, ref->gen, slot, n, dst)) {
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
        if (d && st == VT_D_GHOST)
            was_ghost = vt__lirs_take_ghost(&h->lirs, s->lirs, i);
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
            if (atomic_load(&d->state) == VT_D_GHOST &&
                s->lirs[i].status == VT_LIRS_NONE)
                vt__lirs_note_ghost(&h->lirs, s->lirs, i, gone, s);
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

    if (len > h->block_size)
        len = h->block_size;
    if (atomic_load(&d->gen) != ref->gen ||
        atomic_load(&d->state) != VT_D_FILLING)
        return;
    /* The slot is ours alone while FILLING under our generation. */
    if (len)
        memcpy(slot_data(s, d->data), data, len);
    if (vt__shm_lock(s, &h->blocks_mu, vt__shmcache_repair) != 0)
        return;
    if (atomic_load(&d->gen) == ref->gen &&
        atomic_load(&d->state) == VT_D_FILLING) {
        d->len = (uint32_t)len;
        vt__lirs_admit(&h->lirs, s->lirs, ref->desc, (int)d->was_ghost, gone, s);
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
        if (d->data != NIL) {
            data_push(s, d->data);
            d->data = NIL;
            h->resident--;
        }
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
    int32_t i;
    int dropped = 0;

    if (vt__shm_lock(s, &h->blocks_mu, vt__shmcache_repair) != 0)
        return 0;
    i = find(s, digest, index);
    d = i != NIL ? &s->desc[i] : NULL;
    if (d && atomic_load(&d->state) == VT_D_READY) {
        atomic_fetch_add(&d->gen, 1);    /* readers copying it now: stale */
        vt__lirs_remove(&h->lirs, s->lirs, i, gone, s);
        data_push(s, d->data);
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

        if (atomic_load(&d->gen) == ref->gen) {
            if (st == VT_D_READY) {
                int32_t slot = d->data;
                uint32_t n = d->len;
                if (copy_ready(s, ref->desc, ref->gen, slot, n, dst)) {
                    *len = n;
                    return VT_SHMC_HIT;
                }
            } else if (st == VT_D_FAILED) {
                if (read_failure(s, ref, err, msg, msglen))
                    return VT_SHMC_FAILED;
            } else if (st == VT_D_FILLING) {
                uint64_t now = now_ms();
                uint32_t fproc = d->filler_proc, fepoch = d->filler_epoch;
                if (now >= deadline) {
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
    for (i = 0; i < h->nbuckets; i++)
        s->buckets[i] = NIL;
    for (i = 0; i < h->ndesc; i++)
        lirs_node_clear(&s->lirs[i]);
    h->free_desc = NIL;
    h->free_data = NIL;
    h->resident = 0;
    vt__lirs_reset(&h->lirs, h->nslots, VT_SHM_HIR_PCT, h->nslots * 2);
}

void vt__shmcache_init(vt_shm *s)
{
    vt_shm_hdr *h = s->hdr;
    uint32_t i;
    reset_structure(s);
    for (i = h->ndesc; i-- > 0;) {
        vt_shm_desc *d = &s->desc[i];
        memset(d, 0, sizeof *d);
        d->data = NIL;
        d->hnext = h->free_desc;
        h->free_desc = (int32_t)i;
    }
    h->data_used = h->data_cap = 0;
    h->chunk_failed = 0;
    h->err_next = 0;
}

/* Keep READY and FILLING descriptors whose data slot is sane and unshared,
 * and FAILED ones (no data); everything else becomes FREE. The LIRS order
 * is lost (blocks re-enter it in index order), nothing else. */
void vt__shmcache_repair(vt_shm *s)
{
    vt_shm_hdr *h = s->hdr;
    unsigned char *used = calloc(h->nslots ? h->nslots : 1, 1);
    uint32_t i;

    reset_structure(s);
    for (i = h->ndesc; i-- > 0;) {
        vt_shm_desc *d = &s->desc[i];
        uint32_t st = atomic_load(&d->state);
        int keep = 0;
        if (st == VT_D_READY || st == VT_D_FILLING) {
            keep = d->data >= 0 && (uint32_t)d->data < h->data_used &&
                   d->len <= h->block_size && used && !used[d->data];
            if (keep)
                used[d->data] = 1;
        } else if (st == VT_D_FAILED) {
            d->data = NIL;
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
        hash_insert(s, (int32_t)i);
        if (d->data != NIL)
            h->resident++;
    }
    for (i = 0; i < h->ndesc; i++)
        if (atomic_load(&s->desc[i].state) == VT_D_READY)
            vt__lirs_admit(&h->lirs, s->lirs, (int32_t)i, 0, gone, s);
    if (h->data_used > h->data_cap)
        h->data_used = h->data_cap;
    for (i = h->data_used; i-- > 0;)
        if (!used || !used[i])
            data_push(s, (int32_t)i);
    free(used);
}
