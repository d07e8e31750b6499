/* cache.h: the process-wide bounded block cache, with in-flight coalescing.
 *
 * Holds compressed bytes of remote objects in fixed-size, block-aligned
 * blocks, keyed by (object key, block index), where the object key is an
 * opaque string the caller builds from bucket, key and ETag. One byte budget
 * for the whole process; least-recently-used eviction of unpinned blocks; the
 * retained bytes never exceed the budget. A block that cannot be retained
 * within the budget (everything else is pinned) is still delivered to the
 * threads that pinned it and freed at its last release.
 *
 * Coalescing: the first thread to look up a missing block becomes its filler
 * (VT_ROLE_FILL) and must call vt__cache_fill() or vt__cache_fail() exactly
 * once; threads that look it up meanwhile get VT_ROLE_WAIT and block in
 * vt__cache_wait(). To avoid deadlock a caller first looks up every block it
 * needs, fills all the blocks it was given to fill, and only then waits.
 *
 * Thread-safety: every function may be called from any thread; one mutex
 * inside, never held while calling out. */
#ifndef VT_CACHE_H
#define VT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "shm/shmseg.h"

typedef struct vt_cache vt_cache;
typedef struct vt_block vt_block;

typedef enum vt_block_role {
    VT_ROLE_HIT = 0,   /* data is ready */
    VT_ROLE_FILL = 1,  /* caller must fill or fail it */
    VT_ROLE_WAIT = 2   /* another thread is filling it: call vt__cache_wait */
} vt_block_role;

/* budget: max retained bytes; block_size: bytes per block (> 0). */
vt_cache *vt__cache_new(size_t budget, size_t block_size);
void vt__cache_free(vt_cache *c);   /* no block may be pinned */

size_t vt__cache_block_size(const vt_cache *c);

/* Find or create block `index` of object `key` and pin it. Never blocks on
 * I/O. Returns NULL only on allocation failure. */
vt_block *vt__cache_lookup(vt_cache *c, const char *key, uint64_t index,
                           vt_block_role *role);

/* Filler: store len bytes (copied) and wake waiters. len may be shorter than
 * the block size for the last block of an object. */
void vt__cache_fill(vt_cache *c, vt_block *b, const void *data, size_t len);

/* Filler: the fetch failed; waiters get err and a copy of msg (the full
 * description: bucket, key, status, S3 code; NULL for none) and the block is
 * forgotten (a failure is never cached). */
void vt__cache_fail(vt_cache *c, vt_block *b, vt_err err, const char *msg);

/* Wait until the block is filled (VT_OK) or failed (that error). On failure
 * msg (msglen bytes, may be NULL/0) gets the filler's message, or "" when it
 * gave none. With the shared cache the wait is bounded: VT_EAGAIN means the
 * other filler died or is too slow and b is now the caller's to fill or fail
 * (as after VT_ROLE_FILL). */
vt_err vt__cache_wait(vt_cache *c, vt_block *b, char *msg, size_t msglen);

/* Data of a filled block; valid while pinned. */
const unsigned char *vt__block_data(const vt_block *b, size_t *len);

/* Unpin. */
void vt__cache_release(vt_cache *c, vt_block *b);

/* Drop every unpinned block whose key starts with prefix (object replaced). */
void vt__cache_drop_prefix(vt_cache *c, const char *prefix);

/* Forget the ready blocks [first, first + count) of key (a reader found their
 * bytes wrong: suspect.h): the next lookup of each is a miss and refetches.
 * Unpinned blocks are freed; pinned ones stay readable by their holders until
 * released. Blocks being filled or failed are left alone (they hold no old
 * bytes). Returns how many blocks were dropped. */
size_t vt__cache_drop(vt_cache *c, const char *key, uint64_t first,
                      uint64_t count);

/* Serve every later lookup from the shared segment s (shmcache.h) instead
 * of this process's blocks; waits for another process's fill last at most
 * wait_ms. Call once, before the first lookup; s outlives c. The block size
 * becomes the segment's; the per-process budget is no longer used. */
void vt__cache_use_shared(vt_cache *c, vt_shm *s, long wait_ms);

/* The segment in use, or NULL. */
vt_shm *vt__cache_shared(const vt_cache *c);

/* Change the budget (evicts down to it). */
void vt__cache_set_budget(vt_cache *c, size_t budget);

typedef struct vt_cache_stats {
    size_t budget;
    size_t retained_bytes;       /* accounted: always <= budget */
    size_t peak_retained_bytes;
    size_t transient_bytes;      /* pinned blocks not retained */
    uint64_t hits, misses, waits, evictions, blocks;
} vt_cache_stats;

/* This process's counters. With the shared segment, hits, misses and waits
 * are this process's lookups and nothing is retained privately (budget 0):
 * the host's budget and contents are vt__cache_shared_info's. */
void vt__cache_get_stats(vt_cache *c, vt_cache_stats *out);

/* The shared segment's host-wide figures: 1 and *out, or 0 when this
 * process uses its own cache. */
int vt__cache_shared_info(vt_cache *c, vt_shm_info *out);

/* fork() support, called from the owner's pthread_atfork handlers (object_table.c):
 * prepare takes the cache's lock in the forking thread, parent releases it,
 * child releases it and forgets blocks that other parent threads were
 * filling, so the child keeps every block that was ready. */
void vt__cache_fork_prepare(vt_cache *c);
void vt__cache_fork_parent(vt_cache *c);
void vt__cache_fork_child(vt_cache *c);

#endif
