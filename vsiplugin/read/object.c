/* object.c: the object table and the block read path (see object.h).
 *
 * Locks: `table_mu` guards the table (entries, refcounts, loading flags) and
 * is never held across I/O or while calling into the cache; the cache has its
 * own lock. Objects are immutable once loaded except for their refcount.
 * The process's cache is made by its first caller with no lock held (making
 * it may attach the shared segment: files, a helper process); `make_mu` only
 * guards the `making` flag. Never two of these locks at once, except in the
 * fork handlers (make_mu, then table_mu, then the cache's). */
#include "read/object.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpl_error.h>

#include "cache/cache.h"
#include "base/config.h"
#include "http/engine.h"
#include "read/ident.h"
#include "read/listing.h"
#include "read/planner.h"
#include "backends/s3/s3.h"
#include "shm/shmmeta.h"
#include "shm/shmopts.h"
#include "stats/stats.h"
#include "base/xmlscan.h"

#define TABLE_BUCKETS 1024
#define TABLE_MAX_ENTRIES 8192

struct vt_object {
    char *id;             /* endpoint + "\n" + path: the table key, so that
                             objects of different endpoints never mix */
    char *path;           /* "bucket/key" */
    char *bucket;
    char *key;
    char *cache_key;      /* (ident, else id) + "\n" + etag: block cache
                             identity */
    char *ident;          /* the shared caches' name for it (ident.h: endpoint,
                             path, credential identity), or NULL */
    char *etag;           /* as the server sent it, or "" */
    uint64_t size;
    long long mtime;      /* Last-Modified (0: unknown) */
    time_t loaded_at;
    char *missing;        /* a remembered 404: why (the message), or NULL */
    int missing_by_read;  /* table_mu: GDAL met that 404 reading an empty
                             handle, so its cache keeps no HTTP status */
    int size_seen;        /* table_mu once loaded: the size is confirmed
                             (the first answer held every byte, or a later
                             answer stated the same total) */
    int end_checked;      /* table_mu: vt__object_note_end asked already */
    int refs;             /* table_mu */
    int loading;          /* table_mu: a thread is fetching the header */
    int in_table;         /* table_mu */
    vt_object *next;      /* table_mu: hash chain */
};

static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t table_cv = PTHREAD_COND_INITIALIZER;
static vt_object *table[TABLE_BUCKETS];
static size_t table_count;
/* The process's cache: NULL until its maker publishes it (once made, never
 * changed). g_shm_wait_ms is written before, and read after, that store. */
static vt_cache *_Atomic g_cache;
static long g_shm_wait_ms;   /* the shared cache's wait bound */
static pthread_mutex_t make_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t make_cv = PTHREAD_COND_INITIALIZER;
static int making;           /* make_mu: a thread is making g_cache */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* ---- fork safety: a child must not inherit a held lock or a load that no
 * thread of its own will finish. The forking thread takes the table lock and
 * then the cache's (nothing else ever holds both: object.c never calls the
 * cache with table_mu held), so the child inherits both consistent: it keeps
 * every object and every ready block, and a process pool forked after the
 * parent opened a file costs no request per worker for the header. */

static void atfork_prepare(void)
{
    pthread_mutex_lock(&make_mu);
    pthread_mutex_lock(&table_mu);
    if (g_cache)
        vt__cache_fork_prepare(g_cache);
}

static void atfork_parent(void)
{
    if (g_cache)
        vt__cache_fork_parent(g_cache);
    pthread_mutex_unlock(&table_mu);
    pthread_mutex_unlock(&make_mu);
}

static void atfork_child(void)
{
    size_t i;
    if (g_cache)
        vt__cache_fork_child(g_cache);
    pthread_mutex_unlock(&table_mu);
    pthread_mutex_unlock(&make_mu);
    pthread_cond_init(&table_cv, NULL);
    pthread_cond_init(&make_cv, NULL);
    making = 0; /* its maker lives in the parent: the child makes its own */
    for (i = 0; i < TABLE_BUCKETS; i++) {
        vt_object **pp = &table[i];
        while (*pp) {
            if ((*pp)->loading) { /* leaked: its loader lives in the parent */
                (*pp)->in_table = 0;
                *pp = (*pp)->next;
                table_count--;
            } else {
                pp = &(*pp)->next;
            }
        }
    }
}

static void install_atfork(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Make the process's cache: the private one and, as the options ask, the
 * shared segment attached to it. Called by one thread at a time (making),
 * with no lock held. NULL: no memory (the next caller tries again). */
static vt_cache *make_cache(void)
{
    uint64_t budget = vt__cfg_cache_budget();
    uint64_t bs = vt__opt_size(NULL, VT_OPT_BLOCK_SIZE);
    vt_cache *c = vt__cache_new((size_t)budget, (size_t)bs);
    if (c) {
        vt_shm *s = vt__shm_from_options(bs, &g_shm_wait_ms);
        if (s)
            vt__cache_use_shared(c, s, g_shm_wait_ms);
    }
    return c;
}

vt_cache *vt__object_cache(void)
{
    vt_cache *c;
    pthread_once(&atfork_once, install_atfork);
    c = g_cache;
    if (c == NULL) {
        /* One maker; whoever comes meanwhile waits for its cache, as it
         * would have waited for the table lock (no caller ever sees the
         * private cache before the segment's decision). */
        pthread_mutex_lock(&make_mu);
        while ((c = g_cache) == NULL && making)
            pthread_cond_wait(&make_cv, &make_mu);
        if (c == NULL)
            making = 1;
        pthread_mutex_unlock(&make_mu);
        if (c == NULL) {
            c = make_cache();
            pthread_mutex_lock(&make_mu);
            g_cache = c;
            making = 0;
            pthread_cond_broadcast(&make_cv);
            pthread_mutex_unlock(&make_mu);
        }
    }
    vt__shm_warn(); /* why sharing is not used, once, outside any lock */
    return c;
}

static unsigned hash_str(const char *s)
{
    unsigned h = 2166136261u;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h % TABLE_BUCKETS;
}

static void object_free(vt_object *o)
{
    if (!o)
        return;
    free(o->id);
    free(o->path);
    free(o->bucket);
    free(o->key);
    free(o->cache_key);
    free(o->ident);
    free(o->etag);
    free(o->missing);
    free(o);
}

/* table_mu held. Unlink o from its chain. */
static void table_remove(vt_object *o)
{
    vt_object **pp = &table[hash_str(o->id)];
    while (*pp && *pp != o)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = o->next;
        table_count--;
    }
    o->in_table = 0;
}

