/* cache_int.h: the block cache's structures, for cache.c (the per-process
 * cache) and cacheshm.c (the same API over the host-wide shared segment).
 * Nothing else includes this. */
#ifndef VT_CACHE_INT_H
#define VT_CACHE_INT_H

#include <pthread.h>
#include <stdint.h>

#include "cache/cache.h"
#include "shm/shmcache.h"

enum { FILLING = 0, READY = 1, FAILED = 2 };
enum { MIN_BUCKETS = 64 };

struct vt_block {
    struct vt_block *hnext;              /* hash chain */
    struct vt_block *prev, *next;        /* LRU list, only while in it */
    uint64_t hash, index;
    unsigned char *data;                 /* malloc'd by fill, len bytes */
    size_t len;
    unsigned pins;
    int state;
    vt_err err;                          /* FAILED: what waiters get */
    char *msg;                           /* FAILED: the filler's words, or NULL */
    unsigned in_table : 1, in_lru : 1, retained : 1; /* under c->mu */
    /* Shared mode (cacheshm.c): the block belongs to one caller alone and
     * is a private copy of, or a claim on, a block of the segment. The
     * zero-width field starts a new memory location: `shared` is read
     * without the lock (vt__cache_wait, _fill, ...) while another thread
     * sets `retained` under it, a data race were they in one unit (TSan). */
    unsigned : 0;
    unsigned shared : 1;                 /* made by cacheshm.c */
    unsigned sh_fill : 1;                /* we fill the segment's block */
    unsigned sh_wait : 1;                /* another fills it: wait on ref */
    vt_shmc_ref ref;
    uint8_t digest[32];                  /* SHA-256 of key */
    char key[];                          /* NUL-terminated copy */
};

struct vt_cache {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    vt_block **buckets;                  /* nbuckets, a power of two */
    size_t nbuckets, count;              /* count: blocks in the table */
    vt_block *lru_head, *lru_tail;       /* head = most recently released */
    size_t lru_bytes;                    /* retained bytes evictable now */
    size_t block_size;
    vt_cache_stats st;
    vt_shm *shm;                         /* set once, before any lookup */
    long shm_wait_ms;                    /* bound on waiting for a filler */
};

/* Shared mode (cacheshm.c); cache.c calls these when c->shm is set (lookup)
 * or b->shared (the others). Same contracts as the cache.h functions. */
vt_block *vt__cache_sh_lookup(vt_cache *c, const char *key, uint64_t index,
                              vt_block_role *role);
void vt__cache_sh_fill(vt_cache *c, vt_block *b, const void *data, size_t len);
void vt__cache_sh_fail(vt_cache *c, vt_block *b, vt_err err, const char *msg);
vt_err vt__cache_sh_wait(vt_cache *c, vt_block *b, char *msg, size_t msglen);
void vt__cache_sh_release(vt_cache *c, vt_block *b);

#endif
