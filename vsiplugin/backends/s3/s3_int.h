/* s3_int.h: what the S3 modules share (s3*.c only).
 *
 * s3.c builds and sends signed requests and follows redirects; s3_route.c
 * reads a request's addressing options for its path and remembers what
 * redirects taught (region, endpoint, addressing style). The user's extra
 * headers are backends/userhdr.c's, every backend's. */
#ifndef VT_S3_INT_H
#define VT_S3_INT_H

#include <stddef.h>

#include "http/engine.h"
#include "base/error.h"

/* The backend's name (vt_backend's name, and the counter its requests are
 * counted under: stats/stats.h). */
#define VT_S3_NAME "s3"

#define VT_S3_HOST_CAP 512

/* Where one request goes. */
struct vt_s3_route {
    int https;
    int virt;                      /* bucket as a subdomain */
    char endpoint[VT_S3_HOST_CAP]; /* host[:port] without the bucket */
    char region[64];
    int endpoint_given;            /* AWS_S3_ENDPOINT set (else AWS's) */
    char memo_key[VT_S3_HOST_CAP + 256]; /* the endpoint option, for memory */
};

/* The route for bucket/key from the options for path "bucket/key" (config.h)
 * and what redirects taught for this endpoint option: a temporary redirect
 * of this very object, else a remembered permanent one for the bucket.
 * VT_EINVAL with errbuf when AWS_S3_ENDPOINT is not a host[:port]. */
vt_err vt__s3_route(const char *bucket, const char *key,
                    struct vt_s3_route *r, char *errbuf, size_t errlen);

/* Remember for (r->memo_key, bucket) [and key, when temporary] the route r
 * now holds. Temporary entries (TemporaryRedirect) apply to that object for
 * a few minutes; permanent ones to the bucket until vt__s3_forget_routes. */
void vt__s3_route_remember(const char *bucket, const char *key,
                           const struct vt_s3_route *r, int temporary);

/* A failure of a request answering for bucket/key itself (an open's or a
 * stat's first request; s3.c): status (0: no HTTP answer), vsitune's err
 * and S3's <Code> (NULL or ""). Returns 1 when it is the same failure as the
 * last one this process saw for that name (same status, err and code), 0
 * for a first or different one; remembers this one either way. Only for
 * the wording (s3_fail.c); never decides a request. Thread-safe. */
int vt__s3_fail_note(const char *bucket, const char *key, long status,
                     vt_err err, const char *code);

/* A request for bucket/key succeeded: its next failure is a first one.
 * Lock-free when no failure is remembered. Thread-safe. */
void vt__s3_fail_ok(const char *bucket, const char *key);

/* A region name as S3 spells them: lowercase letters, digits, '-'. */
int vt__s3_valid_region(const char *r);

/* Who requests for path are made as, for the shared caches' names
 * (vt_backend.access_identity): "<credential identity>\n<request shape>",
 * the identity "anonymous", "*" (VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS)
 * or "signed:<HMAC of the whole credential>", the shape a hash of
 * AWS_REQUEST_PAYER and the extra-header options. 0, or -1 when it cannot
 * be told (s3_ident.c). May fetch credentials. */
int vt__s3_access_identity(const char *path, char *out, size_t outlen);

#endif
