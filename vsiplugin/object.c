/* object.c: the object table and the block read path (see object.h).
 *
 * Locks: `table_mu` guards the table (entries, refcounts, loading flags) and
 * is never held across I/O or while calling into the cache; the cache has its
 * own lock. Objects are immutable once loaded except for their refcount. */
#include "object.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpl_error.h>

#include "cache.h"
#include "config.h"
#include "engine.h"
#include "planner.h"
#include "s3.h"
#include "stats.h"

#define TABLE_BUCKETS 1024
#define TABLE_MAX_ENTRIES 8192

struct vt_object {
    char *path;           /* "bucket/key": the table key */
    char *bucket;
    char *key;
    char *cache_key;      /* "bucket/key\n<etag>": block cache identity */
    char *etag;           /* as the server sent it, or "" */
    uint64_t size;
    time_t loaded_at;
    char *missing;        /* a remembered 404: why (the message), or NULL */
    int refs;             /* table_mu */
    int loading;          /* table_mu: a thread is fetching the header */
    int in_table;         /* table_mu */
    vt_object *next;      /* table_mu: hash chain */
};

static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t table_cv = PTHREAD_COND_INITIALIZER;
static vt_object *table[TABLE_BUCKETS];
static size_t table_count;
static vt_cache *g_cache;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* ---- fork safety: a child must not inherit a held lock or a load that no
 * thread of its own will finish. The forking thread takes the table lock and
 * then the cache's (nothing else ever holds both: object.c never calls the
 * cache with table_mu held), so the child inherits both consistent: it keeps
 * every object and every ready block, and a process pool forked after the
 * parent opened a file costs no request per worker for the header. */

static void atfork_prepare(void)
{
    pthread_mutex_lock(&table_mu);
    if (g_cache)
        vt__cache_fork_prepare(g_cache);
}

static void atfork_parent(void)
{
    if (g_cache)
        vt__cache_fork_parent(g_cache);
    pthread_mutex_unlock(&table_mu);
}

