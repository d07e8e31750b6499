/* ident.h: the names the shared caches give objects.
 *
 * Data from one endpoint, one object version or one credential identity is
 * never served for another: the host-wide caches (shmcache.h, shmmeta.h)
 * name an object by
 *   "<backend>:<endpoint>\n<bucket>/<key>\n<credential identity>\n<request shape>"
 * and its blocks by that plus "\n<ETag>", hashed (SHA-256). The endpoint is
 * the bucket root URL as the options resolve it for that path (scheme, host,
 * port, addressing style). The credential identity is everything the
 * request is signed with: a keyed hash (HMAC-SHA256, the secret access key
 * as the key) of the access key id, the session token and the region the
 * options give, so a process holding the key id alone (a wrong secret, a
 * made-up session token) names nothing another process cached; an assumed
 * role is its own credentials. "anonymous" for unsigned requests, or "*"
 * when the user opted in to share across identities
 * (VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS=YES for that path). The request
 * shape is what else can turn a 200 into a 403 for the same credentials:
 * AWS_REQUEST_PAYER and the extra headers options (GDAL_HTTP_HEADERS, the
 * name of GDAL_HTTP_HEADER_FILE), hashed. docs/architecture.md, "Security",
 * says why credentials that rotate are not shared across a rotation. */
#ifndef VT_IDENT_H
#define VT_IDENT_H

#include <stddef.h>

#include "base/error.h"

struct vt_backend;

/* The object identity for the shared caches, malloc'd (caller frees), or
 * NULL when it cannot be built (no credentials can be found, a bad
 * endpoint, no memory: then nothing is shared for this object, and the
 * request tells the user what stock GDAL would). path: "bucket/key", for
 * path-specific options. Thread-safe; may fetch credentials (creds.h). */
char *vt__ident_object(const struct vt_backend *be, const char *bucket,
                       const char *key, const char *path);

#endif
