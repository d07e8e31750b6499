/* handler.c: VSI plugin callbacks for reads (see handler.h).
 *
 * A vt_handle is one GDAL file handle: a reference on the object, a position
 * and the sequential-read detector. GDAL uses a handle from one thread at a
 * time, so handles have no lock; objects and the cache are shared and
 * thread-safe. */
#include "handler.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>

#include "cache.h"
#include "config.h"
#include "gdal_error.h"
#include "object.h"
#include "planner.h"
#include "policy.h"
#include "s3.h"
#include "stats.h"
#include "suspect.h"
#include "takeover.h"

/* Why the last open on this thread failed (see vt__handler_open_error). */
static _Thread_local char t_open_error[VT_GDAL_MSG_CAP];
static _Thread_local int t_open_error_class;

typedef struct vt_handle {
    vt_object *obj;
    uint64_t pos;
    int eof;
    vt_readahead ra;
    vt_suspect sus;       /* blocks GDAL may fail to decode (suspect.h) */
} vt_handle;

/* The CPLError class GDAL itself uses for an S3 failure, so that rasterio
 * and friends raise the exception they raise for stock /vsis3/. */
static int cple_for(long status, const char *msg)
{
    if (strstr(msg, "SignatureDoesNotMatch"))
        return CPLE_AWSSignatureDoesNotMatch;
    if (strstr(msg, "InvalidAccessKeyId") || strstr(msg, "credentials"))
        return CPLE_AWSInvalidCredentials;
    if (strstr(msg, "NoSuchBucket"))
        return CPLE_AWSBucketNotFound;
    if (status == 404)
        return CPLE_AWSObjectNotFound;
    if (status == 403)
        return CPLE_AWSAccessDenied;
    if (status > 0)
        return CPLE_AWSError;
    return CPLE_FileIO;
}

static int errno_for(vt_err err)
{
    switch (err) {
    case VT_ENOTFOUND: return ENOENT;
    case VT_EACCESS: return EACCES;
    case VT_EINVAL: return EINVAL;
    case VT_ENOMEM: return ENOMEM;
    default: return EIO;
    }
}

/* 1 when path's extension is allowed (VSITUNE_ALLOWED_EXTENSIONS, else
 * CPL_VSIL_CURL_ALLOWED_EXTENSIONS, else the built-in list), read for path. */
static int extension_allowed(const char *path)
{
    char *v = vt__cfg_dup(path, "VSITUNE_ALLOWED_EXTENSIONS");
    int r;
    if (!v)
        v = vt__cfg_dup(path, "CPL_VSIL_CURL_ALLOWED_EXTENSIONS");
    r = vt__policy_ext_in(path, v ? v : VT_DEFAULT_ALLOWED_EXTENSIONS);
    free(v);
    return r;
}

static int cb_stat(void *ud, const char *path, VSIStatBufL *st, int flags)
{
    vt_object *o = NULL;
    long status = 0;
    char errbuf[1024];
    vt_err err;

    (void)ud;
    if (vt__policy_is_dir_like(path))
        return vt__stock_stat(path, st, flags); /* a directory: GDAL's */
    if (!extension_allowed(path)) {
        if (!vt__cfg_bool(path, "VSITUNE_SIDECARS", 0)) {
            CPLDebug("VSITUNE", "stat %s: extension not allowed, no request",
                     path);
            errno = ENOENT;
            return -1;
        }
        return vt__stock_stat(path, st, flags);
    }
    err = vt__object_open(path, &o, &status, errbuf, sizeof(errbuf));
    if (err != VT_OK) {
        /* Silent, as GDAL's own stat is: stat is how GDAL probes, and a
         * CE_Failure here would make the Python bindings raise even when the
         * open around it then succeeds (a transient error a retry fixed).
         * A failing open reports the reason (see cb_open). */
        CPLDebug("VSITUNE", "stat: %s", errbuf);
        errno = errno_for(err);
        return -1;
    }
    memset(st, 0, sizeof(*st));
    st->st_size = (GIntBig)vt__object_size(o);
    st->st_mode = S_IFREG | 0444;
    vt__object_release(o);
    return 0;
}

