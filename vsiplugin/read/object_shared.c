/* object_shared.c: an object's size and ETag through the host-wide metadata
 * (shm/shmmeta.h): another process's fresh answer adopted without a
 * request, ours published for the others, and forgotten on a write. Why
 * apart: the only part of the object module that knows the shared segment's
 * metadata table. */
#include "read/object_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/cache.h"
#include "base/config.h"
#include "read/ident.h"
#include "shm/shmmeta.h"

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
    vt__object_find_head(o); /* the loader's short first GET, if it was */
    return VT_OK;
}

/* load_header through the host-wide metadata: another process's answer
 * when it is fresh (no request), else ours, published for the others (a
 * failure other than a 404 never is). Without a shared segment, just
 * load_header. */
vt_err vt__object_load_shared(vt_object *o, long ttl, long neg_ttl,
                              long *http_status, char *errbuf, size_t errlen)
{
    vt_shm *s = vt__cache_shared(vt__object_cache());
    vt_shm_objinfo info;
    vt_shmc_ref ref;
    vt_shmm_role role;
    uint8_t d[32];
    vt_err err;

    if (!s || !(o->ident = vt__ident_object(o->be, o->bucket, o->key, o->path)))
        return vt__object_load_header(o, http_status, errbuf, errlen);
    vt__shm_digest(o->ident, d);
    {
        /* Another process's answer is trusted for a shorter time than our
         * own: a fresh process should not see an object it never opened as
         * it was minutes ago (stock GDAL would ask). */
        long sttl = (long)vt__opt_size(o->path, VT_OPT_SHARED_METADATA_TTL);
        role = vt__shmm_get(s, d, ttl < sttl ? ttl : sttl,
                            neg_ttl < sttl ? neg_ttl : sttl,
                            vt__object_shm_wait_ms(), &info, &ref);
    }
    if (role == VT_SHMM_FOUND && info.missing) {
        snprintf(errbuf, errlen, "%s", info.msg);
        *http_status = 404;
        return VT_ENOTFOUND;
    }
    if (role == VT_SHMM_FOUND)
        return adopt(o, &info);
    err = vt__object_load_header(o, http_status, errbuf, errlen);
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
void vt__object_forget_shared(const vt_backend *be, const char *path)
{
    vt_shm *s = vt__object_shm();
    char *bucket = NULL, *key = NULL, *ident = NULL;
    uint8_t d[32];

    if (!s || be->split(path, &bucket, &key) != VT_OK)
        goto out;
    ident = vt__ident_object(be, bucket, key, path);
    if (ident) {
        vt__shm_digest(ident, d);
        vt__shmm_forget(s, d);
    }
out:
    free(bucket);
    free(key);
    free(ident);
}