/* table_mu held. Keep the table bounded: drop unreferenced entries, oldest
 * first, until below the cap. Returns objects to free after unlocking. */
static vt_object *table_trim(void)
{
    vt_object *dead = NULL;
    while (table_count >= TABLE_MAX_ENTRIES) {
        vt_object *oldest = NULL;
        size_t i;
        for (i = 0; i < TABLE_BUCKETS; i++) {
            vt_object *o;
            for (o = table[i]; o; o = o->next)
                if (o->refs == 0 && !o->loading &&
                    (!oldest || o->loaded_at < oldest->loaded_at))
                    oldest = o;
        }
        if (!oldest)
            break;
        table_remove(oldest);
        oldest->next = dead;
        dead = oldest;
    }
    return dead;
}

static void free_list(vt_object *o)
{
    while (o) {
        vt_object *n = o->next;
        object_free(o);
        o = n;
    }
}

/* "<what> s3://b/k: HTTP ..." (vt__s3_describe) into errbuf. */
static void describe_failure(char *errbuf, size_t errlen, const char *bucket,
                             const char *key, const vt_http_resp *r,
                             vt_err err, const char *what)
{
    char tail[768];

    vt__s3_describe(tail, sizeof(tail), bucket, key, r, err);
    snprintf(errbuf, errlen, "%s %s", what, tail);
}

/* ---- header blocks of recent objects: kept whatever the budget ----
 * GDAL reads an object's header in dozens of small reads, and often stats,
 * opens and reads it in separate steps. The header blocks of the last
 * HDR_RING objects loaded stay pinned (pinned blocks stay findable even past
 * the budget, cache.h), so VSITUNE_CACHE_SIZE=0 still opens a file with one
 * request: at most HDR_RING x VSITUNE_HEADER_SIZE bytes. Own lock, never held
 * with another: the pins it lets go are released after unlocking. */
#define HDR_RING 16
#define HDR_RING_BLOCKS 4
static pthread_mutex_t ring_mu = PTHREAD_MUTEX_INITIALIZER;
static vt_block *hdr_ring[HDR_RING][HDR_RING_BLOCKS];
static unsigned hdr_next;

/* Keeps the n <= HDR_RING_BLOCKS pins (the caller's array holds no more). */
static void ring_keep(vt_cache *c, vt_block *const pins[HDR_RING_BLOCKS],
                      size_t n)
{
    vt_block *old[HDR_RING_BLOCKS];
    size_t i;

    pthread_mutex_lock(&ring_mu);
    memcpy(old, hdr_ring[hdr_next], sizeof(old));
    memset(hdr_ring[hdr_next], 0, sizeof(old));
    for (i = 0; i < n && i < HDR_RING_BLOCKS; i++)
        hdr_ring[hdr_next][i] = pins[i];
    hdr_next = (hdr_next + 1) % HDR_RING;
    pthread_mutex_unlock(&ring_mu);
    for (i = 0; i < HDR_RING_BLOCKS; i++)
        if (old[i])
            vt__cache_release(c, old[i]);
}

/* Store the bytes [0, len) that start the object as cache blocks; the
 * first HDR_RING_BLOCKS of them stay pinned in the ring. */
static void seed_blocks(vt_object *o, const unsigned char *data, size_t len)
{
    vt_cache *c = vt__object_cache();
    size_t bs = vt__cache_block_size(c), npins = 0;
    vt_block *pins[HDR_RING_BLOCKS];
    uint64_t idx;
    for (idx = 0; (uint64_t)idx * bs < len; idx++) {
        size_t start = (size_t)idx * bs;
        size_t n = len - start < bs ? len - start : bs;
        vt_block_role role;
        vt_block *b;
        /* only whole blocks, or the object's last block */
        if (n < bs && start + n != o->size)
            break;
        b = vt__cache_lookup(c, o->cache_key, idx, &role);
        if (!b)
            break;
        if (role == VT_ROLE_FILL)
            vt__cache_fill(c, b, data + start, n);
        if (npins < HDR_RING_BLOCKS)
            pins[npins++] = b;
        else
            vt__cache_release(c, b);
    }
    ring_keep(c, pins, npins);
}

