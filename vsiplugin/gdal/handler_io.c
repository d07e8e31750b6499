/* handler_io.c: a GDAL handle's reads (tell, seek, read, multi-range read,
 * eof, flush, close) and what a failure becomes for GDAL: its CPLError
 * class and errno (used by handler.c's stat and open too), and the cache
 * of GDAL's own handler dropped for a name GDAL is done with under
 * CPL_VSIL_CURL_NON_CACHED. Why apart: the handle's life after the open is
 * a concern of its own (handler.c opens it, handler_int.h shapes it).
 *
 * A vt_handle is used by one thread at a time (GDAL's rule), so handles
 * have no lock; objects and the cache are shared and thread-safe. */
#include "gdal/handler_int.h"
#include "gdal/handler.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_error.h>
#include <cpl_vsi_error.h>

#include "base/config.h"
#include "read/object.h"
#include "read/suspect.h"
#include "gdal/stock.h"

/* The CPLError class GDAL itself uses for an S3 failure, so that rasterio
 * and friends raise the exception they raise for stock /vsis3/. */
int vt__handler_cple_for(long status, const char *msg)
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

int vt__handler_errno_for(vt_err err)
{
    switch (err) {
    case VT_ENOTFOUND: return ENOENT;
    case VT_EACCESS: return EACCES;
    case VT_EINVAL: return EINVAL;
    case VT_ENOMEM: return ENOMEM;
    default: return EIO;
    }
}

/* For a name under GDAL's CPL_VSIL_CURL_NON_CACHED, GDAL's handler drops
 * what it cached of the name and of its directory's listing each time it is
 * done with it (a stat, a closed handle); vsitune does the same to GDAL's
 * caches, so that GDAL's own listings stay as fresh as they would be. */
void vt__handler_done_with(const vt_backend *be, const char *path)
{
    const char *slash;
    char dir[4096];
    if (!vt__cfg_non_cached(path) || !(slash = strrchr(path, '/')))
        return;
    snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    vt__stock_partial_clear(be, dir);
}

/* A handle's object size; a handle without object is stock GDAL's empty
 * handle on a missing name (see stock_opens_unchecked). */
static uint64_t handle_size(const vt_handle *h)
{
    return h->obj ? vt__object_size(h->obj) : 0;
}

static vsi_l_offset cb_tell(void *f)
{
    return ((vt_handle *)f)->pos;
}

static int cb_seek(void *f, vsi_l_offset off, int whence)
{
    vt_handle *h = f;
    uint64_t size = handle_size(h);
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
    uint64_t osize = handle_size(h);
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
    if (!h->obj) { /* stock GDAL's empty handle on a missing name */
        if (h->says) { /* its first read's error, as GDAL's (3.13+) */
            VSIError(h->says_vsie, "%s", h->says);
            free(h->says);
            h->says = NULL;
        }
        h->eof = 1;
        return 0;
    }
    got = h->pos >= osize ? 0
          : osize - h->pos < want ? (size_t)(osize - h->pos) : want;
    if (got > 0) {
        vt__suspect_before_read(&h->sus, h->obj, 0, 1, &h->pos, &got);
        err = vt__object_read(h->obj, &h->opts, 1, &buf, &h->pos, &got,
                              &h->ra, errbuf, sizeof(errbuf));
        vt__suspect_after_read(&h->sus, err == VT_OK, 0, 1, &h->pos, &got);
        if (err != VT_OK) {
            CPLError(CE_Failure, vt__handler_cple_for(0, errbuf), "%s", errbuf);
            errno = vt__handler_errno_for(err);
            return 0;
        }
    }
    /* Reading past the end we know: make sure that end is the object's
     * (after the read, whose answer may already have confirmed it). A read
     * starting exactly at the end is how parsers look for one more box or
     * record (JPEG 2000's, GDAL's readers at EOF): the size the first answer
     * stated stands for it, as stock GDAL's does, without a request; a read
     * across the end or beyond it (a tile past a total that lied) asks. */
    if (got < want && (got > 0 || h->pos != osize) &&
        (err = vt__object_note_end(h->obj, errbuf, sizeof(errbuf))) != VT_OK) {
        CPLError(CE_Failure, vt__handler_cple_for(0, errbuf), "%s", errbuf);
        errno = vt__handler_errno_for(err);
        return 0;
    }
    if (got == 0) {
        h->eof = 1;
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
    if (!h->obj) { /* the empty handle: only empty ranges lie inside */
        for (i = 0; i < n; i++)
            if (sizes[i] > 0) {
                CPLError(CE_Failure, CPLE_FileIO,
                         "vsitune: multi-range read past the end of an empty "
                         "file");
                goto out;
            }
        ret = 0;
        goto out;
    }
    /* vt__object_read refuses ranges past the end, naming bucket and key;
     * GDAL's striped and scan reads grow the handle's readahead there too. */
    vt__suspect_before_read(&h->sus, h->obj, 1, (size_t)n, o64, sizes);
    err = vt__object_read(h->obj, &h->opts, (size_t)n, data, o64, sizes,
                          &h->ra, errbuf, sizeof(errbuf));
    vt__suspect_after_read(&h->sus, err == VT_OK, 1, (size_t)n, o64, sizes);
    if (err != VT_OK) {
        CPLError(CE_Failure, vt__handler_cple_for(0, errbuf), "%s", errbuf);
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

/* A read handle has nothing to flush: 0, as GDAL's own /vsis3/ read handle
 * (GDAL 3.13's Shapefile driver flushes the handles it reads; without this
 * callback GDAL's plugin layer reports "Flush not implemented"). */
static int cb_flush(void *f)
{
    (void)f;
    return 0;
}

static int cb_close(void *f)
{
    vt_handle *h = f;
    if (h) {
        if (h->obj) {
            const char *was = vt__cfg_scope_prefix(h->rd->cfg_prefix);
            vt__suspect_close(&h->sus, h->obj);
            vt__handler_done_with(h->rd->be, vt__object_path(h->obj));
            vt__cfg_scope_prefix(was);
        }
        vt__object_release(h->obj);
        free(h->says);
        free(h);
    }
    return 0;
}

void vt__handler_io_callbacks(VSIFilesystemPluginCallbacksStruct *cb)
{
    cb->tell = cb_tell;
    cb->seek = cb_seek;
    cb->read = cb_read;
    cb->read_multi_range = cb_read_multi_range;
    cb->eof = cb_eof;
    cb->close = cb_close;
    cb->flush = cb_flush;
}
