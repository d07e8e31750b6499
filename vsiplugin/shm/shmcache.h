/* shmcache.h: cache blocks in the shared segment, for every process of the
 * host (of one user and pool).
 *
 * A block is named by the SHA-256 digest of its object's identity (endpoint,
 * bucket, key, ETag, credential identity: cache.c builds it) and its index.
 * Roles as in cache.h: a lookup either copies a ready block out (HIT), makes
 * the caller its filler (FILL: fill or fail it exactly once), or says another
 * thread or process is filling it (WAIT: vt__shmc_wait). When the segment
 * cannot take a block (every slot busy being filled, lock unusable) the
 * answer is PRIVATE: fetch it yourself and keep it to yourself.
 *
 * Waiting is bounded: a waiter whose filler died takes the block over and
 * becomes its filler; one whose filler is alive but slower than timeout_ms
 * gets PRIVATE and fetches the block itself (cross-process coalescing never
 * blocks a reader longer than that). Data is copied out of the segment under
 * a seqlock check (the block's generation), never read in place, so a block
 * evicted or refilled while it is being copied is detected and never
 * handed over.
 *
 * Eviction: LIRS (lirs.h) over the resident blocks, one host budget (the
 * segment's data slots), never exceeded.
 *
 * Thread-safety: any thread of any attached process. The blocks lock (a
 * robust mutex in the segment) is held only for index and policy updates,
 * never across a copy of block data, I/O, or another lock. */
#ifndef VT_SHMCACHE_H
#define VT_SHMCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "shm/shmseg.h"

typedef enum vt_shmc_role {
    VT_SHMC_HIT = 0,
    VT_SHMC_FILL = 1,
    VT_SHMC_WAIT = 2,
    VT_SHMC_PRIVATE = 3,
    VT_SHMC_FAILED = 4         /* vt__shmc_wait only: the filler failed */
} vt_shmc_role;

/* A claim on a descriptor (FILL or WAIT). */
typedef struct vt_shmc_ref {
    int32_t desc;
    uint32_t gen;
} vt_shmc_ref;

/* Look up block `index` of the object named by digest. HIT: dst (at least
 * the segment's block size) holds *len bytes. FILL / WAIT: *ref names the
 * block. */
vt_shmc_role vt__shmc_lookup(vt_shm *s, const uint8_t digest[32],
                             uint64_t index, unsigned char *dst, size_t *len,
                             vt_shmc_ref *ref);

/* Filler: publish len (<= block size) bytes and wake the waiters. */
void vt__shmc_fill(vt_shm *s, const vt_shmc_ref *ref, const void *data,
                   size_t len);

/* Filler: the fetch failed with err (a vt_err); waiters get err and msg. The
 * failure is not cached: the next lookup fetches again. */
void vt__shmc_fail(vt_shm *s, const vt_shmc_ref *ref, int err,
                   const char *msg);

/* Wait for a block another is filling, at most timeout_ms in all. Returns
 * HIT (dst, *len), FAILED (*err, msg), FILL (its filler died: *ref is now
 * ours to fill or fail) or PRIVATE (too slow or gone: fetch it yourself). */
vt_shmc_role vt__shmc_wait(vt_shm *s, vt_shmc_ref *ref,
                           const uint8_t digest[32], uint64_t index,
                           long timeout_ms, unsigned char *dst, size_t *len,
                           int *err, char *msg, size_t msglen);

/* Filler giving up without fill or fail (its read failed elsewhere): the
 * waiters' wait ends in FAILED with VT_EAGAIN, i.e. "fetch it yourself". */
void vt__shmc_abandon(vt_shm *s, const vt_shmc_ref *ref);

/* Forget the ready block `index` of digest (a reader found its bytes wrong:
 * suspect.h): the next lookup in any process fetches it again; copies in
 * progress see its generation change. Blocks being filled are left alone.
 * Returns 1 when a block was dropped. */
int vt__shmc_drop(vt_shm *s, const uint8_t digest[32], uint64_t index);

/* Segment creation (shmseg.c; defined in shmblocks.c): empty index, free
 * lists, LIRS. */
void vt__shmcache_init(vt_shm *s);

/* Rebuild the index, free lists and LIRS from the descriptors' states (the
 * blocks lock's owner died). Runs under the blocks lock. */
void vt__shmcache_repair(vt_shm *s);

/* SHA-256 of an identity string (the digest blocks and metadata are named
 * by). Pure. */
void vt__shm_digest(const char *identity, uint8_t out[32]);

#endif