/* What the first answer about an object says (see object.h). */
vt_first vt__object_judge_first(const vt_http_resp *r, uint64_t asked,
                                uint64_t *size, char *why, size_t whylen)
{
    char *code = NULL, *actual = NULL;
    vt_first v = VT_FIRST_DOUBT;

    *size = 0;
    why[0] = '\0';
    if (r->status == 416) {
        /* S3 answers a range of an empty object with 416 InvalidRange and
         * <ActualObjectSize>0; a 416 that names another size (in its
         * Content-Range or its body) contradicts itself: we asked from 0. */
        if (r->body && r->body_len) {
            code = vt__xml_tag((const char *)r->body, r->body_len, "Code");
            actual = vt__xml_tag((const char *)r->body, r->body_len,
                                 "ActualObjectSize");
        }
        if (r->has_total && r->total_size > 0)
            snprintf(why, whylen, "HTTP 416 for bytes 0-%llu of an object of "
                     "%llu bytes (Content-Range)", (unsigned long long)asked - 1,
                     (unsigned long long)r->total_size);
        else if (actual && strcmp(actual, "0") != 0)
            snprintf(why, whylen, "HTTP 416 for bytes 0-%llu of an object of "
                     "%.40s bytes (ActualObjectSize)",
                     (unsigned long long)asked - 1, actual);
        else if ((r->has_total && r->total_size == 0) ||
                 (actual && strcmp(actual, "0") == 0))
            v = VT_FIRST_EMPTY;
        else
            snprintf(why, whylen, "HTTP 416%s%s with no object size",
                     code ? " " : "", code ? code : "");
    } else if (r->status == 206) {
        /* The engine checked the range against the request and the body
         * against the range; what it cannot know is the total. */
        if (!r->has_content_range)
            snprintf(why, whylen, "HTTP 206 without a usable Content-Range");
        else if (!r->has_total)
            snprintf(why, whylen, "HTTP 206 with Content-Range bytes "
                     "%llu-%llu/* (no object size)",
                     (unsigned long long)r->range_first,
                     (unsigned long long)r->range_last);
        else if (r->range_first != 0 || r->body_len != r->range_last + 1 ||
                 (r->range_last + 1 < asked &&
                  r->range_last + 1 != r->total_size))
            snprintf(why, whylen, "HTTP 206 with Content-Range bytes "
                     "%llu-%llu/%llu and %zu body bytes for bytes 0-%llu",
                     (unsigned long long)r->range_first,
                     (unsigned long long)r->range_last,
                     (unsigned long long)r->total_size, r->body_len,
                     (unsigned long long)asked - 1);
        else {
            *size = r->total_size;
            v = VT_FIRST_OK;
        }
    } else if (r->status == 200) {
        /* The server ignored Range and sent the whole object: usable when
         * its length is stated and met, and not empty (an empty 200 is how
         * a broken proxy answers too; a HEAD tells). */
        if (!r->has_total || r->total_size != r->body_len)
            snprintf(why, whylen, "HTTP 200 with %zu body bytes and no "
                     "matching Content-Length", r->body_len);
        else if (r->body_len == 0)
            snprintf(why, whylen, "HTTP 200 with an empty body");
        else {
            *size = r->body_len;
            v = VT_FIRST_OK;
        }
    } else {
        snprintf(why, whylen, "HTTP %ld", r->status);
    }
    free(code);
    free(actual);
    return v;
}

/* A doubtful first answer: ask for the size and ETag with a HEAD. On
 * success o->size/etag are set (etag malloc'd) and *use_bytes says whether
 * the first answer's bytes belong to that same object version. */
static vt_err confirm_head(vt_object *o, const vt_http_resp *first,
                           const char *why, int *use_bytes, long *http_status,
                           char *errbuf, size_t errlen)
{
    vt_http_resp h;
    vt_err err;
    char herr[512];

    *use_bytes = 0;
    CPLDebug("VSITUNE", "s3://%s/%s: first answer doubtful (%s): HEAD",
             o->bucket, o->key, why);
    err = vt__s3_head(o->bucket, o->key, &h, herr, sizeof(herr));
    *http_status = h.status;
    if (err == VT_OK && !h.has_total) {
        err = VT_EPROTO;
        snprintf(herr, sizeof(herr), "s3://%s/%s: HTTP %ld without "
                 "Content-Length", o->bucket, o->key, h.status);
    }
    if (err != VT_OK) {
        /* Never remembered, not even a 404: the two answers disagree. */
        snprintf(errbuf, errlen, "vsitune: cannot open s3://%s/%s: %s; then "
                 "HEAD: %s", o->bucket, o->key, why,
                 herr[0] ? herr : vt_strerror(err));
        if (err == VT_ENOTFOUND)
            *http_status = 0;
        goto out;
    }
    o->size = h.total_size;
    o->mtime = h.last_modified;
    o->etag = strdup(h.etag ? h.etag : "");
    if (!o->etag) {
        err = VT_ENOMEM;
        goto out;
    }
    /* The bytes of a 206 are the object's when the HEAD names the same
     * version and a size the range fits in. */
    *use_bytes = first->status == 206 && first->has_content_range &&
                 first->range_first == 0 && first->body_len > 0 &&
                 first->range_last < o->size &&
                 (first->range_last + 1 == first->body_len) &&
                 first->etag && h.etag && strcmp(first->etag, h.etag) == 0;
out:
    vt__http_resp_clear(&h);
    return err;
}

/* Fetch the header of a new object; fills o->size/etag/cache_key. Only a
 * size and ETag from an answer consistent in itself are kept (see
 * vt__object_judge_first); a doubtful one is checked with a HEAD, or fails
 * this open only. */
static vt_err load_header(vt_object *o, long *http_status, char *errbuf,
                          size_t errlen)
{
    vt_http_resp r;
    vt_err err;
    uint64_t hsize = vt__opt_size(o->path, VT_OPT_HEADER_SIZE);
    uint64_t size = 0;
    size_t klen;
    int use_bytes = 0, remember = 1;
    char why[256];
    vt_first v;

    err = vt__s3_get(o->bucket, o->key, 0, hsize, NULL, &r, errbuf, errlen);
    *http_status = r.status;
    if (err != VT_OK && r.status != 416) {
        if (errbuf[0] == '\0' || r.status != 0)
            describe_failure(errbuf, errlen, o->bucket, o->key, &r, err,
                             "vsitune: cannot open");
        goto out;
    }
    errbuf[0] = '\0';
    err = VT_OK;
    v = vt__object_judge_first(&r, hsize, &size, why, sizeof(why));
    if (v == VT_FIRST_OK || v == VT_FIRST_EMPTY) {
        o->size = size;
        o->mtime = r.last_modified;
        o->etag = strdup(r.etag ? r.etag : "");
        use_bytes = v == VT_FIRST_OK;
        vt__stats_avoided(VT_AVOIDED_HEAD); /* the size came with the header */
    } else if (r.status == 200 && r.body_len == 0 && r.has_total &&
               r.total_size == 0) {
        /* An empty 200 stating Content-Length 0: an empty object whose
         * server ignored Range (stock GDAL takes it so, without a HEAD), or
         * a broken proxy's answer. Taken for this open only: never
         * remembered, so the next open asks again. */
        o->size = 0;
        o->mtime = r.last_modified;
        o->etag = strdup(r.etag ? r.etag : "");
        remember = 0;
    } else {
        err = confirm_head(o, &r, why, &use_bytes, http_status, errbuf,
                           errlen);
        if (err != VT_OK)
            goto out;
    }
    klen = strlen(o->ident ? o->ident : o->id) +
           strlen(o->etag ? o->etag : "") + 2;
    o->cache_key = malloc(klen);
    if (!o->etag || !o->cache_key) {
        err = VT_ENOMEM;
        goto out;
    }
    snprintf(o->cache_key, klen, "%s\n%s", o->ident ? o->ident : o->id,
             o->etag);
    o->loaded_at = remember ? time(NULL) : 0; /* 0: stale at the next open */
    if (o->size > 0 && use_bytes)
        seed_blocks(o, r.body, r.body_len);
    o->size_seen = use_bytes && r.body_len == o->size;
out:
    vt__http_resp_clear(&r);
    return err;
}

