/* ident.c: object identities for the shared caches (see ident.h). */
#include "ident.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "creds.h"
#include "s3.h"

void vt__ident_akid(const char *access_key_id, char *out, size_t outlen)
{
    unsigned char md[32];
    unsigned int n = 0, i;
    char hex[33];

    if (!EVP_Digest(access_key_id, strlen(access_key_id), md, &n, EVP_sha256(),
                    NULL) || n != 32)
        memset(md, 0, sizeof md);
    for (i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    snprintf(out, outlen, "akid:%s", hex);
}

/* The credential identity requests for path are signed with. */
static void cred_identity(const char *path, char *out, size_t outlen)
{
    vt_creds c;
    char err[256];

    if (vt__cfg_bool(path, "VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS", 0)) {
        snprintf(out, outlen, "*");
        return;
    }
    if (vt__creds_get(path, &c, err, sizeof err) != VT_OK) {
        snprintf(out, outlen, "none"); /* the request will fail anyway */
        return;
    }
    if (c.anonymous || !c.access_key)
        snprintf(out, outlen, "anonymous");
    else
        vt__ident_akid(c.access_key, out, outlen);
    vt__creds_clear(&c);
}

/* The endpoint is the bucket's root URL as s3.c resolves it for path
 * (scheme, host, port, addressing style: AWS_S3_ENDPOINT, AWS_HTTPS,
 * AWS_VIRTUAL_HOSTING, the region). */
char *vt__ident_object(const char *bucket, const char *key, const char *path)
{
    char cred[64];
    char *ep = vt__s3_endpoint_base(path), *out = NULL;
    size_t n;

    if (!ep)
        return NULL; /* a bad AWS_S3_ENDPOINT: the request fails anyway */
    cred_identity(path, cred, sizeof cred);
    n = strlen(ep) + strlen(bucket) + strlen(key) + strlen(cred) + 8;
    out = malloc(n);
    if (out)
        snprintf(out, n, "%s\n%s/%s\n%s", ep, bucket, key, cred);
    free(ep);
    return out;
}
