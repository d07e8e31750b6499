/* object.c: find or load an object (see object.h): the table's lookup with
 * its TTLs and remembered 404s, one loader per object while others wait,
 * the load itself (object_header.c, or through the host-wide metadata,
 * object_shared.c), and the references handed out. The table itself, its
 * lock and the process's cache are object_table.c's; the module's other
 * concerns are in object_*.c (object_int.h says which). */
#include "read/object_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/config.h"
#include "stats/stats.h"

vt_err vt__object_open(const vt_backend *be, const char *path, vt_object **out,
                       long *http_status, char *errbuf, size_t errlen)
{
    char *id = vt__object_id(be, path);
    unsigned h;
    long ttl = (long)vt__opt_size(path, VT_OPT_METADATA_TTL);
    long neg_ttl = (long)vt__opt_size(path, VT_OPT_NEGATIVE_TTL);
    vt_object *o = NULL, *dead = NULL;
    vt_err err = VT_OK;
    int remembered = 0, fresh_only = vt__cfg_non_cached(path);

    vt__object_set_remembered(0);
    *out = NULL;
    *http_status = 0;
    errbuf[0] = '\0';
    if (!id) {
        snprintf(errbuf, errlen, "vsitune: cannot address %s%s", be->scheme,
                 path);
        return VT_EINVAL;
    }
    h = vt__object_hash(id);
    vt__object_install_atfork();
    pthread_mutex_lock(&vt__object_table_mu);
    for (;;) {
        for (o = vt__object_table[h]; o; o = o->next)
            if (strcmp(o->id, id) == 0)
                break;
        if (o && o->loading) {
            pthread_cond_wait(&vt__object_table_cv, &vt__object_table_mu);
            continue;
        }
        if (o && (fresh_only ||
                  time(NULL) - o->loaded_at >= (o->missing ? neg_ttl : ttl))) {
            vt__object_table_remove(o); /* stale: handles keep their copy */
            if (o->refs == 0) {
                o->next = dead;
                dead = o;
            }
            o = NULL;
        }
        break;
    }
    vt__object_set_remembered(o && o->missing);
    if (o && o->missing) {
        /* A 404 seen less than VSITUNE_NEGATIVE_TTL ago. Only a 404: a
         * transient failure is never remembered. */
        snprintf(errbuf, errlen, "%s", o->missing);
        pthread_mutex_unlock(&vt__object_table_mu);
        vt__object_free_list(dead);
        free(id);
        *http_status = 404;
        return VT_ENOTFOUND;
    }
    if (o) {
        o->refs++;
        pthread_mutex_unlock(&vt__object_table_mu);
        vt__object_free_list(dead);
        free(id);
        *out = o;
        return VT_OK;
    }
    o = calloc(1, sizeof(*o));
    if (o) {
        o->id = id; /* o owns it from here */
        id = NULL;
        o->be = be;
    }
    if (!o || !(o->path = strdup(path)) ||
        be->split(path, &o->bucket, &o->key) != VT_OK) {
        pthread_mutex_unlock(&vt__object_table_mu);
        vt__object_free_list(dead);
        free(id);
        vt__object_free(o);
        snprintf(errbuf, errlen, "vsitune: invalid path %s", path);
        return VT_EINVAL;
    }
    o->loading = 1;
    o->refs = 1;
    vt__object_table_insert(o, h);
    pthread_mutex_unlock(&vt__object_table_mu);
    vt__object_free_list(dead);

    /* CPL_VSIL_CURL_NON_CACHED: every open asks, here and host-wide */
    err = fresh_only
              ? vt__object_load_header(o, http_status, errbuf, errlen)
              : vt__object_load_shared(o, ttl, neg_ttl, http_status, errbuf,
                                       errlen);
    vt__stats_tick();

    pthread_mutex_lock(&vt__object_table_mu);
    o->loading = 0;
    if (err == VT_ENOTFOUND && *http_status == 404 && neg_ttl > 0 &&
        (o->missing = strdup(errbuf)) != NULL) {
        o->loaded_at = time(NULL); /* remembered; forgotten on a write */
        o->refs--;
        remembered = 1;            /* o belongs to the table now */
    } else if (err != VT_OK) {
        vt__object_table_remove(o);     /* never cache any other failure */
        o->refs--;
    }
    dead = vt__object_table_trim();
    pthread_cond_broadcast(&vt__object_table_cv);
    pthread_mutex_unlock(&vt__object_table_mu);
    vt__object_free_list(dead);
    if (err != VT_OK) {
        if (!remembered)
            vt__object_free(o);
        return err;
    }
    *out = o;
    return VT_OK;
}

int vt__object_peek(const vt_backend *be, const char *path, uint64_t *size,
                    long long *mtime)
{
    char *id = vt__object_id(be, path);
    long ttl = (long)vt__opt_size(path, VT_OPT_METADATA_TTL);
    vt_object *o;
    int found = 0, fresh_only = vt__cfg_non_cached(path); /* not under
                                         the table's lock: it takes GDAL's */
    if (!id)
        return 0;
    pthread_mutex_lock(&vt__object_table_mu);
    for (o = vt__object_table[vt__object_hash(id)]; o; o = o->next)
        if (strcmp(o->id, id) == 0 && !o->loading && !o->missing &&
            time(NULL) - o->loaded_at < ttl && !fresh_only) {
            *size = o->size;
            *mtime = o->mtime;
            found = 1;
            break;
        }
    pthread_mutex_unlock(&vt__object_table_mu);
    free(id);
    return found;
}

void vt__object_release(vt_object *o)
{
    int gone, last;
    if (!o)
        return;
    if (o->learn_need) {
        /* read and let go: its prefix learns; taught while our reference
         * keeps o alive (the table may free it once the count is 0) */
        pthread_mutex_lock(&vt__object_table_mu);
        last = o->refs == 1;
        pthread_mutex_unlock(&vt__object_table_mu);
        if (last)
            vt__object_teach(o);
    }
    pthread_mutex_lock(&vt__object_table_mu);
    gone = --o->refs == 0 && !o->in_table;
    pthread_mutex_unlock(&vt__object_table_mu);
    if (gone)
        vt__object_free(o);
}

uint64_t vt__object_size(const vt_object *o) { return o->size; }
long long vt__object_mtime(const vt_object *o) { return o->mtime; }
const char *vt__object_etag(const vt_object *o) { return o->etag; }

const char *vt__object_path(const vt_object *o) { return o->path; }
const char *vt__object_cache_key(const vt_object *o) { return o->cache_key; }

/* Whether every range lies inside o: else VT_EINVAL naming it in errbuf.
 * *cap gets the number of blocks the ranges touch (counted with repeats). */
vt_err vt__object_check_ranges(const vt_object *o, size_t bs, size_t n,
                               const uint64_t *off, const size_t *len,
                               size_t *cap, char *errbuf, size_t errlen)
{
    size_t i;

    *cap = 0;
    for (i = 0; i < n; i++) {
        if (off[i] > o->size || len[i] > o->size - off[i]) {
            snprintf(errbuf, errlen, "vsitune: read past the end of %s%s/%s "
                     "(%zu bytes at %llu, object of %llu)", o->be->scheme,
                     o->bucket, o->key, len[i], (unsigned long long)off[i],
                     (unsigned long long)o->size);
            return VT_EINVAL;
        }
        if (len[i] > 0)
            *cap += (size_t)((off[i] + len[i] - 1) / bs - off[i] / bs + 1);
    }
    return VT_OK;
}
