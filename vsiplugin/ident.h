/* ident.h: the names the shared caches give objects.
 *
 * Data from one endpoint, one object version or one credential identity is
 * never served for another: the host-wide caches (shmcache.h, shmmeta.h)
 * name an object by "<endpoint>\n<bucket>/<key>\n<credential identity>",
 * and its blocks by that plus "\n<ETag>", hashed (SHA-256). The endpoint is
 * the bucket root URL as the options resolve it for that path (scheme, host,
 * port, addressing style); the credential identity is a hash of the access
 * key id the request would be signed with, "anonymous" for unsigned
 * requests, or "*" when the user opted in to share across identities
 * (VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS=YES for that path). */
#ifndef VT_IDENT_H
#define VT_IDENT_H

#include <stddef.h>

#include "error.h"

/* The object identity for the shared caches, malloc'd (caller frees), or
 * NULL when it cannot be built (then nothing is shared for this object).
 * path: "bucket/key", for path-specific options. Thread-safe. */
char *vt__ident_object(const char *bucket, const char *key, const char *path);

/* "akid:<first 32 hex digits of SHA-256(access key id)>" into out. Pure. */
void vt__ident_akid(const char *access_key_id, char *out, size_t outlen);

#endif
