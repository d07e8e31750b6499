/* cache.c: the process-wide bounded block cache with in-flight coalescing
 * (interface and contract in cache.h).
 *
 * Design. One mutex guards everything; one condition variable wakes the
 * threads waiting for a block being filled (broadcast, each waiter re-checks
 * its own block). A block lives in a chained hash table keyed by
 * (key, index) while it may be found by a lookup; it is freed when it is
 * neither pinned nor retained, so the table holds only pinned or retained
 * blocks and its bucket array grows and shrinks with them.
 *
 * A block is in one of three states: FILLING (a filler owns it, waiters
 * sleep), READY (data present) or FAILED (detached from the table at once, so
 * the next lookup refetches; freed by the last release). A READY block is
 * either retained (counted in retained_bytes; in the LRU list whenever
 * unpinned) or transient (counted in transient_bytes; freed by its last
 * release). Retained bytes never exceed the budget: a fill first evicts
 * unpinned blocks from the LRU tail, but only when that makes room; if it
 * cannot, the block is delivered transient. Shrinking the budget turns
 * pinned retained blocks transient once nothing else is left to evict.
 * drop_prefix and drop detach matching blocks: unpinned ones are freed,
 * pinned ones stay readable by their holders and become transient.
 *
 * Lock discipline: the data of a block is copied by vt__cache_fill outside
 * the lock (a FILLING block belongs to its filler alone); no callback is ever
 * made. stats.blocks counts every block in memory (retained, transient,
 * filling or failed-but-pinned). */
#include "cache/cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_int.h"

/* The bucket hash of (key, index). Every read of a block hashes its
 * object's key (endpoint, bucket, key, ETag: often 100-300 bytes), and a
 * TIFF open reads its header in dozens of small pieces: byte-at-a-time
 * FNV-1a was the plugin's largest own cost per open (perf, 300 opens on one
 * thread: 0.65% of the process). Eight bytes a step, each folded in with a
 * multiply and a shift, then the length and the index mixed in (the
 * murmur3 finalizer). Only this process's table uses it. */