static void atfork_child(void)
{
    size_t i;
    if (g_cache)
        vt__cache_fork_child(g_cache);
    pthread_mutex_unlock(&table_mu);
    pthread_cond_init(&table_cv, NULL);
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

vt_cache *vt__object_cache(void)
{
    vt_cache *c;
    pthread_once(&atfork_once, install_atfork);
    pthread_mutex_lock(&table_mu);
    if (g_cache == NULL) {
        uint64_t budget = vt__cfg_size(NULL, "VSITUNE_CACHE_SIZE",
                                       VT_DEFAULT_CACHE_SIZE, 0,
                                       (uint64_t)1 << 40);
        uint64_t bs = vt__cfg_size(NULL, "VSITUNE_BLOCK_SIZE",
                                   VT_DEFAULT_BLOCK_SIZE, 4096, 16u << 20);
        g_cache = vt__cache_new((size_t)budget, (size_t)bs);
    }
    c = g_cache;
    pthread_mutex_unlock(&table_mu);
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
    free(o->path);
    free(o->bucket);
    free(o->key);
    free(o->cache_key);
    free(o->etag);
    free(o->missing);
    free(o);
}

/* table_mu held. Unlink o from its chain. */
static void table_remove(vt_object *o)
{
    vt_object **pp = &table[hash_str(o->path)];
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

static void describe_failure(char *errbuf, size_t errlen, const char *bucket,
                             const char *key, const vt_http_resp *r,
                             vt_err err, const char *what)
{
    char *code = NULL, *msg = NULL;
    if (r->status >= 300 && r->body_len > 0)
        vt__s3_parse_error((const char *)r->body, r->body_len, &code, &msg);
    if (r->status > 0)
        snprintf(errbuf, errlen, "%s s3://%s/%s: HTTP %ld%s%s%s%s (%s)", what,
                 bucket, key, r->status, code ? " " : "", code ? code : "",
                 msg ? ": " : "", msg ? msg : "", vt_strerror(err));
    else
        snprintf(errbuf, errlen, "%s s3://%s/%s: %s%s%s", what, bucket, key,
                 vt_strerror(err), r->error[0] ? ": " : "", r->error);
    free(code);
    free(msg);
}

/* Store the bytes [0, len) that start the object as cache blocks. */
static void seed_blocks(vt_object *o, const unsigned char *data, size_t len)
{
    vt_cache *c = vt__object_cache();
    size_t bs = vt__cache_block_size(c);
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
        vt__cache_release(c, b);
    }
}

/* Fetch the header of a new object; fills o->size/etag/cache_key. */
static vt_err load_header(vt_object *o, long *http_status, char *errbuf,
                          size_t errlen)
{
    vt_http_resp r;
    vt_err err;
    uint64_t hsize = vt__cfg_size(o->path, "VSITUNE_HEADER_SIZE",
                                  VT_DEFAULT_HEADER_SIZE, 1024, 64u << 20);
    size_t klen;

    err = vt__s3_get(o->bucket, o->key, 0, hsize, NULL, &r, errbuf, errlen);
    *http_status = r.status;
    if (err == VT_OK)
        err = vt__s3_status_err(r.status);
    if (r.status == 416) {
        /* S3 answers a range on an empty object with 416 InvalidRange. */
        o->size = 0;
        err = VT_OK;
    } else if (err == VT_OK && r.status == 206 && r.has_content_range) {
        o->size = r.total_size;
    } else if (err == VT_OK && r.status == 200) {
        o->size = r.body_len; /* server ignored Range: we have it all */
    } else if (err == VT_OK) {
        err = VT_EPROTO;
        snprintf(r.error, sizeof(r.error), "no Content-Range in a %ld answer",
                 r.status);
    }
    if (err != VT_OK) {
        if (errbuf[0] == '\0' || r.status != 0)
            describe_failure(errbuf, errlen, o->bucket, o->key, &r, err,
                             "vsitune: cannot open");
        goto out;
    }
    o->etag = strdup(r.etag ? r.etag : "");
    klen = strlen(o->path) + strlen(o->etag) + 2;
    o->cache_key = malloc(klen);
    if (!o->etag || !o->cache_key) {
        err = VT_ENOMEM;
        goto out;
    }
    snprintf(o->cache_key, klen, "%s\n%s", o->path, o->etag);
    o->loaded_at = time(NULL);
    if (o->size > 0)
        seed_blocks(o, r.body, r.body_len);
out:
    vt__http_resp_clear(&r);
    return err;
}

vt_err vt__object_open(const char *path, vt_object **out, long *http_status,
                       char *errbuf, size_t errlen)
{
    unsigned h = hash_str(path);
    long ttl = (long)vt__cfg_size(path, "VSITUNE_METADATA_TTL",
                                  VT_DEFAULT_META_TTL, 0, 1u << 30);
    long neg_ttl = (long)vt__cfg_size(path, "VSITUNE_NEGATIVE_TTL",
                                      VT_DEFAULT_NEGATIVE_TTL, 0, 1u << 30);
    vt_object *o = NULL, *dead = NULL;
    vt_err err = VT_OK;
    int remembered = 0;

    *out = NULL;
    *http_status = 0;
    errbuf[0] = '\0';
    pthread_once(&atfork_once, install_atfork);
    pthread_mutex_lock(&table_mu);
    for (;;) {
        for (o = table[h]; o; o = o->next)
            if (strcmp(o->path, path) == 0)
                break;
        if (o && o->loading) {
            pthread_cond_wait(&table_cv, &table_mu);
            continue;
        }
        if (o && time(NULL) - o->loaded_at >= (o->missing ? neg_ttl : ttl)) {
            table_remove(o);          /* stale: handles keep their copy */
            if (o->refs == 0) {
                o->next = dead;
                dead = o;
            }
            o = NULL;
        }
        break;
    }
    if (o && o->missing) {
        /* A 404 seen less than VSITUNE_NEGATIVE_TTL ago. Only a 404: a
         * transient failure is never remembered. */
        snprintf(errbuf, errlen, "%s", o->missing);
        pthread_mutex_unlock(&table_mu);
        free_list(dead);
        *http_status = 404;
        return VT_ENOTFOUND;
    }
    if (o) {
        o->refs++;
        pthread_mutex_unlock(&table_mu);
        free_list(dead);
        *out = o;
        return VT_OK;
    }
    o = calloc(1, sizeof(*o));
    if (!o || !(o->path = strdup(path)) ||
        vt__s3_split(path, &o->bucket, &o->key) != VT_OK) {
        pthread_mutex_unlock(&table_mu);
        free_list(dead);
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

    err = load_header(o, http_status, errbuf, errlen);
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
const char *vt__object_etag(const vt_object *o) { return o->etag; }

const char *vt__object_path(const vt_object *o) { return o->path; }

void vt__object_clear_all(void)
{
    vt_object *dead = NULL;
    size_t i;
    pthread_mutex_lock(&table_mu);
    for (i = 0; i < TABLE_BUCKETS; i++) {
        vt_object *o = table[i], *next;
        for (; o; o = next) {
            next = o->next;
            if (o->loading)
                continue;
            table_remove(o);
            if (o->refs == 0) {
                o->next = dead;
                dead = o;
            }
        }
    }
    pthread_mutex_unlock(&table_mu);
    free_list(dead);
}

/* The object changed under us: forget it and its blocks. */
static void object_invalidate(vt_object *o)
{
    pthread_mutex_lock(&table_mu);
    if (o->in_table)
        table_remove(o);
    pthread_mutex_unlock(&table_mu);
    vt__cache_drop_prefix(vt__object_cache(), o->cache_key);
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
    uint64_t gap = vt__cfg_size(o->path, "VSITUNE_MERGE_GAP",
                                VT_DEFAULT_MERGE_GAP, 0, 1u << 30) / bs;
    uint64_t maxb = vt__cfg_size(o->path, "VSITUNE_MAX_REQUEST_SIZE",
                                 VT_DEFAULT_MAX_REQUEST, bs, 1u << 30) / bs;
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
        if (off + want > o->size)
            want = o->size - off;
        if (e == VT_OK)
            e = vt__s3_status_err(r->status);
        if (e == VT_OK && r->status == 200 && off == 0 && r->body_len == o->size)
            ; /* whole object in a 200: fine */
        else if (e == VT_OK && (r->status != 206 || r->body_len != want ||
                                 r->range_first != off))
            e = VT_EPROTO;
        if (e == VT_OK && o->etag[0] && r->etag && strcmp(r->etag, o->etag) != 0)
            e = VT_ECHANGED; /* a server that ignored If-Match */
        if (e != VT_OK && err == VT_OK) {
            err = e;
            describe_failure(errbuf, errlen, o->bucket, o->key, r, e,
                             "vsitune: read of");
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
                vt__cache_fail(c, p[k].blk, e);
            else
                vt__cache_fill(c, p[k].blk, r->body + boff, blen);
            p[k].role = VT_ROLE_WAIT; /* now settled: wait returns at once */
        }
    }
    vt__stats_tick(); /* after the fills: the cache counters include them */
    goto out;

fail_all:
    for (i = 0; i < np; i++)
        if (p[i].role == VT_ROLE_FILL) {
            vt__cache_fail(c, p[i].blk, err);
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

vt_err vt__object_read(vt_object *o, size_t n, void *const *dst,
                       const uint64_t *off, const size_t *len,
                       uint64_t readahead, char *errbuf, size_t errlen)
{
    vt_cache *c = vt__object_cache();
    size_t bs = vt__cache_block_size(c);
    uint64_t *idx = NULL, ra_first = 0, ra_last = 0;
    pinned *p = NULL;
    size_t nidx = 0, cap = 0, i, np = 0;
    int any_fill = 0;
    vt_err err = VT_OK;

    errbuf[0] = '\0';
    for (i = 0; i < n; i++) {
        if (off[i] > o->size || len[i] > o->size - off[i]) {
            snprintf(errbuf, errlen, "vsitune: read past the end of s3://%s/%s",
                     o->bucket, o->key);
            return VT_EINVAL;
        }
        if (len[i] > 0)
            cap += (size_t)((off[i] + len[i] - 1) / bs - off[i] / bs + 1);
    }
    if (n > 0 && readahead > 0) {
        uint64_t end = 0;
        for (i = 0; i < n; i++)
            if (len[i] > 0 && off[i] + len[i] > end)
                end = off[i] + len[i];
        uint64_t ra_end = end + readahead > o->size ? o->size : end + readahead;
        if (ra_end > end) {
            ra_first = (end + bs - 1) / bs; /* whole blocks past the read */
            ra_last = ra_end > 0 ? (ra_end - 1) / bs : 0;
            if (ra_last >= ra_first)
                cap += (size_t)(ra_last - ra_first + 1);
            else
                ra_first = 1, ra_last = 0;
        }
    }
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
        if (p[i].role == VT_ROLE_FILL)
            any_fill = 1;
    }
    /* Readahead only rides on a read that goes to the network anyway, so a
     * read served from memory never costs a request. Its blocks all lie past
     * the needed ones (it starts after the furthest range), so p stays
     * sorted. */
    if (err == VT_OK && any_fill && np > 0 && ra_last >= ra_first) {
        uint64_t b;
        for (b = ra_first; b <= ra_last; b++) {
            if (p[np - 1].idx >= b)
                continue;
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
                vt__cache_fail(c, p[i].blk, err);
                p[i].role = VT_ROLE_WAIT;
            }
    }
    for (i = 0; i < np && err == VT_OK; i++) {
        if (!p[i].needed || !p[i].blk || p[i].role != VT_ROLE_WAIT)
            continue;
        err = vt__cache_wait(c, p[i].blk);
        if (err != VT_OK && errbuf[0] == '\0')
            snprintf(errbuf, errlen, "vsitune: read of s3://%s/%s: %s",
                     o->bucket, o->key, vt_strerror(err));
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

void vt__object_forget(const char *path)
{
    vt_object *o, *dead = NULL;
    pthread_mutex_lock(&table_mu);
    for (o = table[hash_str(path)]; o; o = o->next)
        if (strcmp(o->path, path) == 0 && !o->loading)
            break;
    if (o) {
        table_remove(o);
        if (o->refs == 0)
            dead = o;
    }
    pthread_mutex_unlock(&table_mu);
    if (dead) {
        dead->next = NULL;
        free_list(dead);
    }
}
