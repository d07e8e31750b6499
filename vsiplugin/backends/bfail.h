/* bfail.h: the last failure a backend met on this thread, kept for the GDAL
 * face's wording of a failed open (backend.h's last_failure).
 *
 * Why: every backend must hand GDAL's wording (compat/gdal_error.h) what
 * failed, after its get/head returned: the status, the transport's words,
 * the URL asked and the error body. One record per thread, named by the
 * backend's scheme and the object ("s3://bucket/key"), copied (the body
 * capped at VT_BFAIL_BODY_CAP), so a failure of one service is never taken
 * for another's. Thread-local: no lock. */
#ifndef VT_BFAIL_H
#define VT_BFAIL_H

#include "base/error.h"
#include "http/engine.h"

struct vt_gdal_fail; /* compat/gdal_error.h */

#define VT_BFAIL_BODY_CAP 4096

/* Keep the failure err of scheme + "container/key" (r: the answer or NULL,
 * url: what was asked or NULL, message: VT_ECREDS' words or NULL, again:
 * vt_gdal_fail's again), replacing this thread's record. */
void vt__bfail_note(const char *scheme, const char *container,
                    const char *key, vt_err err, const vt_http_resp *r,
                    const char *url, const char *message, int again);

/* Drop this thread's record (a new request starts). */
void vt__bfail_forget(void);

/* 1 and *out filled from this thread's record when it is scheme +
 * "container/key"'s (pointers into thread-local storage, valid until the
 * thread's next note), else 0 and *out zeroed. */
int vt__bfail_get(const char *scheme, const char *container, const char *key,
                  struct vt_gdal_fail *out);

#endif
