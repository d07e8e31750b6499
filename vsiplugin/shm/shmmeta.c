/* shmmeta.c: object metadata in the shared segment (see shmmeta.h; layout
 * and crash-safety rules in shm_int.h).
 *
 * Entries are FREE (chained by hnext on the free list), LOADING (a process
 * fetches the header), READY or MISSING. When every entry is taken, a clock
 * hand replaces the first entry that is not being loaded. The generation is
 * bumped whenever an entry is (re)claimed or freed, so a waiter can tell its
 * entry went away.
 *
 * Every index read from the segment (bucket heads, hash links, the clock
 * hand) is read once and checked against this process's own counts (s->g);
 * anything out of range turns the segment off for this process. Text
 * fields are copied with their bound, never trusted to be terminated. */
#include "shm/shmmeta.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "shm/shm_int.h"

#define NIL (-1)
#define POLL_MS 100

static uint32_t bucket_of(const vt_shm *s, const uint8_t *digest)
{
    uint32_t h;
    memcpy(&h, digest + 8, sizeof h);
    return h & (s->g.nmeta_buckets - 1);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the index (metadata lock held) ---- */

static int32_t entry_of(vt_shm *s, int32_t v)
{
    return vt__shm_index(s, v, s->g.nmeta, "metadata entry");
}

/* NIL when absent, or when the chain is damaged (then the segment is off). */
static int32_t find(vt_shm *s, const uint8_t *digest)
{
    int32_t i = entry_of(s, VT_SHM_LD(s->meta_buckets[bucket_of(s, digest)]));
    uint32_t guard = 0;
    while (i != NIL) {
        if (guard++ >= s->g.nmeta) {
            vt__shm_off(s, "the segment is damaged: a metadata chain loops");
            return NIL;
        }
        if (memcmp(s->meta[i].digest, digest, VT_SHM_DIGEST) == 0)
            return i;
        i = entry_of(s, VT_SHM_LD(s->meta[i].hnext));
    }
    return NIL;
}

static void unhash(vt_shm *s, int32_t i)
{
    int32_t *pp = &s->meta_buckets[bucket_of(s, s->meta[i].digest)], j;
    uint32_t guard = 0;
    while ((j = entry_of(s, VT_SHM_LD(*pp))) != NIL && j != i &&
           guard++ < s->g.nmeta)
        pp = &s->meta[j].hnext;
    if (j == i)
        *pp = s->meta[i].hnext;
    s->meta[i].hnext = NIL;
}

/* A hashed entry leaves (FREE; entry_alloc finds it by its state). */
static void entry_free(vt_shm *s, int32_t i)
{
    vt_shm_meta *m = &s->meta[i];
    atomic_fetch_add(&m->gen, 1);
    unhash(s, i);
    atomic_store(&m->state, VT_M_FREE);
    s->hdr->meta_count--;
}

/* A free entry to use, or NIL. Free entries are found by scanning from
 * the clock hand: the table is small and misses are network-bound. */
static int32_t entry_alloc(vt_shm *s)
{
    vt_shm_hdr *h = s->hdr;
    uint32_t k, n = s->g.nmeta;
    h->meta_hand %= n; /* a hand out of range would only be slow: fold it */
    for (k = 0; k < n; k++) {
        uint32_t i = (h->meta_hand + k) % n;
        if (atomic_load(&s->meta[i].state) == VT_M_FREE) {
            h->meta_hand = (i + 1) % n;
            return (int32_t)i;
        }
    }
    /* Full: replace the first entry not being loaded. */
    for (k = 0; k < n; k++) {
        uint32_t i = (h->meta_hand + k) % n;
        if (atomic_load(&s->meta[i].state) != VT_M_LOADING) {
            entry_free(s, (int32_t)i);
            h->meta_hand = (i + 1) % n;
            return (int32_t)i;
        }
    }
    return NIL;
}

/* Entry i becomes LOADING by us. */
static void claim(vt_shm *s, int32_t i, int me, uint32_t epoch,
                  vt_shmc_ref *ref)
{
    vt_shm_meta *m = &s->meta[i];
    ref->desc = i;
    ref->gen = atomic_fetch_add(&m->gen, 1) + 1;
    m->loader_proc = (uint32_t)me;
    m->loader_epoch = epoch;
    atomic_store(&m->state, VT_M_LOADING);
}

static void copy_out(const vt_shm_meta *m, vt_shm_objinfo *out)
{
    out->size = m->size;
    out->loaded_at = m->loaded_at;
    out->last_modified = m->last_modified;
    out->missing = atomic_load(&m->state) == VT_M_MISSING;
    snprintf(out->etag, sizeof out->etag, "%.*s", (int)sizeof m->etag - 1,
             m->etag);
    snprintf(out->msg, sizeof out->msg, "%.*s", (int)sizeof m->msg - 1, m->msg);
}

vt_shmm_role vt__shmm_get(vt_shm *s, const uint8_t digest[32], long ttl,
                          long neg_ttl, long timeout_ms, vt_shm_objinfo *out,
                          vt_shmc_ref *ref)
{
    vt_shm_hdr *h = s->hdr;
    uint64_t deadline = now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
    uint32_t epoch;
    int me = vt__shm_attached(s, &epoch);

    memset(out, 0, sizeof *out);
    if (me < 0)
        return VT_SHMM_PRIVATE;
    for (;;) {
        int32_t i;
        vt_shm_meta *m;
        uint32_t st, lproc, lepoch, gen;
        uint64_t now;

        if (vt__shm_lock(s, &h->meta_mu, vt__shmmeta_repair) != 0)
            return VT_SHMM_PRIVATE;
        i = find(s, digest);
        if (!vt__shm_usable(s)) {
            vt__shm_unlock(&h->meta_mu);
            return VT_SHMM_PRIVATE;
        }
        if (i == NIL) {
            i = entry_alloc(s);
            if (i == NIL) {
                vt__shm_unlock(&h->meta_mu);
                return VT_SHMM_PRIVATE;
            }
            m = &s->meta[i];
            memcpy(m->digest, digest, VT_SHM_DIGEST);
            m->hnext = s->meta_buckets[bucket_of(s, digest)];
            s->meta_buckets[bucket_of(s, digest)] = i;
            h->meta_count++;
            claim(s, i, me, epoch, ref);
            vt__shm_unlock(&h->meta_mu);
            atomic_fetch_add_explicit(&h->ctr.meta_misses, 1, memory_order_relaxed);
            return VT_SHMM_LOAD;
        }
        m = &s->meta[i];
        st = atomic_load(&m->state);
        if (st == VT_M_READY || st == VT_M_MISSING) {
            long age = (long)((int64_t)time(NULL) - m->loaded_at);
            if (age >= 0 && age < (st == VT_M_MISSING ? neg_ttl : ttl)) {
                copy_out(m, out);
                vt__shm_unlock(&h->meta_mu);
                atomic_fetch_add_explicit(&h->ctr.meta_hits, 1, memory_order_relaxed);
                return VT_SHMM_FOUND;
            }
            claim(s, i, me, epoch, ref); /* stale: we fetch it again */
            vt__shm_unlock(&h->meta_mu);
            atomic_fetch_add_explicit(&h->ctr.meta_misses, 1, memory_order_relaxed);
            return VT_SHMM_LOAD;
        }
        if (st != VT_M_LOADING) {
            /* a hashed entry is never FREE, and no other state exists */
            vt__shm_unlock(&h->meta_mu);
            vt__shm_off(s, "the segment is damaged: metadata entry %d in "
                        "state %u", (int)i, st);
            return VT_SHMM_PRIVATE;
        }
        /* LOADING by someone: wait for it, or take it over if it died. */
        lproc = m->loader_proc;
        lepoch = m->loader_epoch;
        gen = atomic_load(&m->gen);
        vt__shm_unlock(&h->meta_mu);
        now = now_ms();
        if (lproc == (uint32_t)me && lepoch == epoch) {
            /* Another thread of ours loads it (object.c coalesces threads
             * itself, so this is a stale open racing a forget): fetch. */
            return VT_SHMM_PRIVATE;
        }
        if (vt__shm_given_up(s, lproc, lepoch)) {
            /* A wait for this loader timed out already: not again. */
            atomic_fetch_add_explicit(&h->ctr.wait_timeouts, 1, memory_order_relaxed);
            return VT_SHMM_PRIVATE;
        }
        if (!vt__shm_proc_alive(s, lproc, lepoch)) {
            if (vt__shm_lock(s, &h->meta_mu, vt__shmmeta_repair) != 0)
                return VT_SHMM_PRIVATE;
            if (atomic_load(&m->gen) == gen &&
                atomic_load(&m->state) == VT_M_LOADING) {
                claim(s, i, me, epoch, ref);
                vt__shm_unlock(&h->meta_mu);
                atomic_fetch_add_explicit(&h->ctr.takeovers, 1, memory_order_relaxed);
                return VT_SHMM_LOAD;
            }
            vt__shm_unlock(&h->meta_mu);
            continue;
        }
        if (now >= deadline) {
            vt__shm_give_up(s, lproc, lepoch);
            atomic_fetch_add_explicit(&h->ctr.wait_timeouts, 1, memory_order_relaxed);
            return VT_SHMM_PRIVATE;
        }
        atomic_fetch_add_explicit(&h->ctr.meta_waits, 1, memory_order_relaxed);
        vt__shm_wait(&m->state, VT_M_LOADING,
                     (long)(deadline - now < POLL_MS ? deadline - now : POLL_MS));
    }
}

void vt__shmm_publish(vt_shm *s, const vt_shmc_ref *ref,
                      const vt_shm_objinfo *in)
{
    vt_shm_hdr *h = s->hdr;
    vt_shm_meta *m = &s->meta[ref->desc];

    if (vt__shm_lock(s, &h->meta_mu, vt__shmmeta_repair) != 0)
        return;
    if (atomic_load(&m->gen) == ref->gen &&
        atomic_load(&m->state) == VT_M_LOADING) {
        m->size = in->size;
        m->loaded_at = in->loaded_at;
        m->last_modified = in->last_modified;
        snprintf(m->etag, sizeof m->etag, "%s", in->etag);
        snprintf(m->msg, sizeof m->msg, "%s", in->missing ? in->msg : "");
        atomic_store_explicit(&m->state, in->missing ? VT_M_MISSING : VT_M_READY,
                              memory_order_release);
    }
    vt__shm_unlock(&h->meta_mu);
    vt__shm_wake(&m->state);
}

void vt__shmm_drop(vt_shm *s, const vt_shmc_ref *ref)
{
    vt_shm_hdr *h = s->hdr;
    vt_shm_meta *m = &s->meta[ref->desc];

    if (vt__shm_lock(s, &h->meta_mu, vt__shmmeta_repair) != 0)
        return;
    if (atomic_load(&m->gen) == ref->gen &&
        atomic_load(&m->state) == VT_M_LOADING)
        entry_free(s, ref->desc);
    vt__shm_unlock(&h->meta_mu);
    vt__shm_wake(&m->state);
}

void vt__shmm_forget(vt_shm *s, const uint8_t digest[32])
{
    vt_shm_hdr *h = s->hdr;
    int32_t i;

    if (vt__shm_lock(s, &h->meta_mu, vt__shmmeta_repair) != 0)
        return;
    i = find(s, digest);
    /* A loader in flight keeps its entry: what it publishes was fetched
     * after the write began, and the writer forgets again when done. */
    if (i != NIL && atomic_load(&s->meta[i].state) != VT_M_LOADING)
        entry_free(s, i);
    vt__shm_unlock(&h->meta_mu);
}

void vt__shmm_forget_all(vt_shm *s)
{
    vt_shm_hdr *h = s->hdr;
    uint32_t i;

    if (vt__shm_lock(s, &h->meta_mu, vt__shmmeta_repair) != 0)
        return;
    for (i = 0; i < s->g.nmeta; i++) {
        uint32_t st = atomic_load(&s->meta[i].state);
        if (st == VT_M_READY || st == VT_M_MISSING)
            entry_free(s, (int32_t)i);
    }
    vt__shm_unlock(&h->meta_mu);
}

/* ---- creation and repair ---- */

static void rebuild(vt_shm *s)
{
    vt_shm_hdr *h = s->hdr;
    uint32_t i;
    for (i = 0; i < s->g.nmeta_buckets; i++)
        s->meta_buckets[i] = NIL;
    h->meta_count = 0;
    for (i = 0; i < s->g.nmeta; i++) {
        vt_shm_meta *m = &s->meta[i];
        uint32_t st = atomic_load(&m->state);
        m->hnext = NIL;
        if (st == VT_M_FREE)
            continue;
        if (st > VT_M_MISSING) {
            atomic_fetch_add(&m->gen, 1);
            atomic_store(&m->state, VT_M_FREE);
            continue;
        }
        m->hnext = s->meta_buckets[bucket_of(s, m->digest)];
        s->meta_buckets[bucket_of(s, m->digest)] = (int32_t)i;
        h->meta_count++;
    }
    h->meta_hand %= s->g.nmeta;
}

void vt__shmmeta_init(vt_shm *s)
{
    vt_shm_hdr *h = s->hdr;
    uint32_t i;
    for (i = 0; i < s->g.nmeta; i++) {
        memset(&s->meta[i], 0, sizeof s->meta[i]);
        s->meta[i].hnext = NIL;
    }
    h->meta_hand = 0;
    rebuild(s);
}

/* Entries are published by their state word alone (fields first), so the
 * hash chains are all a dead owner can have left half-done. */
void vt__shmmeta_repair(vt_shm *s)
{
    rebuild(s);
}
