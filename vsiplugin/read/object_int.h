/* object_int.h: what the files of the object module share, and nobody else.
 *
 * The object module (object.h) is split by concern: the table and fork
 * handling (object.c), the header load and the first-answer judge
 * (object_header.c), the host-wide metadata (object_shared.c), the 404
 * memory (object_missing.c), the block read path (object_read.c) and
 * invalidation (object_forget.c). They share the object's layout, the
 * table and its lock, declared here; callers outside read/object*.c include
 * object.h only.
 *
 * Locks (object.c's design comment): vt__object_table_mu guards the table
 * (entries, refcounts, loading flags, the fields marked table_mu below) and
 * is never held across I/O or while calling into the cache. */
#ifndef VT_OBJECT_INT_H
#define VT_OBJECT_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "backends/backend.h"
#include "http/engine.h"
#include "read/object.h"
#include "read/tiffmap.h"
#include "shm/shmseg.h"

#define VT_OBJECT_BUCKETS 1024

struct vt_object {
    char *id;             /* endpoint + "\n" + path: the table key, so that
                             objects of different endpoints never mix */
    const vt_backend *be; /* the service it lives in (set when opened) */
    char *path;           /* "bucket/key" */
    char *bucket;
    char *key;
    char *cache_key;      /* (ident, else id) + "\n" + etag: block cache
                             identity */
    char *ident;          /* the shared caches' name for it (ident.h: endpoint,
                             path, credential identity), or NULL */
    char *etag;           /* as the server sent it, or "" */
    char *head_key;       /* cache_key + "\nhead": the cache key of the
                             object's first head_len bytes kept as blocks
                             of their own, the last one short (a first GET
                             that does not end on a block boundary,
                             hdrsize.h), or NULL */
    size_t head_len;      /* set at load, then read-only; 0: no head */
    uint64_t learn_need;  /* set at load, then read-only: what the first
                             answer says the header needs (hdrsize.h), or
                             0: this load teaches nothing */
    uint64_t learn_cap;   /* set at load with learn_need: reads are learned
                             up to here (VSITUNE_HEADER_SIZE, at least a
                             block) */
    uint64_t read_end;    /* atomic: the furthest end, below learn_cap, of
                             the reads made of it */
    int read_noted;       /* atomic: taught its prefix (once) */
    uint64_t size;
    vt_tiff_span *spans;  /* set at load, read-only after: the byte spans of
                             its TIFF images from the header GET's bytes
                             (tiffmap.h), where readahead stops; NULL when
                             not a TIFF or not known (metadata from the
                             shared segment) */
    size_t n_spans;
    long long mtime;      /* Last-Modified (0: unknown) */
    time_t loaded_at;
    char *missing;        /* a remembered 404: why (the message), or NULL */
    int missing_by_read;  /* table_mu: GDAL met that 404 reading an empty
                             handle, so its cache keeps no HTTP status */
    int size_seen;        /* table_mu once loaded: the size is confirmed
                             (the first answer held every byte, or a later
                             answer stated the same total) */
    int end_checked;      /* table_mu: vt__object_note_end asked already */
    int near_noted;       /* vt__near_once: its first read past the header
                             size was noted (near.h) */
    int refs;             /* table_mu */
    int loading;          /* table_mu: a thread is fetching the header */
    int in_table;         /* table_mu */
    vt_object *next;      /* table_mu: hash chain */
};

/* object_table.c. The table: hash chains of objects by id, under
 * vt__object_table_mu; vt__object_table_cv is signalled when a load ends. */
extern pthread_mutex_t vt__object_table_mu;
extern pthread_cond_t vt__object_table_cv;
extern vt_object *vt__object_table[VT_OBJECT_BUCKETS];

/* Install the fork handlers (once; before the table is first used). */
void vt__object_install_atfork(void);

/* vt__object_table_mu held. Keep the table bounded: drop unreferenced
 * entries, oldest first; returns them, linked by next, to free (with
 * vt__object_free_list) after unlocking. */
vt_object *vt__object_table_trim(void);