/* Take size and ETag from the host-wide metadata (another process's
 * header GET). */
static vt_err adopt(vt_object *o, const vt_shm_objinfo *in)
{
    size_t klen = strlen(o->ident) + strlen(in->etag) + 2;
    o->size = in->size;
    o->mtime = (long long)in->last_modified;
    o->etag = strdup(in->etag);
    o->cache_key = malloc(klen);
    if (!o->etag || !o->cache_key)
        return VT_ENOMEM;
    snprintf(o->cache_key, klen, "%s\n%s", o->ident, in->etag);
    o->loaded_at = (time_t)in->loaded_at;
    return VT_OK;
}

/* load_header through the host-wide metadata: another process's answer
 * when it is fresh (no request), else ours, published for the others (a
 * failure other than a 404 never is). Without a shared segment, just
 * load_header. */
static vt_err load_shared(vt_object *o, long ttl, long neg_ttl,
                          long *http_status, char *errbuf, size_t errlen)
{
    vt_shm *s = vt__cache_shared(vt__object_cache());
    vt_shm_objinfo info;
    vt_shmc_ref ref;
    vt_shmm_role role;
    uint8_t d[32];
    vt_err err;

    if (!s || !(o->ident = vt__ident_object(&vt__backend_s3, o->bucket, o->key, o->path)))
        return load_header(o, http_status, errbuf, errlen);
    vt__shm_digest(o->ident, d);
    {
        /* Another process's answer is trusted for a shorter time than our
         * own: a fresh process should not see an object it never opened as
         * it was minutes ago (stock GDAL would ask). */
        long sttl = (long)vt__opt_size(o->path, VT_OPT_SHARED_METADATA_TTL);
        role = vt__shmm_get(s, d, ttl < sttl ? ttl : sttl,
                            neg_ttl < sttl ? neg_ttl : sttl, g_shm_wait_ms,
                            &info, &ref);
    }
    if (role == VT_SHMM_FOUND && info.missing) {
        snprintf(errbuf, errlen, "%s", info.msg);
        *http_status = 404;
        return VT_ENOTFOUND;
    }
    if (role == VT_SHMM_FOUND)
        return adopt(o, &info);
    err = load_header(o, http_status, errbuf, errlen);
    if (role != VT_SHMM_LOAD)
        return err;
    memset(&info, 0, sizeof info);
    info.loaded_at = (int64_t)time(NULL);
    if (err == VT_OK && o->loaded_at != 0) { /* 0: taken for one open only */
        info.size = o->size;
        info.loaded_at = (int64_t)o->loaded_at;
        info.last_modified = (int64_t)o->mtime;
        snprintf(info.etag, sizeof info.etag, "%s", o->etag);
        if (strlen(o->etag) < sizeof info.etag) {
            vt__shmm_publish(s, &ref, &info);
            return err;
        }
    } else if (err == VT_ENOTFOUND && *http_status == 404 && neg_ttl > 0) {
        info.missing = 1;
        snprintf(info.msg, sizeof info.msg, "%s", errbuf);
        vt__shmm_publish(s, &ref, &info);
        return err;
    }
    vt__shmm_drop(s, &ref);
    return err;
}

/* Forget what the host knows about path (written, deleted, renamed). */
static void forget_shared(const char *path)
{
    vt_shm *s = vt__cache_shared(g_cache);
    char *bucket = NULL, *key = NULL, *ident = NULL;
    uint8_t d[32];

    if (!s || vt__s3_split(path, &bucket, &key) != VT_OK)
        goto out;
    ident = vt__ident_object(&vt__backend_s3, bucket, key, path);
    if (ident) {
        vt__shm_digest(ident, d);
        vt__shmm_forget(s, d);
    }
out:
    free(bucket);
    free(key);
    free(ident);
}

/* The table key of path: endpoint identity + "\n" + path. malloc'd. */
static char *object_id(const char *path)
{
    char *ep = vt__s3_endpoint_base(path), *id = NULL;
    size_t n;
    if (!ep)
        return NULL;
    n = strlen(ep) + strlen(path) + 2;
    id = malloc(n);
    if (id)
        snprintf(id, n, "%s\n%s", ep, path);
    free(ep);
    return id;
}

/* Whether this thread's last vt__object_open was a remembered 404. */
static _Thread_local int t_remembered;

int vt__object_open_remembered(void) { return t_remembered; }

/* The remembered 404 of path, marked or asked (mark: set the mark). */
static int by_read(const char *path, int mark)
{
    char *id = object_id(path);
    vt_object *o;
    int marked = 0;
    if (!id)
        return 0;
    pthread_mutex_lock(&table_mu);
    for (o = table[hash_str(id)]; o; o = o->next)
        if (strcmp(o->id, id) == 0 && o->missing) {
            if (mark)
                o->missing_by_read = 1;
            marked |= o->missing_by_read;
        }
    pthread_mutex_unlock(&table_mu);
    free(id);
    return marked;
}

void vt__object_missing_by_read(const char *path) { (void)by_read(path, 1); }

int vt__object_missing_was_read(const char *path) { return by_read(path, 0); }

