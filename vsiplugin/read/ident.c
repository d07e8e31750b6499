/* ident.c: object identities for the shared caches (see ident.h). The
 * backend says where an object lives and who asks for it; this module puts
 * the name together. */
#include "read/ident.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"

/* The endpoint is the container's root URL as the backend resolves it for
 * path (for S3: scheme, host, port, addressing style: AWS_S3_ENDPOINT,
 * AWS_HTTPS, AWS_VIRTUAL_HOSTING, the region). */
char *vt__ident_object(const vt_backend *be, const char *bucket,
                       const char *key, const char *path)
{
    char who[160];
    char *ep = be->endpoint(path), *out = NULL;
    size_t n;

    if (!ep)
        return NULL; /* bad endpoint options: the request fails anyway */
    if (be->access_identity(path, who, sizeof who) != 0)
        goto out; /* an identity that cannot be told shares nothing */
    n = strlen(be->name) + strlen(ep) + strlen(bucket) + strlen(key) +
        strlen(who) + 8;
    out = malloc(n);
    if (out)
        snprintf(out, n, "%s:%s\n%s/%s\n%s", be->name, ep, bucket, key, who);
out:
    free(ep);
    return out;
}
