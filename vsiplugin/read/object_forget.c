/* object_forget.c: forgetting objects: one that changed under a read, the
 * ones GDAL's own handler writes, deletes or renames, a prefix's, and
 * everything: the table's entries, their cached blocks and the host-wide
 * metadata. A loading object is left to its loader. Listings, the rest of
 * the cache and the backend's memory are forget.c's to tell. */
#include "read/object_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "shm/shmmeta.h"

/* The object changed under us: forget it and its blocks. */
void vt__object_invalidate(vt_object *o)
{
    pthread_mutex_lock(&vt__object_table_mu);
    if (o->in_table)
        vt__object_table_remove(o);
    pthread_mutex_unlock(&vt__object_table_mu);
    vt__cache_drop_prefix(vt__object_cache(), o->cache_key);
    if (o->ident && vt__object_shm()) {
        /* Blocks of the old version need no dropping: their name has the
         * old ETag, nobody asks for them again, LIRS lets them go. */
        uint8_t d[32];
        vt__shm_digest(o->ident, d);
        vt__shmm_forget(vt__object_shm(), d);
    }
}

/* What is left to forget of an object dropped from the table, once the
 * table's lock is let go: its blocks and its host-wide metadata. */
typedef struct gone {
    char *cache_key;
    char *path;
    const vt_backend *be;
} gone;

/* Note o's cache key and path in *g (grown as needed); a failed allocation
 * leaves it out (its blocks then age out of the cache). */
static void note_gone(gone **g, size_t *n, size_t *cap, const vt_object *o)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        gone *ng = realloc(*g, nc * sizeof(*ng));
        if (!ng)
            return;
        *g = ng;
        *cap = nc;
    }
    if (((*g)[*n].cache_key = strdup(o->cache_key)) != NULL) {
        (*g)[*n].path = strdup(o->path);
        (*g)[*n].be = o->be;
        (*n)++;
    }
}

/* Forget every object whose path matches (exactly, or as a prefix) and its
 * cached blocks; a loading object is left to its loader. */
static void forget_where(const char *arg, int as_prefix)
{
    vt_object *dead = NULL, *o;
    size_t i, n = strlen(arg), ngone = 0, cap = 0;
    gone *g = NULL;
    vt_cache *c = vt__object_cache();

    pthread_mutex_lock(&vt__object_table_mu);
    for (i = 0; i < VT_OBJECT_BUCKETS; i++) {
        vt_object *next;
        for (o = vt__object_table[i]; o; o = next) {
            next = o->next;
            if (o->loading || (as_prefix ? strncmp(o->path, arg, n) != 0
                                         : strcmp(o->path, arg) != 0))
                continue;
            vt__object_table_remove(o);
            if (o->cache_key)
                note_gone(&g, &ngone, &cap, o);
            if (o->refs == 0) {
                o->next = dead;
                dead = o;
            }
        }
    }
    pthread_mutex_unlock(&vt__object_table_mu);
    vt__object_free_list(dead);
    for (i = 0; i < ngone; i++) {
        vt__cache_drop_prefix(c, g[i].cache_key);
        if (g[i].path && as_prefix) /* the host-wide metadata too */
            vt__object_forget_shared(g[i].be, g[i].path);
        free(g[i].cache_key);
        free(g[i].path);
    }
    free(g);
}

void vt__object_forget_prefix(const char *prefix)
{
    forget_where(prefix, 1);
}

void vt__object_forget(const vt_backend *be, const char *path)
{
    forget_where(path, 0);
    vt__object_forget_shared(be, path);
}

void vt__object_clear_all(void)
{
    forget_where("", 1);
    if (vt__object_shm())
        vt__shmm_forget_all(vt__object_shm());
}