/* The chain of the table an id hashes to. */
unsigned vt__object_hash(const char *s);

/* vt__object_table_mu held. Link o into chain h (its id's hash). */
void vt__object_table_insert(vt_object *o, unsigned h);

/* vt__object_table_mu held. Unlink o from its chain. */
void vt__object_table_remove(vt_object *o);

/* Free o (NULL: nothing), or a list of them linked by next. Never call with
 * an object still in the table or referenced. */
void vt__object_free(vt_object *o);
void vt__object_free_list(vt_object *o);

/* The table key of path in be: endpoint identity + "\n" + path. malloc'd;
 * NULL when be cannot address it. */
char *vt__object_id(const vt_backend *be, const char *path);

/* The process's shared segment, when its cache is made and has one (never
 * makes the cache), else NULL; and the segment's wait bound. */
vt_shm *vt__object_shm(void);
long vt__object_shm_wait_ms(void);

/* "<what> s3://b/k: HTTP ..." (o's backend's describe) into errbuf. */
void vt__object_describe(const vt_object *o, char *errbuf, size_t errlen,
                         const vt_http_resp *r, vt_err err, const char *what);

/* object_header.c: fetch the header of a new object; fills
 * o->size/etag/cache_key/mtime/loaded_at/size_seen. Blocks. */
vt_err vt__object_load_header(vt_object *o, long *http_status, char *errbuf,
                              size_t errlen);

/* object_header.c: look for the head block another process stored for o
 * (host-wide cache) and set o->head_key/head_len when it is there. Never
 * waits, never asks the network. */
void vt__object_find_head(vt_object *o);

/* Whether every range lies inside o (object.c): else VT_EINVAL naming it in
 * errbuf. *cap gets the number of blocks of bs bytes the ranges touch
 * (counted with repeats): object_read.c's room for them. */
vt_err vt__object_check_ranges(const vt_object *o, size_t bs, size_t n,
                               const uint64_t *off, const size_t *len,
                               size_t *cap, char *errbuf, size_t errlen);

/* Record the reads of o inside its first cache block (for
 * vt__object_teach). Thread-safe, lock-free. */
void vt__object_note_reads(vt_object *o, size_t n, const uint64_t *off,
                           const size_t *len);

/* Once o was read and let go: tell its prefix what its opens needed, the
 * larger of its structure and what was read of its first block (a COG's
 * smallest overview is stored right after its header): hdrsize.h. Once per
 * object; no lock held. */
void vt__object_teach(vt_object *o);

/* object_header.c: copy the n ranges (dst[i] <- bytes off[i]..+len[i]) out of
 * an object's blocks of bs bytes, each block's bytes as bytes(ctx, index,
 * &blen) gives them. 0, or -1 when a block is shorter than a range needs
 * (nothing is read past it). Both read paths copy with it. */
typedef const unsigned char *(*vt_block_bytes)(const void *ctx, uint64_t idx,
                                               size_t *blen);
int vt__object_copy_ranges(size_t bs, size_t n, void *const *dst,
                           const uint64_t *off, const size_t *len,
                           vt_block_bytes bytes, const void *ctx);

/* object_header.c, object_read.c's fast path: copy the n ranges from o's
 * head blocks when every one lies inside the head and its blocks are in the
 * cache: 1; else 0 (the block path reads them). */
int vt__object_read_head(vt_object *o, size_t n, void *const *dst,
                         const uint64_t *off, const size_t *len);

/* object_shared.c: vt__object_load_header through the host-wide metadata;
 * and forgetting what the host knows about path. */
vt_err vt__object_load_shared(vt_object *o, long ttl, long neg_ttl,
                              long *http_status, char *errbuf, size_t errlen);
void vt__object_forget_shared(const vt_backend *be, const char *path);

/* object_missing.c: what vt__object_open_remembered answers this thread. */
void vt__object_set_remembered(int remembered);

/* object_forget.c: the object changed under us: forget it and its blocks. */
void vt__object_invalidate(vt_object *o);

#endif