vt_err vt__object_open(const char *path, vt_object **out, long *http_status,
                       char *errbuf, size_t errlen)
{
    char *id = object_id(path);
    unsigned h;
    long ttl = (long)vt__opt_size(path, VT_OPT_METADATA_TTL);
    long neg_ttl = (long)vt__opt_size(path, VT_OPT_NEGATIVE_TTL);
    vt_object *o = NULL, *dead = NULL;
    vt_err err = VT_OK;
    int remembered = 0, fresh_only = vt__cfg_non_cached(path);

    t_remembered = 0;
    *out = NULL;
    *http_status = 0;
    errbuf[0] = '\0';
    if (!id) {
        snprintf(errbuf, errlen, "vsitune: cannot address s3://%s", path);
        return VT_EINVAL;
    }
    h = hash_str(id);
    pthread_once(&atfork_once, install_atfork);
    pthread_mutex_lock(&table_mu);
    for (;;) {
        for (o = table[h]; o; o = o->next)
            if (strcmp(o->id, id) == 0)
                break;
        if (o && o->loading) {
            pthread_cond_wait(&table_cv, &table_mu);
            continue;
        }
        if (o && (fresh_only ||
                  time(NULL) - o->loaded_at >= (o->missing ? neg_ttl : ttl))) {
            table_remove(o);          /* stale: handles keep their copy */
            if (o->refs == 0) {
                o->next = dead;
                dead = o;
            }
            o = NULL;
        }
        break;
    }
    t_remembered = o && o->missing;
    if (o && o->missing) {
        /* A 404 seen less than VSITUNE_NEGATIVE_TTL ago. Only a 404: a
         * transient failure is never remembered. */
        snprintf(errbuf, errlen, "%s", o->missing);
        pthread_mutex_unlock(&table_mu);
        free_list(dead);
        free(id);
        *http_status = 404;
        return VT_ENOTFOUND;
    }
    if (o) {
        o->refs++;
        pthread_mutex_unlock(&table_mu);
        free_list(dead);
        free(id);
        *out = o;
        return VT_OK;
    }
    o = calloc(1, sizeof(*o));
    if (o) {
        o->id = id; /* o owns it from here */
        id = NULL;
    }
    if (!o || !(o->path = strdup(path)) ||
        vt__s3_split(path, &o->bucket, &o->key) != VT_OK) {
        pthread_mutex_unlock(&table_mu);
        free_list(dead);
        free(id);
        object_free(o);
        snprintf(errbuf, errlen, "vsitune: invalid path %s", path);
        return VT_EINVAL;
    }
    o->loading = 1;
    o->refs = 1;
    o->in_table = 1;
    o->next = table[h];
    table[h] = o;
    table_count++;
    pthread_mutex_unlock(&table_mu);
    free_list(dead);

    /* CPL_VSIL_CURL_NON_CACHED: every open asks, here and host-wide */
    err = fresh_only ? load_header(o, http_status, errbuf, errlen)
                     : load_shared(o, ttl, neg_ttl, http_status, errbuf, errlen);
    vt__stats_tick();

    pthread_mutex_lock(&table_mu);
    o->loading = 0;
    if (err == VT_ENOTFOUND && *http_status == 404 && neg_ttl > 0 &&
        (o->missing = strdup(errbuf)) != NULL) {
        o->loaded_at = time(NULL); /* remembered; forgotten on a write */
        o->refs--;
        remembered = 1;            /* o belongs to the table now */
    } else if (err != VT_OK) {
        table_remove(o);     /* never cache any other failure */
        o->refs--;
    }
    dead = table_trim();
    pthread_cond_broadcast(&table_cv);
    pthread_mutex_unlock(&table_mu);
    free_list(dead);
    if (err != VT_OK) {
        if (!remembered)
            object_free(o);
        return err;
    }
    *out = o;
    return VT_OK;
}

int vt__object_peek(const char *path, uint64_t *size, long long *mtime)
{
    char *id = object_id(path);
    long ttl = (long)vt__opt_size(path, VT_OPT_METADATA_TTL);
    vt_object *o;
    int found = 0, fresh_only = vt__cfg_non_cached(path); /* not under
                                         table_mu: it takes GDAL's lock */
    if (!id)
        return 0;
    pthread_mutex_lock(&table_mu);
    for (o = table[hash_str(id)]; o; o = o->next)
        if (strcmp(o->id, id) == 0 && !o->loading && !o->missing &&
            time(NULL) - o->loaded_at < ttl && !fresh_only) {
            *size = o->size;
            *mtime = o->mtime;
            found = 1;
            break;
        }
    pthread_mutex_unlock(&table_mu);
    free(id);
    return found;
}

void vt__object_release(vt_object *o)
{
    int gone;
    if (!o)
        return;
    pthread_mutex_lock(&table_mu);
    gone = --o->refs == 0 && !o->in_table;
    pthread_mutex_unlock(&table_mu);
    if (gone)
        object_free(o);
}

uint64_t vt__object_size(const vt_object *o) { return o->size; }
long long vt__object_mtime(const vt_object *o) { return o->mtime; }
const char *vt__object_etag(const vt_object *o) { return o->etag; }

const char *vt__object_path(const vt_object *o) { return o->path; }
const char *vt__object_cache_key(const vt_object *o) { return o->cache_key; }

void vt__object_clear_all(void)
{
    vt__object_forget_prefix("");
    if (vt__cache_shared(g_cache))
        vt__shmm_forget_all(vt__cache_shared(g_cache));
}

/* The object changed under us: forget it and its blocks. */
static void object_invalidate(vt_object *o)
{
    pthread_mutex_lock(&table_mu);
    if (o->in_table)
        table_remove(o);
    pthread_mutex_unlock(&table_mu);
    vt__cache_drop_prefix(vt__object_cache(), o->cache_key);
    if (o->ident && vt__cache_shared(g_cache)) {
        /* Blocks of the old version need no dropping: their name has the
         * old ETag, nobody asks for them again, LIRS lets them go. */
        uint8_t d[32];
        vt__shm_digest(o->ident, d);
        vt__shmm_forget(vt__cache_shared(g_cache), d);
    }
}

