/* error.h: the one error enum of vsiplugin.
 *
 * Every core function that can fail returns a vt_err. Values are never
 * renumbered (they appear in logs and stats). Recoverable errors (a retry may
 * succeed) are kept apart from fatal ones by vt__err_is_transient(). The GDAL
 * boundary (handler.c, plugin.c) is the only place that turns them into
 * CPLError calls. */
#ifndef VT_ERROR_H
#define VT_ERROR_H

typedef enum vt_err {
    VT_OK = 0,
    VT_ENOMEM = 1,      /* allocation failed */
    VT_EINVAL = 2,      /* bad argument or malformed input */
    VT_ENOTFOUND = 3,   /* HTTP 404 / NoSuchKey / NoSuchBucket */
    VT_EACCESS = 4,     /* HTTP 403 (AccessDenied, SignatureDoesNotMatch, ...) */
    VT_ECHANGED = 5,    /* HTTP 412: object changed since first seen (ETag) */
    VT_ETRANSIENT = 6,  /* 429/5xx/reset/timeout, retries exhausted */
    VT_EPROTO = 7,      /* response malformed: short body, bad Content-Range */
    VT_EHTTP = 8,       /* any other HTTP status */
    VT_ECREDS = 9,      /* no usable credentials */
    VT_ESHUTDOWN = 10,  /* engine stopped (process exiting) */
    VT_ETIMEDOUT = 11,  /* connect/low-speed/total timeout, retries exhausted */
    VT_ERANGE = 12,     /* HTTP 416: range beyond the object */
    VT_ENETWORK = 13,   /* connect/DNS/TLS failure (retried or not: the
                           response's cause says) */
    VT_EREDIRECT = 14,  /* 301/307/400 with x-amz-bucket-region: wrong region */
    VT_EAGAIN = 15      /* not a failure: a shared block's wait gave up, the
                           caller fetches it itself (cache.h) */
} vt_err;

/* Static English text for an error; never NULL. */
const char *vt_strerror(vt_err err);

/* 1 when retrying the same request may succeed. */
int vt__err_is_transient(vt_err err);

#endif