/* When the open failed on an S3 answer (or on credentials), word it as stock
 * GDAL does (gdal_error.h): GDAL's class and message, vsitune's detail after
 * it, and GDAL's warning "HTTP response code on <url>: <n>" where GDAL emits
 * one. 0 when there is no such answer to report (the caller words it). */
static int report_as_gdal(const char *path)
{
    char *bucket = NULL, *key = NULL;
    vt_gdal_fail f;
    vt_gdal_report rep;
    int found = vt__s3_split(path, &bucket, &key) == VT_OK &&
                vt__s3_last_failure(bucket, key, &f);

    if (found) {
        vt__gdal_error_for_open(&f, &rep);
        if (rep.warn)
            CPLError(CE_Warning, CPLE_AppDefined, "%s", rep.warning);
        t_open_error_class = rep.cple;
        snprintf(t_open_error, sizeof(t_open_error), "%s", rep.message);
    }
    free(bucket);
    free(key);
    return found;
}

static void *cb_open(void *ud, const char *path, const char *access)
{
    vt_handle *h;
    vt_object *o = NULL;
    long status = 0;
    char errbuf[1024];
    vt_err err;

    (void)ud;
    if (strpbrk(access, "wa+")) { /* takeover.cpp sends these to GDAL's */
        errno = EACCES;
        return NULL;
    }
    err = vt__object_open(path, &o, &status, errbuf, sizeof(errbuf));
    if (err != VT_OK) {
        /* Not a CPLError: GDALOpen tries stat after a failed open, and may
         * still succeed (a transient error). takeover.cpp hands this text to
         * VSIError, which GDALOpen turns into the CPLError it reports when
         * the whole open fails. */
        CPLDebug("VSITUNE", "open: %s", errbuf);
        if (!report_as_gdal(path)) {
            t_open_error_class = cple_for(status, errbuf);
            snprintf(t_open_error, sizeof(t_open_error), "%s", errbuf);
        }
        errno = errno_for(err);
        return NULL;
    }
    t_open_error[0] = '\0';
    h = calloc(1, sizeof(*h));
    if (!h) {
        vt__object_release(o);
        errno = ENOMEM;
        return NULL;
    }
    h->obj = o;
    return h;
}

static vsi_l_offset cb_tell(void *f)
{
    return ((vt_handle *)f)->pos;
}

static int cb_seek(void *f, vsi_l_offset off, int whence)
{
    vt_handle *h = f;
    uint64_t size = vt__object_size(h->obj);
    if (whence == SEEK_SET)
        h->pos = off;
    else if (whence == SEEK_CUR)
        h->pos += off;
    else if (whence == SEEK_END)
        h->pos = size + off;
    else {
        errno = EINVAL;
        return -1;
    }
    h->eof = 0;
    return 0;
}

static size_t cb_read(void *f, void *buf, size_t size, size_t count)
{
    vt_handle *h = f;
    uint64_t osize = vt__object_size(h->obj);
    size_t want, got;
    char errbuf[1024];
    vt_err err;

    if (size == 0 || count == 0)
        return 0;
    if (count > SIZE_MAX / size) {
        errno = EINVAL;
        return 0;
    }
    want = size * count;
    if (h->pos + want > osize &&
        (err = vt__object_note_end(h->obj, errbuf, sizeof(errbuf))) != VT_OK) {
        CPLError(CE_Failure, cple_for(0, errbuf), "%s", errbuf);
        errno = errno_for(err);
        return 0;
    }
    if (h->pos >= osize) {
        h->eof = 1;
        return 0;
    }
    got = osize - h->pos < want ? (size_t)(osize - h->pos) : want;
    vt__suspect_before_read(&h->sus, h->obj, 0, 1, &h->pos, &got);
    err = vt__object_read(h->obj, 1, &buf, &h->pos, &got, &h->ra, errbuf,
                          sizeof(errbuf));
    vt__suspect_after_read(&h->sus, err == VT_OK, 0, 1, &h->pos, &got);
    if (err != VT_OK) {
        CPLError(CE_Failure, cple_for(0, errbuf), "%s", errbuf);
        errno = errno_for(err);
        return 0;
    }
    h->pos += got;
    if (got < want)
        h->eof = 1;
    return got / size;
}

