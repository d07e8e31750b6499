/* object_table.c: the object table, its fork handling and the process's
 * block cache: what every file of the object module stands on (object_int.h
 * declares it; object.c finds and loads objects in it).
 *
 * Locks: `vt__object_table_mu` guards the table (entries, refcounts, loading
 * flags) and is never held across I/O or while calling into the cache; the
 * cache has its own lock. Objects are immutable once loaded except for their
 * refcount and the fields object_int.h marks table_mu. The process's cache is
 * made by its first caller with no lock held (making it may attach the shared
 * segment: files, a helper process); `make_mu` only guards the `making`
 * flag. Never two of these locks at once, except in the fork handlers
 * (make_mu, then the table's, then the cache's). */
#include "read/object_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/cache.h"
#include "base/config.h"
#include "shm/shmopts.h"

#define TABLE_MAX_ENTRIES 8192

pthread_mutex_t vt__object_table_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t vt__object_table_cv = PTHREAD_COND_INITIALIZER;
vt_object *vt__object_table[VT_OBJECT_BUCKETS];
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
 * then the cache's (nothing else ever holds both: object*.c never call the
 * cache with the table's lock held), so the child inherits both consistent:
 * it keeps every object and every ready block, and a process pool forked
 * after the parent opened a file costs no request per worker for the
 * header. */

static void atfork_prepare(void)
{
    pthread_mutex_lock(&make_mu);
    pthread_mutex_lock(&vt__object_table_mu);
    if (g_cache)
        vt__cache_fork_prepare(g_cache);
}

static void atfork_parent(void)
{
    if (g_cache)
        vt__cache_fork_parent(g_cache);
    pthread_mutex_unlock(&vt__object_table_mu);
    pthread_mutex_unlock(&make_mu);
}

static void atfork_child(void)
{
    size_t i;
    if (g_cache)
        vt__cache_fork_child(g_cache);
    pthread_mutex_unlock(&vt__object_table_mu);
    pthread_mutex_unlock(&make_mu);
    pthread_cond_init(&vt__object_table_cv, NULL);
    pthread_cond_init(&make_cv, NULL);
    making = 0; /* its maker lives in the parent: the child makes its own */
    for (i = 0; i < VT_OBJECT_BUCKETS; i++) {
        vt_object **pp = &vt__object_table[i];
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

void vt__object_install_atfork(void)
{
    pthread_once(&atfork_once, install_atfork);
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
    vt__object_install_atfork();
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

vt_shm *vt__object_shm(void) { return vt__cache_shared(g_cache); }

long vt__object_shm_wait_ms(void) { return g_shm_wait_ms; }

unsigned vt__object_hash(const char *s)
{
    unsigned h = 2166136261u;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h % VT_OBJECT_BUCKETS;
}

void vt__object_free(vt_object *o)
{
    if (!o)
        return;
    free(o->id);
    free(o->path);
    free(o->bucket);
    free(o->key);
    free(o->cache_key);
    free(o->head_key);
    free(o->ident);
    free(o->etag);
    free(o->missing);
    free(o->spans);
    free(o);
}

void vt__object_table_insert(vt_object *o, unsigned h)
{
    o->in_table = 1;
    o->next = vt__object_table[h];
    vt__object_table[h] = o;
    table_count++;
}

/* vt__object_table_mu held. Unlink o from its chain. */
void vt__object_table_remove(vt_object *o)
{
    vt_object **pp = &vt__object_table[vt__object_hash(o->id)];
    while (*pp && *pp != o)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = o->next;
        table_count--;
    }
    o->in_table = 0;
}

/* vt__object_table_mu held. Keep the table bounded: drop unreferenced
 * entries, oldest first, until below the cap. Returns objects to free after
 * unlocking. */
vt_object *vt__object_table_trim(void)
{
    vt_object *dead = NULL;
    while (table_count >= TABLE_MAX_ENTRIES) {
        vt_object *oldest = NULL;
        size_t i;
        for (i = 0; i < VT_OBJECT_BUCKETS; i++) {
            vt_object *o;
            for (o = vt__object_table[i]; o; o = o->next)
                if (o->refs == 0 && !o->loading &&
                    (!oldest || o->loaded_at < oldest->loaded_at))
                    oldest = o;
        }
        if (!oldest)
            break;
        vt__object_table_remove(oldest);
        oldest->next = dead;
        dead = oldest;
    }
    return dead;
}

void vt__object_free_list(vt_object *o)
{
    while (o) {
        vt_object *n = o->next;
        vt__object_free(o);
        o = n;
    }
}

/* "<what> s3://b/k: HTTP ..." (the backend's describe) into errbuf. */
void vt__object_describe(const vt_object *o, char *errbuf, size_t errlen,
                         const vt_http_resp *r, vt_err err, const char *what)
{
    char tail[768];

    o->be->describe(tail, sizeof(tail), o->bucket, o->key, r, err);
    snprintf(errbuf, errlen, "%s %s", what, tail);
}

/* The table key of path: endpoint identity + "\n" + path. malloc'd. */
char *vt__object_id(const vt_backend *be, const char *path)
{
    char *ep = be->endpoint(path), *id = NULL;
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