vt_err vt__object_note_end(vt_object *o, char *errbuf, size_t errlen)
{
    vt_http_resp h;
    vt_err err;
    int ask;

    errbuf[0] = '\0';
    pthread_mutex_lock(&table_mu);
    ask = !o->size_seen && !o->end_checked && o->size > 0;
    o->end_checked = 1;
    pthread_mutex_unlock(&table_mu);
    if (!ask)
        return VT_OK;
    err = vt__s3_head(o->bucket, o->key, &h, errbuf, errlen);
    if (err == VT_OK && h.has_total &&
        (h.total_size != o->size ||
         (o->etag[0] && h.etag && strcmp(h.etag, o->etag) != 0))) {
        snprintf(errbuf, errlen, "vsitune: read of s3://%s/%s: the object has "
                 "%llu bytes, %llu when it was opened (object changed or a "
                 "wrong size was announced): open it again", o->bucket, o->key,
                 (unsigned long long)h.total_size,
                 (unsigned long long)o->size);
        object_invalidate(o);
        err = VT_ECHANGED;
    } else {
        err = VT_OK; /* the size stands (or cannot be checked now) */
        errbuf[0] = '\0';
    }
    vt__http_resp_clear(&h);
    return err;
}

/* ---- the read path ---- */

typedef struct pinned {
    uint64_t idx;
    vt_block *blk;
    vt_block_role role;
    int needed;           /* 0: readahead only */
} pinned;

static int find_pinned(const pinned *p, size_t n, uint64_t idx)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p[mid].idx < idx)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && p[lo].idx == idx ? (int)lo : -1;
}

/* Fetch the runs of FILL blocks and fill (or fail) them. */
static vt_err fetch_runs(vt_object *o, vt_cache *c, pinned *p, size_t np,
                         char *errbuf, size_t errlen)
{
    size_t bs = vt__cache_block_size(c);
    uint64_t gap = vt__opt_size(o->path, VT_OPT_MERGE_GAP) / bs;
    uint64_t maxb = vt__opt_size_min(o->path, VT_OPT_MAX_REQUEST_SIZE, bs) / bs;
    uint64_t *fill_idx = NULL;
    vt_block_run *runs = NULL;
    vt_s3_request *rq = NULL;
    vt_http_req *reqs = NULL;
    vt_http_resp *resps = NULL;
    vt_err *errs = NULL, err = VT_OK;
    size_t nfill = 0, nruns = 0, i, built = 0;

    for (i = 0; i < np; i++)
        if (p[i].role == VT_ROLE_FILL)
            nfill++;
    if (nfill == 0)
        return VT_OK;
    fill_idx = malloc(nfill * sizeof(*fill_idx));
    runs = malloc(nfill * sizeof(*runs));
    if (!fill_idx || !runs) {
        err = VT_ENOMEM;
        goto fail_all;
    }
    nfill = 0;
    for (i = 0; i < np; i++)
        if (p[i].role == VT_ROLE_FILL)
            fill_idx[nfill++] = p[i].idx;
    nruns = vt__plan_runs(fill_idx, nfill, gap, maxb, runs);
    rq = calloc(nruns, sizeof(*rq));
    reqs = calloc(nruns, sizeof(*reqs));
    resps = calloc(nruns, sizeof(*resps));
    errs = calloc(nruns, sizeof(*errs));
    if (!rq || !reqs || !resps || !errs) {
        err = VT_ENOMEM;
        goto fail_all;
    }
    for (i = 0; i < nruns; i++) {
        uint64_t off = runs[i].first * bs;
        uint64_t len = runs[i].count * bs;
        if (off + len > o->size)
            len = o->size - off;
        err = vt__s3_build_get(o->bucket, o->key, off, len,
                               o->etag[0] ? o->etag : NULL, &rq[i], errbuf,
                               errlen);
        if (err != VT_OK)
            goto fail_all;
        built++;
        reqs[i] = rq[i].req;
    }
    vt__engine_perform_many(nruns, reqs, resps, errs);

    for (i = 0; i < nruns; i++) {
        uint64_t off = runs[i].first * bs, j;
        uint64_t want = runs[i].count * bs;
        vt_err e = errs[i];
        const vt_http_resp *r = &resps[i];
        char msg[1024], why[256];

        why[0] = msg[0] = '\0';
        if (off + want > o->size)
            want = o->size - off;
        if (e == VT_OK)
            e = vt__s3_status_err(r->status);
        if (e == VT_OK && r->status == 200 && off == 0 &&
            r->body_len == o->size)
            ; /* whole object in a 200: fine */
        else if (e == VT_OK && r->status == 200)
            snprintf(why, sizeof(why), "HTTP 200 with %zu bytes for a range "
                     "of %llu at %llu", r->body_len, (unsigned long long)want,
                     (unsigned long long)off);
        else if (e == VT_OK && r->has_total && r->total_size != o->size)
            snprintf(why, sizeof(why), "the object has %llu bytes now, %llu "
                     "when it was opened", (unsigned long long)r->total_size,
                     (unsigned long long)o->size);
        else if (e == VT_OK && (r->body_len != want || r->range_first != off))
            snprintf(why, sizeof(why), "%zu bytes at %llu for %llu at %llu",
                     r->body_len, (unsigned long long)r->range_first,
                     (unsigned long long)want, (unsigned long long)off);
        if (why[0] && r->has_total && r->total_size != o->size)
            e = VT_ECHANGED; /* our size was wrong: reopen to learn it */
        else if (why[0])
            e = VT_EPROTO;
        if (e == VT_ERANGE)
            e = VT_ECHANGED; /* a range inside the size we know is refused */
        if (e == VT_OK && o->etag[0] && r->etag && strcmp(r->etag, o->etag) != 0) {
            e = VT_ECHANGED; /* a server that ignored If-Match */
            snprintf(why, sizeof(why), "ETag %.80s, opened as %.80s", r->etag,
                     o->etag);
        }
        if (e == VT_OK && r->has_total && r->total_size == o->size) {
            /* A second answer states the same total: the size is confirmed
             * as a HEAD would (vt__object_note_end need not ask). Read and
             * written under table_mu only (TSan saw the unlocked test race
             * with another thread's write). */
            pthread_mutex_lock(&table_mu);
            o->size_seen = 1;
            pthread_mutex_unlock(&table_mu);
        }
        if (e != VT_OK) {
            vt_http_resp shown = *r;
            if (why[0])
                snprintf(shown.error, sizeof(shown.error), "%s", why);
            describe_failure(msg, sizeof(msg), o->bucket, o->key, &shown, e,
                             "vsitune: read of");
            if (err == VT_OK) {
                err = e;
                snprintf(errbuf, errlen, "%s", msg);
            }
        }
        for (j = runs[i].first; j < runs[i].first + runs[i].count; j++) {
            int k = find_pinned(p, np, j);
            size_t boff = (size_t)((j - runs[i].first) * bs), blen;
            blen = e == VT_OK && r->body_len > boff
                       ? (r->body_len - boff < bs ? r->body_len - boff : bs)
                       : 0;
            if (k < 0) {
                /* A gap block nobody asked for: we have its bytes anyway. */
                vt_block_role role;
                vt_block *gb;
                if (blen == 0 ||
                    !(gb = vt__cache_lookup(c, o->cache_key, j, &role)))
                    continue;
                if (role == VT_ROLE_FILL)
                    vt__cache_fill(c, gb, r->body + boff, blen);
                vt__cache_release(c, gb);
                continue;
            }
            if (p[k].role != VT_ROLE_FILL)
                continue; /* someone else is fetching it */
            if (e != VT_OK)
                vt__cache_fail(c, p[k].blk, e, msg);
            else
                vt__cache_fill(c, p[k].blk, r->body + boff, blen);
            p[k].role = VT_ROLE_WAIT; /* now settled: wait returns at once */
        }
    }
    vt__stats_tick(); /* after the fills: the cache counters include them */
    goto out;

fail_all:
    if (errbuf[0] == '\0')
        snprintf(errbuf, errlen, "vsitune: read of s3://%s/%s: %s", o->bucket,
                 o->key, vt_strerror(err));
    for (i = 0; i < np; i++)
        if (p[i].role == VT_ROLE_FILL) {
            vt__cache_fail(c, p[i].blk, err, errbuf);
            p[i].role = VT_ROLE_WAIT;
        }
out:
    for (i = 0; i < built; i++)
        vt__s3_request_clear(&rq[i]);
    if (resps)
        for (i = 0; i < nruns; i++)
            vt__http_resp_clear(&resps[i]);
    free(fill_idx);
    free(runs);
    free(rq);
    free(reqs);
    free(resps);
    free(errs);
    return err;
}

