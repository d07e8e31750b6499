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
 * another's.
 *
 * The index, free lists, data slots and LIRS glue these roles work on, and
 * the blocks part's initialisation and repair: shmblocks.c (below this
 * file: it never calls back). */
#include "shm/shmcache.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "base/sha256.h"
#include "shm/shm_int.h"
#include "shm/shmblocks.h"

#define NIL (-1)
#define POLL_MS 100     /* a waiter checks its filler is alive this often */

void vt__shm_digest(const char *identity, uint8_t out[32])
{
    if (vt__sha256(identity, strlen(identity), out) != 0)
        memset(out, 0, 32); /* never happens; all-zero names nothing real */
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int off(vt_shm *s)
{
    return !vt__shm_usable(s);
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
    memcpy(dst, vt__shmb_slot_data(s, slot), len);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load(&d->gen) != gen || atomic_load(&d->state) != VT_D_READY)
        return 0; /* changed while we copied: look again */
    if (check != vt__shmb_desc_check(slot, len, digest, index) ||
        !vt__shmb_owned_by(s, slot, i)) {
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
        (slot = vt__shmb_slot_of(s, VT_SHM_LD(d->data))) != NIL &&
        vt__shmb_owned_by(s, slot, ref->desc)) {
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
        i = vt__shmb_find(s, digest, index);
        if (off(s)) {
            vt__shm_unlock(&h->blocks_mu);
            return VT_SHMC_PRIVATE;
        }
        d = i != NIL ? &s->desc[i] : NULL;
        st = d ? atomic_load(&d->state) : VT_D_FREE;
        if (d && st == VT_D_READY) {
            vt__lirs_hit(vt__shmb_lirs_in(s, &l), s->lirs, i, vt__shmb_gone, s);
            vt__shmb_lirs_out(s, &l);
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
            was_ghost = vt__lirs_take_ghost(vt__shmb_lirs_in(s, &l), s->lirs, i);
            vt__shmb_lirs_out(s, &l);
        }
        if (!d) {
            i = vt__shmb_desc_alloc(s);
            if (i == NIL) {
                vt__shm_unlock(&h->blocks_mu);
                return VT_SHMC_PRIVATE;
            }
            d = &s->desc[i];
            atomic_fetch_add(&d->gen, 1);
            memcpy(d->digest, digest, VT_SHM_DIGEST);
            d->index = index;
            vt__shmb_lirs_node_clear(&s->lirs[i]);
            vt__shmb_hash_insert(s, i);
            atomic_store(&d->state, VT_D_GHOST); /* named, no data yet */
        }
        /* Only a block that came back while LIRS still remembered it may
         * push an LIR block out; one seen once takes a resident HIR slot or
         * is not kept (LIRS remembers it as a ghost), so a scan or many
         * fetches in flight never wash out the LIR set. */
        slot = vt__shmb_data_alloc(s, was_ghost);
        if (slot == NIL) {
            if (!off(s) && atomic_load(&d->state) == VT_D_GHOST &&
                s->lirs[i].status == VT_LIRS_NONE) {
                vt__lirs_note_ghost(vt__shmb_lirs_in(s, &l), s->lirs, i,
                                    vt__shmb_gone, s);
                vt__shmb_lirs_out(s, &l);
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
    slot = vt__shmb_slot_of(s, VT_SHM_LD(d->data));
    if (slot == NIL || !vt__shmb_owned_by(s, slot, ref->desc))
        return;
    if (len)
        memcpy(vt__shmb_slot_data(s, slot), data, len);
    if (vt__shm_lock(s, &h->blocks_mu, vt__shmcache_repair) != 0)
        return;
    if (atomic_load(&d->gen) == ref->gen &&
        atomic_load(&d->state) == VT_D_FILLING && d->data == slot) {
        d->len = (uint32_t)len;
        d->check = vt__shmb_desc_check(slot, (uint32_t)len, d->digest, d->index);
        vt__lirs_admit(vt__shmb_lirs_in(s, &l), s->lirs, ref->desc,
                       (int)d->was_ghost, vt__shmb_gone, s);
        vt__shmb_lirs_out(s, &l);
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
        slot = vt__shmb_slot_of(s, VT_SHM_LD(d->data));
        if (slot != NIL && vt__shmb_owned_by(s, slot, ref->desc)) {
            vt__shmb_data_push(s, slot);
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
    i = vt__shmb_find(s, digest, index);
    d = i != NIL ? &s->desc[i] : NULL;
    if (d && atomic_load(&d->state) == VT_D_READY) {
        vt_lirs l;
        atomic_fetch_add(&d->gen, 1);    /* readers copying it now: stale */
        vt__lirs_remove(vt__shmb_lirs_in(s, &l), s->lirs, i, vt__shmb_gone, s);
        vt__shmb_lirs_out(s, &l);
        slot = vt__shmb_slot_of(s, VT_SHM_LD(d->data));
        if (slot != NIL && vt__shmb_owned_by(s, slot, i))
            vt__shmb_data_push(s, slot);
        d->data = NIL;
        h->resident--;
        vt__shmb_desc_free(s, i);
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