static uint64_t hash_key(const char *key, uint64_t index)
{
    const uint64_t m = 0x9e3779b97f4a7c15ULL;
    size_t n = strlen(key), i = 0;
    uint64_t h = 0xcbf29ce484222325ULL ^ n, w;

    for (; i + 8 <= n; i += 8) {
        memcpy(&w, key + i, 8);
        h = (h ^ w) * m;
        h ^= h >> 29;
    }
    if (i < n) {
        w = 0;
        memcpy(&w, key + i, n - i);
        h = (h ^ w) * m;
        h ^= h >> 29;
    }
    h ^= index * 0xff51afd7ed558ccdULL + m;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

/* Rebuild the bucket array with n buckets; on allocation failure keep the
 * old one (still correct, just longer chains). Caller holds c->mu. */
static void rehash(vt_cache *c, size_t n)
{
    vt_block **nb = calloc(n, sizeof *nb);
    if (!nb)
        return;
    for (size_t i = 0; i < c->nbuckets; i++) {
        vt_block *b = c->buckets[i];
        while (b) {
            vt_block *next = b->hnext;
            b->hnext = nb[b->hash & (n - 1)];
            nb[b->hash & (n - 1)] = b;
            b = next;
        }
    }
    free(c->buckets);
    c->buckets = nb;
    c->nbuckets = n;
}

static void lru_unlink(vt_cache *c, vt_block *b)
{
    if (!b->in_lru)
        return;
    if (b->prev) b->prev->next = b->next; else c->lru_head = b->next;
    if (b->next) b->next->prev = b->prev; else c->lru_tail = b->prev;
    b->prev = b->next = NULL;
    b->in_lru = 0;
    c->lru_bytes -= b->len;
}

static void lru_push_head(vt_cache *c, vt_block *b)
{
    b->prev = NULL;
    b->next = c->lru_head;
    if (c->lru_head) c->lru_head->prev = b; else c->lru_tail = b;
    c->lru_head = b;
    b->in_lru = 1;
    c->lru_bytes += b->len;
}

/* Remove b from the hash table (so lookups no longer find it). Caller holds
 * c->mu. Never resizes, so a scan of the buckets may unlink as it goes. */
static void table_unlink(vt_cache *c, vt_block *b)
{
    if (!b->in_table)
        return;
    vt_block **pp = &c->buckets[b->hash & (c->nbuckets - 1)];
    while (*pp != b)
        pp = &(*pp)->hnext;
    *pp = b->hnext;
    b->hnext = NULL;
    b->in_table = 0;
    c->count--;
}

/* Halve the bucket array when it has become mostly empty (the table only
 * holds pinned or retained blocks, so it shrinks back after a burst). */
static void maybe_shrink(vt_cache *c)
{
    if (c->nbuckets > MIN_BUCKETS && c->count < c->nbuckets / 8)
        rehash(c, c->nbuckets / 2);
}

/* Stop counting b as retained: it becomes transient if still pinned. */
static void unretain(vt_cache *c, vt_block *b)
{
    if (!b->retained)
        return;
    lru_unlink(c, b);
    c->st.retained_bytes -= b->len;
    b->retained = 0;
    if (b->pins)
        c->st.transient_bytes += b->len;
}

/* Detach and free an unpinned block. Caller holds c->mu. */
static void destroy(vt_cache *c, vt_block *b)
{
    unretain(c, b);
    table_unlink(c, b);
    c->st.blocks--;
    free(b->data);
    free(b->msg);
    free(b);
}

/* Evict unpinned blocks from the LRU tail until retained <= target. */
static void evict_to(vt_cache *c, size_t target)
{
    while (c->st.retained_bytes > target && c->lru_tail) {
        destroy(c, c->lru_tail);
        c->st.evictions++;
    }
}

/* Account the peak after retained_bytes grew. */
static void note_peak(vt_cache *c)
{
    if (c->st.retained_bytes > c->st.peak_retained_bytes)
        c->st.peak_retained_bytes = c->st.retained_bytes;
}

vt_cache *vt__cache_new(size_t budget, size_t block_size)
{
    vt_cache *c = NULL, *ret = NULL;
    int mu_ok = 0;

    if (block_size == 0)
        goto out;
    c = calloc(1, sizeof *c);
    if (!c)
        goto out;
    c->buckets = calloc(MIN_BUCKETS, sizeof *c->buckets);
    if (!c->buckets || pthread_mutex_init(&c->mu, NULL) != 0)
        goto out;
    mu_ok = 1;
    if (pthread_cond_init(&c->cv, NULL) != 0)
        goto out;
    c->nbuckets = MIN_BUCKETS;
    c->block_size = block_size;
    c->st.budget = budget;
    ret = c;
    c = NULL;
out:
    if (c) {
        if (mu_ok)
            pthread_mutex_destroy(&c->mu);
        free(c->buckets);
        free(c);
    }
    return ret;
}

/* Frees every block still in the table; blocks detached while pinned
 * (failed, dropped) belong to their holders and cannot be reached here,
 * which is why no block may be pinned. */
void vt__cache_free(vt_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nbuckets; i++) {
        vt_block *b = c->buckets[i];
        while (b) {
            vt_block *next = b->hnext;
            free(b->data);
            free(b->msg);
            free(b);
            b = next;
        }
    }
    free(c->buckets);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

size_t vt__cache_block_size(const vt_cache *c)
{
    return c->shm ? (size_t)vt__shm_block_size(c->shm) : c->block_size;
}

void vt__cache_use_shared(vt_cache *c, vt_shm *s, long wait_ms)
{
    c->shm = s;
    c->shm_wait_ms = wait_ms;
}

/* The segment while this process uses it: NULL once it turned it off
 * (shmseg.h vt__shm_usable), and the private cache serves from then on. */
vt_shm *vt__cache_shared(const vt_cache *c)
{
    return c && vt__shm_usable(c->shm) ? c->shm : NULL;
}

/* The block returned is pinned for the caller, who must call
 * vt__cache_release once. Allocates (under c->mu) only on a miss; a hit
 * hashes the key and walks one chain. */
vt_block *vt__cache_lookup(vt_cache *c, const char *key, uint64_t index,
                           vt_block_role *role)
{
    vt_block *b = NULL;
    uint64_t h;
    size_t klen;

    if (!c || !key || !role)
        return NULL;
    if (vt__cache_shared(c))
        return vt__cache_sh_lookup(c, key, index, role);
    h = hash_key(key, index);
    klen = strlen(key);
    pthread_mutex_lock(&c->mu);
    for (b = c->buckets[h & (c->nbuckets - 1)]; b; b = b->hnext)
        if (b->hash == h && b->index == index && strcmp(b->key, key) == 0)
            break;
    if (b) {
        if (b->pins++ == 0)
            lru_unlink(c, b);
        if (b->state == READY) {
            *role = VT_ROLE_HIT;
            c->st.hits++;
        } else {
            *role = VT_ROLE_WAIT;
            c->st.waits++;
        }
        goto out;
    }
    b = calloc(1, sizeof *b + klen + 1);
    if (!b)
        goto out;
    memcpy(b->key, key, klen + 1);
    b->hash = h;
    b->index = index;
    b->pins = 1;
    b->state = FILLING;
    b->hnext = c->buckets[h & (c->nbuckets - 1)];
    c->buckets[h & (c->nbuckets - 1)] = b;
    b->in_table = 1;
    c->count++;
    c->st.blocks++;
    c->st.misses++;
    *role = VT_ROLE_FILL;
    if (c->count > c->nbuckets)
        rehash(c, c->nbuckets * 2);
out:
    pthread_mutex_unlock(&c->mu);
    return b;
}

/* The copy is made before taking the lock: until the state turns READY no
 * other thread reads b->data. If the copy cannot be allocated the block
 * fails with VT_ENOMEM (the filler then sees vt__block_data return NULL). */
void vt__cache_fill(vt_cache *c, vt_block *b, const void *data, size_t len)
{
    unsigned char *copy;

    if (b->shared) {
        vt__cache_sh_fill(c, b, data, len);
        return;
    }
    copy = malloc(len ? len : 1);

    if (!copy) {
        vt__cache_fail(c, b, VT_ENOMEM, NULL);
        return;
    }
    if (len)
        memcpy(copy, data, len);
    pthread_mutex_lock(&c->mu);
    if (b->state != FILLING) {           /* filled or failed twice: ignore */
        pthread_mutex_unlock(&c->mu);
        free(copy);
        return;
    }
    b->data = copy;
    b->len = len;
    b->state = READY;
    /* Retain only what fits once every unpinned block is gone; never hold
     * an empty block (it would cost table space and no bytes). */
    if (b->in_table && len > 0 &&
        c->st.retained_bytes - c->lru_bytes + len <= c->st.budget) {
        evict_to(c, c->st.budget - len);
        b->retained = 1;
        c->st.retained_bytes += len;
        note_peak(c);
    } else {
        c->st.transient_bytes += len;
    }
    maybe_shrink(c);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* The message is copied before taking the lock (no allocation under it). */
void vt__cache_fail(vt_cache *c, vt_block *b, vt_err err, const char *msg)
{
    char *copy;

    if (b->shared) {
        vt__cache_sh_fail(c, b, err, msg);
        return;
    }
    copy = msg && *msg ? strdup(msg) : NULL;
    pthread_mutex_lock(&c->mu);
    if (b->state != FILLING) {
        pthread_mutex_unlock(&c->mu);
        free(copy);
        return;
    }
    b->state = FAILED;
    b->err = err == VT_OK ? VT_EPROTO : err;
    b->msg = copy;
    table_unlink(c, b);
    maybe_shrink(c);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Sleeps on c->cv; the caller's pin keeps b alive across the wake-up even
 * when the block has failed and left the table. */
vt_err vt__cache_wait(vt_cache *c, vt_block *b, char *msg, size_t msglen)
{
    vt_err err;

    if (b->shared)
        return vt__cache_sh_wait(c, b, msg, msglen);
    pthread_mutex_lock(&c->mu);
    while (b->state == FILLING)
        pthread_cond_wait(&c->cv, &c->mu);
    err = b->state == READY ? VT_OK : b->err;
    if (msg && msglen) {
        /* msg is set once, before FAILED is published under this lock */
        const char *m = err != VT_OK && b->msg ? b->msg : "";
        size_t n = strlen(m) < msglen - 1 ? strlen(m) : msglen - 1;
        memcpy(msg, m, n);
        msg[n] = '\0';
    }
    pthread_mutex_unlock(&c->mu);
    return err;
}

/* No lock: data and len are written once, before READY is published under
 * the mutex that the caller's lookup (HIT), wait or own fill has since taken;
 * call it only after one of those. NULL (len 0) unless the block is READY,
 * e.g. after a fill whose copy could not be allocated. */
const unsigned char *vt__block_data(const vt_block *b, size_t *len)
{
    if (b->state != READY) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = b->len;
    return b->data;
}

/* The last release frees a block that is not retained (transient, failed,
 * dropped, or a filler that gave up without fill/fail) and puts a retained
 * one at the most-recently-used end of the LRU list. */
void vt__cache_release(vt_cache *c, vt_block *b)
{
    if (!b)
        return;
    if (b->shared) {
        vt__cache_sh_release(c, b);
        return;
    }
    pthread_mutex_lock(&c->mu);
    if (--b->pins > 0)
        goto out;
    if (b->retained) {
        lru_push_head(c, b);
        goto out;
    }
    if (b->state == READY)
        c->st.transient_bytes -= b->len;
    destroy(c, b);
    maybe_shrink(c);
out:
    pthread_mutex_unlock(&c->mu);
}

void vt__cache_drop_prefix(vt_cache *c, const char *prefix)
{
    size_t plen;

    if (!prefix)
        return;
    plen = strlen(prefix);
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->nbuckets; i++) {
        vt_block *b = c->buckets[i];
        while (b) {
            vt_block *next = b->hnext;
            if (strncmp(b->key, prefix, plen) == 0) {
                if (b->pins == 0) {
                    destroy(c, b);
                } else {
                    unretain(c, b);
                    table_unlink(c, b);
                }
            }
            b = next;
        }
    }
    maybe_shrink(c);
    pthread_mutex_unlock(&c->mu);
}

size_t vt__cache_drop(vt_cache *c, const char *key, uint64_t first,
                      uint64_t count)
{
    size_t dropped = 0;

    if (!c || !key)
        return 0;
    if (vt__cache_shared(c)) { /* shared: nothing of it is retained here */
        uint8_t digest[32];
        vt__shm_digest(key, digest);
        for (uint64_t index = first; index - first < count; index++)
            dropped += (size_t)vt__shmc_drop(c->shm, digest, index);
        return dropped;
    }
    pthread_mutex_lock(&c->mu);
    for (uint64_t index = first; index - first < count; index++) {
        uint64_t h = hash_key(key, index);
        vt_block *b = c->buckets[h & (c->nbuckets - 1)];
        while (b && !(b->hash == h && b->index == index &&
                      strcmp(b->key, key) == 0))
            b = b->hnext;
        if (!b || b->state != READY)
            continue;
        if (b->pins == 0) {
            destroy(c, b);
        } else {
            unretain(c, b);
            table_unlink(c, b);
        }
        dropped++;
    }
    maybe_shrink(c);
    pthread_mutex_unlock(&c->mu);
    return dropped;
}

void vt__cache_set_budget(vt_cache *c, size_t budget)
{
    pthread_mutex_lock(&c->mu);
    c->st.budget = budget;
    evict_to(c, budget);
    /* Only pinned retained blocks are left over budget: make them
     * transient (they stay in the table for hits until released). */
    for (size_t i = 0; i < c->nbuckets && c->st.retained_bytes > budget; i++)
        for (vt_block *b = c->buckets[i]; b && c->st.retained_bytes > budget;
             b = b->hnext)
            if (b->pins)
                unretain(c, b);
    maybe_shrink(c);
    pthread_mutex_unlock(&c->mu);
}

void vt__cache_get_stats(vt_cache *c, vt_cache_stats *out)
{
    pthread_mutex_lock(&c->mu);
    *out = c->st;
    pthread_mutex_unlock(&c->mu);
    if (vt__cache_shared(c))
        out->budget = 0; /* nothing is kept privately: see the segment's */
}

int vt__cache_shared_info(vt_cache *c, vt_shm_info *out)
{
    if (!vt__cache_shared(c))
        return 0;
    vt__shm_info(c->shm, out);
    return 1;
}

/* fork(): the forking thread takes the lock, so the child inherits a
 * consistent table (prepare), and both sides let go after (parent, child).
 * In the child, a block some other parent thread was filling will never be
 * filled: it leaves the table so a lookup fetches it afresh. Such blocks, and
 * blocks pinned by parent threads that do not exist in the child, stay
 * allocated in the child (a few blocks at most: the reads in flight at the
 * moment of the fork). */
void vt__cache_fork_prepare(vt_cache *c)
{
    pthread_mutex_lock(&c->mu);
}

void vt__cache_fork_parent(vt_cache *c)
{
    pthread_mutex_unlock(&c->mu);
}

void vt__cache_fork_child(vt_cache *c)
{
    if (c->shm)
        vt__shm_fork_child(c->shm);
    for (size_t i = 0; i < c->nbuckets; i++) {
        vt_block *b = c->buckets[i];
        while (b) {
            vt_block *next = b->hnext;
            if (b->state == FILLING)
                table_unlink(c, b);
            b = next;
        }
    }
    pthread_mutex_unlock(&c->mu);
    pthread_cond_init(&c->cv, NULL); /* no waiter survives a fork */
}