/* Blocks of readahead a read may add: what the cache can keep (an eighth of
 * its budget, so readahead never flushes it), at most VSITUNE_READAHEAD_MAX. */
static uint64_t readahead_cap(const vt_object *o, vt_cache *c, size_t bs)
{
    vt_cache_stats st;
    vt_shm_info si;
    uint64_t budget, max = vt__opt_size(o->path, VT_OPT_READAHEAD_MAX);

    vt__cache_get_stats(c, &st);
    budget = st.budget;
    if (vt__cache_shared_info(c, &si)) /* the host's segment holds them */
        budget = si.data_bytes;
    if (max > budget / 8)
        max = budget / 8;
    return max / bs;
}

vt_err vt__object_read(vt_object *o, size_t n, void *const *dst,
                       const uint64_t *off, const size_t *len,
                       vt_readahead *ra, char *errbuf, size_t errlen)
{
    vt_cache *c = vt__object_cache();
    size_t bs = vt__cache_block_size(c);
    uint64_t *idx = NULL, ra_blocks = 0, first_fill = 0, last_fill = 0;
    pinned *p = NULL;
    size_t nidx = 0, cap = 0, i, np = 0;
    int any_fill = 0, waited_out = 0;
    vt_err err = VT_OK;

    errbuf[0] = '\0';
    for (i = 0; i < n; i++) {
        if (off[i] > o->size || len[i] > o->size - off[i]) {
            snprintf(errbuf, errlen, "vsitune: read past the end of s3://%s/%s "
                     "(%zu bytes at %llu, object of %llu)", o->bucket, o->key,
                     len[i], (unsigned long long)off[i],
                     (unsigned long long)o->size);
            return VT_EINVAL;
        }
        if (len[i] > 0)
            cap += (size_t)((off[i] + len[i] - 1) / bs - off[i] / bs + 1);
    }
    if (ra)
        ra_blocks = readahead_cap(o, c, bs);
    cap += (size_t)ra_blocks;
    if (cap == 0)
        return VT_OK;
    idx = malloc(cap * sizeof(*idx));
    p = calloc(cap, sizeof(*p));
    if (!idx || !p) {
        err = VT_ENOMEM;
        goto out;
    }
    for (i = 0; i < n; i++) {
        uint64_t b;
        if (len[i] == 0)
            continue;
        for (b = off[i] / bs; b <= (off[i] + len[i] - 1) / bs; b++)
            idx[nidx++] = b;
    }
    np = vt__plan_sort_unique(idx, nidx);
    for (i = 0; i < np; i++) {
        p[i].idx = idx[i];
        p[i].needed = 1;
    }
    /* Pin everything first (never wait while holding unfilled FILLs). */
    for (i = 0; i < np; i++) {
        p[i].blk = vt__cache_lookup(c, o->cache_key, p[i].idx, &p[i].role);
        if (!p[i].blk) {
            err = VT_ENOMEM;
            break;
        }
        if (p[i].role == VT_ROLE_WAIT && vt__cache_shared(c) &&
            (waited_out || (!any_fill && i + 1 < np))) {
            /* Another process is fetching this block, and we hold no claim
             * yet: it claimed the rest of its run along with it. Wait for
             * it before claiming further, so that a window two processes
             * reach together is fetched once, not split between them into
             * more, smaller requests. A filler given up on (too slow, or
             * dead) makes the block ours, and the next ones it holds are
             * waited for the same way (each wait bounded), so that what we
             * take over is fetched as one run. Any other outcome is settled
             * (the wait below returns it at once). */
            if (vt__cache_wait(c, p[i].blk, NULL, 0) == VT_EAGAIN) {
                p[i].role = VT_ROLE_FILL;
                waited_out = 1;
            }
        }
        if (p[i].role == VT_ROLE_FILL) {
            if (!any_fill)
                first_fill = p[i].idx;
            last_fill = p[i].idx;
            any_fill = 1;
        }
    }
    /* Readahead only rides on a read that goes to the network anyway (a
     * read served from memory never costs a request), and only on a fetch
     * that continues this handle's previous one (planner.h). Its blocks
     * all lie past the needed ones, so p stays sorted. */
    if (err == VT_OK && any_fill && ra) {
        uint64_t w = vt__readahead_fetch(ra, first_fill, last_fill, ra_blocks);
        uint64_t b, last_block = o->size ? (o->size - 1) / bs : 0;
        for (b = p[np - 1].idx + 1; w > 0 && b <= last_block &&
                                    b <= last_fill + w; b++) {
            p[np].idx = b;
            p[np].needed = 0;
            p[np].blk = vt__cache_lookup(c, o->cache_key, b, &p[np].role);
            if (!p[np].blk)
                break;
            if (p[np].role != VT_ROLE_FILL) {
                vt__cache_release(c, p[np].blk); /* already there */
                continue;
            }
            np++;
        }
    }
    if (err == VT_OK) {
        err = fetch_runs(o, c, p, np, errbuf, errlen);
    } else {
        for (i = 0; i < np; i++)
            if (p[i].blk && p[i].role == VT_ROLE_FILL) {
                vt__cache_fail(c, p[i].blk, err, NULL);
                p[i].role = VT_ROLE_WAIT;
            }
    }
    while (err == VT_OK) {
        int refill = 0;
        for (i = 0; i < np && err == VT_OK; i++) {
            if (!p[i].needed || !p[i].blk || p[i].role != VT_ROLE_WAIT)
                continue;
            /* Another thread's (or process's) failure: its full words
             * become ours. */
            err = vt__cache_wait(c, p[i].blk, errbuf[0] ? NULL : errbuf,
                                 errbuf[0] ? 0 : errlen);
            if (err == VT_EAGAIN) {
                /* The shared cache's filler died or is too slow: ours now. */
                p[i].role = VT_ROLE_FILL;
                refill = 1;
                err = VT_OK;
            } else if (err != VT_OK && errbuf[0] == '\0') {
                snprintf(errbuf, errlen, "vsitune: read of s3://%s/%s: %s",
                         o->bucket, o->key, vt_strerror(err));
            }
        }
        if (!refill || err != VT_OK)
            break;
        err = fetch_runs(o, c, p, np, errbuf, errlen); /* settles them */
    }
    if (err == VT_OK) {
        for (i = 0; i < n; i++) {
            uint64_t pos = off[i], end = off[i] + len[i];
            unsigned char *d = dst[i];
            while (pos < end) {
                uint64_t b = pos / bs;
                int k = find_pinned(p, np, b);
                size_t blen, inb = (size_t)(pos - b * bs), take;
                const unsigned char *data = vt__block_data(p[k].blk, &blen);
                if (inb >= blen) { /* block shorter than expected */
                    err = VT_EPROTO;
                    snprintf(errbuf, errlen, "vsitune: short block in s3://%s/%s",
                             o->bucket, o->key);
                    break;
                }
                take = blen - inb;
                if (take > end - pos)
                    take = (size_t)(end - pos);
                memcpy(d, data + inb, take);
                d += take;
                pos += take;
            }
        }
    }
out:
    if (p)
        for (i = 0; i < np; i++)
            if (p[i].blk)
                vt__cache_release(c, p[i].blk);
    if (err == VT_ECHANGED)
        object_invalidate(o);
    free(idx);
    free(p);
    return err;
}

