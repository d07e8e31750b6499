/* object.h: remote objects as vsitune knows them, and reads from them.
 *
 * An object is (bucket, key) pinned to the ETag first seen. Its metadata
 * (size, ETag) lives in a process-wide table with a TTL
 * (VSITUNE_METADATA_TTL), so re-opening a file costs no request; its bytes
 * live in the process-wide block cache (cache.h), the header included: the
 * first stat/open issues one range GET of the first VSITUNE_HEADER_SIZE
 * bytes (size from Content-Range, no HEAD) and stores them as cache blocks,
 * so GDAL's dozens of tiny header reads are served from memory.
 *
 * Reads go block by block through the cache (hit: copy; another thread
 * fetching: wait; missing: fetch), missing blocks merged into as few range
 * GETs as the planner allows, all sent at once through the engine, each
 * carrying If-Match with the pinned ETag. A read either returns every byte
 * asked for or fails: never a partial or blank buffer. */
#ifndef VT_OBJECT_H
#define VT_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "http/engine.h"
#include "base/error.h"
#include "read/planner.h"

typedef struct vt_object vt_object;

/* Find or load the object at path "bucket/key" of the service be (the
 * backend the calling handler serves; the object keeps it: every request
 * about it goes through be). On success *out holds a reference (release
 * with vt__object_release). Concurrent loads of one object issue one
 * request. On failure errbuf says what the server said
 * (bucket, key, status, S3 Code and Message); *http_status gets the status
 * (0: none). Failures are never cached. */
vt_err vt__object_open(const vt_backend *be, const char *path, vt_object **out,
                       long *http_status, char *errbuf, size_t errlen);

void vt__object_release(vt_object *o);

/* 1 when the calling thread's last vt__object_open answered a 404 from
 * memory (VSITUNE_NEGATIVE_TTL), without a request: GDAL's handler, answering
 * from its cache, reports no error then either. */
int vt__object_open_remembered(void);

/* GDAL learns that a name it opened without checking (an empty handle on an
 * extension-less name, handler.c) is missing by reading it, which keeps no
 * HTTP status in its cache: mark path's remembered 404 so (its later stats
 * and opens then say no status, gdal_error.h). The mark goes with the 404. */
void vt__object_missing_by_read(const vt_backend *be, const char *path);

/* 1 when path's remembered 404 carries that mark. */
int vt__object_missing_was_read(const vt_backend *be, const char *path);

/* What the table already knows of path, without a request: 1 and the
 * size and Last-Modified when a fresh entry for it exists (not a remembered
 * 404), else 0 (VSI_STAT_CACHE_ONLY). */
int vt__object_peek(const vt_backend *be, const char *path, uint64_t *size,
                    long long *mtime);

uint64_t vt__object_size(const vt_object *o);
long long vt__object_mtime(const vt_object *o); /* Last-Modified, 0: unknown */
const char *vt__object_etag(const vt_object *o);

/* "bucket/key" as opened: the path its options are read for (config.h).
 * Lives as long as the reference. */
const char *vt__object_path(const vt_object *o);

/* The object's identity in the block cache (bucket, key and ETag); lives as
 * long as the reference. */
const char *vt__object_cache_key(const vt_object *o);

/* A handle's read options, resolved once when the handle opens (for the
 * object's path, base/config.h: the same values, and the same warnings for
 * bad ones, as reading them by name) and read from here by each of its
 * reads: no option lookup on the read path. */
typedef struct vt_read_opts {
    uint64_t merge_gap;     /* VSITUNE_MERGE_GAP, bytes */
    uint64_t max_request;   /* VSITUNE_MAX_REQUEST_SIZE, at least a block */
    uint64_t readahead_max; /* VSITUNE_READAHEAD_MAX, bytes */
    uint64_t header_size;   /* VSITUNE_HEADER_SIZE, bytes */
    uint64_t first_read_max; /* VSITUNE_FIRST_READ_MAX, bytes (near.h) */
} vt_read_opts;

/* Resolve o's read options into *out now. Makes the block cache if need be
 * (its block size bounds max_request); call with no lock held. */
void vt__object_read_opts(const vt_object *o, vt_read_opts *out);

/* Read n ranges: dst[i] gets len[i] bytes at off[i]; every range must lie
 * inside the object (else VT_EINVAL naming bucket and key). opts: the
 * calling handle's options (NULL: resolved for this read). ra: the calling
 * handle's readahead state (NULL: none): when the read goes to the network
 * and continues the handle's previous fetch, whole blocks past it ride
 * along (planner.h), never more than the cache can keep (an eighth of
 * VSITUNE_CACHE_SIZE, at most VSITUNE_READAHEAD_MAX; none at 0). On
 * VT_ECHANGED (412, or an answer whose size contradicts the size known) the
 * object is dropped from the table so the next open sees the new version.
 * On failure errbuf holds the full error (bucket, key, status, S3 code and
 * message), also in threads that waited for another's fetch. Thread-safe;
 * may block on network I/O. */
vt_err vt__object_read(vt_object *o, const vt_read_opts *opts, size_t n,
                       void *const *dst, const uint64_t *off,
                       const size_t *len, vt_readahead *ra, char *errbuf,
                       size_t errlen);

/* A read reached past the end of the object as known. When that size came
 * only from a stated total (never from seeing every byte) and was never
 * checked, one HEAD checks it; a different size or ETag drops the object
 * (the next open learns the truth) and returns VT_ECHANGED with errbuf
 * saying so. Otherwise VT_OK and no request. Thread-safe. */
vt_err vt__object_note_end(vt_object *o, char *errbuf, size_t errlen);

/* The object module's part of forgetting (read/forget.h tells every module,
 * listings and the backend included; call that). Open handles keep their
 * copy.
 *
 * The object at path "bucket/key" of be: its table entry, its cached blocks
 * and its host-wide metadata. */
void vt__object_forget(const vt_backend *be, const char *path);

/* The objects in the table whose path starts with prefix ("bucket/dir";
 * "": all), their cached blocks and their host-wide metadata. */
void vt__object_forget_prefix(const char *prefix);

/* Every object in the table, their blocks, and all host-wide metadata. */
void vt__object_clear_all(void);

/* What the first answer about an object (the header GET) says. */
typedef enum vt_first {
    VT_FIRST_OK = 0,     /* consistent: *size (and the ETag, the bytes) kept */
    VT_FIRST_EMPTY = 1,  /* a 416 that says the object is empty */
    VT_FIRST_DOUBT = 2   /* contradicts itself or lacks the size: why says
                            what; ask again (HEAD), keep nothing from it */
} vt_first;

/* Judge the answer r to "bytes=0-(asked-1)" (any status the engine
 * returned). Pure; exposed for the unit tests. */
vt_first vt__object_judge_first(const vt_http_resp *r, uint64_t asked,
                                uint64_t *size, char *why, size_t whylen);

/* The process-wide block cache (created on first use, budget
 * VSITUNE_CACHE_SIZE, block size VSITUNE_BLOCK_SIZE). The first caller makes
 * it, shared segment included, with no vsitune lock held; callers meanwhile
 * wait for it. Call with no lock held. */
struct vt_cache *vt__object_cache(void);

#endif
