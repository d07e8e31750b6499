/* gs_int.h: what the GCS modules share (gs*.c only).
 *
 * gs.c builds and sends GDAL 3.6's /vsigs/ requests (path-style URLs under
 * CPL_GS_ENDPOINT, GOOG1 or bearer authorization, x-goog-user-project) and
 * remembers this thread's last failure; gs_backend.c is the vt_backend
 * table over it (listing, identity, descriptions). */
#ifndef VT_GS_INT_H
#define VT_GS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"

/* The backend's name (vt_backend's name, and the counter its requests are
 * counted under: stats/stats.h). */
#define VT_GS_NAME "gs"

/* "bucket/key" -> malloc'd bucket, key ("" for "bucket" or "bucket/"). */
vt_err vt__gs_split(const char *path, char **bucket, char **key);

/* CPL_GS_ENDPOINT for path (else https://storage.googleapis.com/), with
 * its trailing '/' as GDAL glues URLs to it. malloc'd. */
char *vt__gs_endpoint_for(const char *path);

/* CPL_GS_ENDPOINT + bucket: where path's objects live, for the identity. */
char *vt__gs_endpoint(const char *path);

/* A signed request of bucket/key: method "GET" or "HEAD", query (sorted,
 * encoded, without '?') or NULL, range [off, off+len) (len 0: none),
 * If-Match etag or NULL. */
vt_err vt__gs_build(const char *method, const char *bucket, const char *key,
                    const char *query, uint64_t off, uint64_t len,
                    const char *etag, vt_backend_req *out, char *errbuf,
                    size_t errlen);
vt_err vt__gs_build_get(const char *bucket, const char *key, uint64_t off,
                        uint64_t len, const char *etag, vt_backend_req *out,
                        char *errbuf, size_t errlen);

/* Build and perform; failures remembered for vt__gs_last_failure. */
vt_err vt__gs_perform(const char *method, const char *bucket,
                      const char *key, const char *query, uint64_t off,
                      uint64_t len, const char *etag, vt_http_resp *resp,
                      char *errbuf, size_t errlen);

vt_err vt__gs_status_err(long status);
void vt__gs_describe(char *buf, size_t len, const char *bucket,
                     const char *key, const vt_http_resp *r, vt_err err);
int vt__gs_last_failure(const char *bucket, const char *key,
                        struct vt_gdal_fail *out);

#endif