/* Forget every object whose path matches (exactly, or as a prefix), its
 * listing and its cached blocks; a loading object is left to its loader. */
static void forget_where(const char *arg, int as_prefix)
{
    vt_object *dead = NULL, *o;
    size_t i, n = strlen(arg), nkeys = 0, cap = 0;
    char **keys = NULL, **paths = NULL;
    vt_cache *c = vt__object_cache();

    pthread_mutex_lock(&table_mu);
    for (i = 0; i < TABLE_BUCKETS; i++) {
        vt_object *next;
        for (o = table[i]; o; o = next) {
            next = o->next;
            if (o->loading || (as_prefix ? strncmp(o->path, arg, n) != 0
                                         : strcmp(o->path, arg) != 0))
                continue;
            table_remove(o);
            if (o->cache_key) {
                if (nkeys == cap) {
                    size_t nc = cap ? cap * 2 : 8;
                    char **nk = realloc(keys, nc * sizeof(*nk));
                    char **np = realloc(paths, nc * sizeof(*np));
                    if (np)
                        paths = np;
                    if (nk && np) {
                        keys = nk;
                        cap = nc;
                    } else if (nk) {
                        keys = nk;
                    }
                }
                if (nkeys < cap && (keys[nkeys] = strdup(o->cache_key))) {
                    paths[nkeys] = strdup(o->path);
                    nkeys++;
                }
            }
            if (o->refs == 0) {
                o->next = dead;
                dead = o;
            }
        }
    }
    pthread_mutex_unlock(&table_mu);
    free_list(dead);
    for (i = 0; i < nkeys; i++) {
        vt__cache_drop_prefix(c, keys[i]);
        if (paths[i] && as_prefix) /* the host-wide metadata too */
            forget_shared(paths[i]);
        free(keys[i]);
        free(paths[i]);
    }
    free(keys);
    free(paths);
    if (as_prefix)
        vt__listing_forget_prefix(arg);
    else
        vt__listing_forget(arg);
}

void vt__object_forget_prefix(const char *prefix)
{
    forget_where(prefix, 1);
    if (*prefix == '\0') /* everything: blocks of objects no longer known too */
        vt__cache_drop_prefix(vt__object_cache(), "");
}

void vt__object_forget(const char *path)
{
    forget_where(path, 0);
    forget_shared(path);
}
