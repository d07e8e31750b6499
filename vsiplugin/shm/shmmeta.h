/* shmmeta.h: what vsitune knows about objects, shared by every process of
 * the host: size, ETag, Last-Modified, or a remembered 404.
 *
 * An entry is named by the SHA-256 digest of the object's identity without
 * its ETag (endpoint, bucket, key, credential identity: object.c builds it)
 * and carries the wall-clock time its header was fetched, to which each
 * process applies its own VSITUNE_METADATA_TTL / VSITUNE_NEGATIVE_TTL. So
 * an open in process B of an object process A opened costs no request, and
 * the first open of an object by N processes at once costs one: the others
 * wait for the loader (bounded; a loader that died is replaced).
 *
 * Thread-safety: any thread of any attached process; the metadata lock (a
 * robust mutex in the segment) is held only to copy an entry in or out. */
#ifndef VT_SHMMETA_H
#define VT_SHMMETA_H

#include <stdint.h>

#include "shm/shmcache.h"
#include "shm/shmseg.h"

typedef struct vt_shm_objinfo {
    uint64_t size;
    int64_t loaded_at;        /* time() when its header was fetched */
    int64_t last_modified;    /* time_t, 0: unknown */
    int missing;              /* a remembered 404: msg says what S3 said */
    char etag[128];
    char msg[480];
} vt_shm_objinfo;

typedef enum vt_shmm_role {
    VT_SHMM_FOUND = 0,        /* *out holds a fresh answer */
    VT_SHMM_LOAD = 1,         /* fetch it, then vt__shmm_publish or _drop */
    VT_SHMM_PRIVATE = 2       /* fetch it, publish nothing */
} vt_shmm_role;

/* Find the metadata named by digest, fresh for ttl (missing: neg_ttl)
 * seconds. When another process is loading it, wait up to timeout_ms. */
vt_shmm_role vt__shmm_get(vt_shm *s, const uint8_t digest[32], long ttl,
                          long neg_ttl, long timeout_ms, vt_shm_objinfo *out,
                          vt_shmc_ref *ref);

/* Loader: the answer (in->missing for a 404 to remember). */
void vt__shmm_publish(vt_shm *s, const vt_shmc_ref *ref,
                      const vt_shm_objinfo *in);

/* Loader: nothing to remember (a failure is never cached); waiters retry. */
void vt__shmm_drop(vt_shm *s, const vt_shmc_ref *ref);

/* Forget the object (written, deleted or renamed), in every process. */
void vt__shmm_forget(vt_shm *s, const uint8_t digest[32]);

/* Forget every object (VSICurlClearCache-like). */
void vt__shmm_forget_all(vt_shm *s);

/* Segment creation; repair after the metadata lock's owner died. */
void vt__shmmeta_init(vt_shm *s);
void vt__shmmeta_repair(vt_shm *s);

#endif
