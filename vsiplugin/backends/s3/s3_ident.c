/* s3_ident.c: who S3 requests for a path are made as, for the shared
 * caches' names of objects (vt_backend.access_identity, read/ident.h).
 *
 * Why the whole credential and not its key id: a key id is no secret (it is
 * in every request, in logs, in CloudTrail), so a name built from it alone
 * let a process that has only the id read what a process with the real
 * secret cached, with no request, where S3 would answer 403. The secret is
 * the HMAC key (auth/credkey.h), so the name proves possession of it
 * without holding it. */
#include "backends/s3/s3_int.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/credkey.h"
#include "auth/creds.h"
#include "backends/s3/s3.h"
#include "base/config.h"
#include "base/sha256.h"

static void hex(const unsigned char *md, unsigned n, char *out)
{
    unsigned i;
    for (i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* The credential identity requests for path are signed with; -1 when it
 * cannot be told (no credentials: the request fails anyway; no memory). */
static int cred_identity(const char *path, char *out, size_t outlen)
{
    vt_creds c;
    char err[256], *region = NULL;
    int rc = 0;

    if (vt__opt_choice(path, VT_OPT_ACROSS_CREDENTIALS, NULL)) {
        snprintf(out, outlen, "*");
        return 0;
    }
    if (vt__creds_get(path, &c, err, sizeof err) != VT_OK)
        return -1;
    if (c.anonymous || !c.access_key || !c.secret_key) {
        snprintf(out, outlen, "anonymous");
    } else {
        region = vt__s3_options_region(path);
        rc = region ? vt__ident_signer(c.access_key, c.secret_key,
                                       c.session_token, region, out, outlen)
                    : -1;
    }
    free(region);
    vt__creds_clear(&c);
    return rc;
}

/* SHA-256 (first 16 bytes, hex) of the options besides the credentials
 * that decide whether S3 serves the request: requester pays, extra headers
 * (the header file by name: its content is not read here). */
static int request_shape(const char *path, char *out, size_t outlen)
{
    static const char *const names[] = {"AWS_REQUEST_PAYER", "GDAL_HTTP_HEADERS",
                                        "GDAL_HTTP_HEADER_FILE", NULL};
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char md[32];
    unsigned int n = 0;
    char h[33];
    int ok = ctx && EVP_DigestInit_ex(ctx, vt__sha256_md(), NULL);
    size_t i;

    for (i = 0; ok && names[i]; i++) {
        char *v = vt__cfg_dup(path, names[i]);
        /* "name=value\0", or "name\0" when unset: never ambiguous */
        ok = EVP_DigestUpdate(ctx, names[i], strlen(names[i])) &&
             (!v || (EVP_DigestUpdate(ctx, "=", 1) &&
                     EVP_DigestUpdate(ctx, v, strlen(v)))) &&
             EVP_DigestUpdate(ctx, "", 1);
        free(v);
    }
    ok = ok && EVP_DigestFinal_ex(ctx, md, &n) && n == 32;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return -1;
    hex(md, 16, h);
    snprintf(out, outlen, "req:%s", h);
    return 0;
}

int vt__s3_access_identity(const char *path, char *out, size_t outlen)
{
    char cred[80], shape[40];

    if (cred_identity(path, cred, sizeof cred) != 0 ||
        request_shape(path, shape, sizeof shape) != 0)
        return -1;
    return (size_t)snprintf(out, outlen, "%s\n%s", cred, shape) < outlen ? 0 : -1;
}