static int cb_read_multi_range(void *f, int n, void **data,
                               const vsi_l_offset *offs, const size_t *sizes)
{
    vt_handle *h = f;
    uint64_t *o64 = NULL;
    char errbuf[1024];
    vt_err err;
    int i, ret = -1;

    if (n <= 0)
        return 0;
    o64 = malloc((size_t)n * sizeof(*o64));
    if (!o64)
        return -1;
    for (i = 0; i < n; i++)
        o64[i] = offs[i];
    /* vt__object_read refuses ranges past the end, naming bucket and key;
     * GDAL's striped and scan reads grow the handle's readahead there too. */
    vt__suspect_before_read(&h->sus, h->obj, 1, (size_t)n, o64, sizes);
    err = vt__object_read(h->obj, (size_t)n, data, o64, sizes, &h->ra, errbuf,
                          sizeof(errbuf));
    vt__suspect_after_read(&h->sus, err == VT_OK, 1, (size_t)n, o64, sizes);
    if (err != VT_OK) {
        CPLError(CE_Failure, cple_for(0, errbuf), "%s", errbuf);
        goto out;
    }
    ret = 0;
out:
    free(o64);
    return ret;
}

static int cb_eof(void *f)
{
    return ((vt_handle *)f)->eof;
}

static int cb_close(void *f)
{
    vt_handle *h = f;
    if (h) {
        vt__suspect_close(&h->sus, h->obj);
        vt__object_release(h->obj);
        free(h);
    }
    return 0;
}

/* "No siblings" for self-contained formats: GDAL then neither lists the
 * prefix nor probes for .aux.xml/.ovr/.msk/... sidecars. NULL (GDAL's usual
 * behaviour) when the user opted in to sidecars or for multi-file formats. */
static char **cb_sibling_files(void *ud, const char *path)
{
    char *list;
    int none;
    (void)ud;
    if (vt__cfg_bool(path, "VSITUNE_SIDECARS", 0))
        return NULL;
    list = vt__cfg_dup(path, "VSITUNE_NO_SIBLING_EXTENSIONS");
    none = vt__policy_ext_in(path,
                             list ? list : VT_DEFAULT_NO_SIBLING_EXTENSIONS);
    free(list);
    if (!none)
        return NULL;
    vt__stats_avoided(VT_AVOIDED_LIST);
    return (char **)CPLCalloc(1, sizeof(char *));
}

static char **cb_read_dir(void *ud, const char *path, int max_files)
{
    (void)ud;
    return vt__stock_read_dir(path, max_files);
}

const char *vt__handler_open_error(int *cple_class)
{
    *cple_class = t_open_error_class;
    return t_open_error[0] ? t_open_error : NULL;
}

void vt__handler_fill_callbacks(VSIFilesystemPluginCallbacksStruct *cb)
{
    cb->stat = cb_stat;
    cb->open = cb_open;
    cb->tell = cb_tell;
    cb->seek = cb_seek;
    cb->read = cb_read;
    cb->read_multi_range = cb_read_multi_range;
    cb->eof = cb_eof;
    cb->close = cb_close;
    cb->sibling_files = cb_sibling_files;
    cb->read_dir = cb_read_dir;
    cb->nBufferSize = 0; /* no VSICachedFile on top: the cache is ours */
    cb->nCacheSize = 0;
}
