/* ident.c: object identities for the shared caches (see ident.h).
 *
 * Why the whole credential and not its key id: a key id is no secret (it is
 * in every request, in logs, in CloudTrail), so a name built from it alone
 * let a process that has only the id read what a process with the real
 * secret cached, with no request, where S3 would answer 403. The secret is
 * the HMAC key, so the name proves possession of it without holding it. */
#include "read/ident.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "auth/creds.h"
#include "backends/s3/s3.h"

#define SIGNER_TAG "vsitune shared cache identity 1"

static void hex(const unsigned char *md, unsigned n, char *out)
{
    unsigned i;
    for (i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

int vt__ident_signer(const char *access_key_id, const char *secret,
                     const char *session_token, const char *region,
                     char *out, size_t outlen)
{
    unsigned char md[32];
    unsigned int n = 0;
    char h[65];
    const char *tok = session_token ? session_token : "";
    const char *reg = region ? region : "";
    size_t len = strlen(SIGNER_TAG) + strlen(access_key_id) + strlen(tok) +
                 strlen(reg) + 4;
    char *msg = malloc(len);
    int rc = -1;

    if (outlen)
        out[0] = '\0';
    if (!msg)
        return -1;
    snprintf(msg, len, "%s\n%s\n%s\n%s", SIGNER_TAG, access_key_id, tok, reg);
    if (HMAC(EVP_sha256(), secret, (int)strlen(secret),
             (const unsigned char *)msg, strlen(msg), md, &n) && n == 32) {
        hex(md, 32, h);
        snprintf(out, outlen, "signed:%s", h);
        rc = 0;
    }
    OPENSSL_cleanse(msg, len);
    OPENSSL_cleanse(md, sizeof md);
    free(msg);
    return rc;
}

/* The credential identity requests for path are signed with; -1 when it
 * cannot be told (no credentials: the request fails anyway; no memory). */
static int cred_identity(const char *path, char *out, size_t outlen)
{
    vt_creds c;
    char err[256], *region = NULL;
    int rc = 0;

    if (vt__cfg_bool(path, "VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS", 0)) {
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
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
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

/* The endpoint is the bucket's root URL as s3.c resolves it for path
 * (scheme, host, port, addressing style: AWS_S3_ENDPOINT, AWS_HTTPS,
 * AWS_VIRTUAL_HOSTING, the region). */
char *vt__ident_object(const char *bucket, const char *key, const char *path)
{
    char cred[80], shape[40];
    char *ep = vt__s3_endpoint_base(path), *out = NULL;
    size_t n;

    if (!ep)
        return NULL; /* a bad AWS_S3_ENDPOINT: the request fails anyway */
    if (cred_identity(path, cred, sizeof cred) != 0 ||
        request_shape(path, shape, sizeof shape) != 0)
        goto out; /* an identity that cannot be told shares nothing */
    n = strlen(ep) + strlen(bucket) + strlen(key) + strlen(cred) +
        strlen(shape) + 8;
    out = malloc(n);
    if (out)
        snprintf(out, n, "%s\n%s/%s\n%s\n%s", ep, bucket, key, cred, shape);
out:
    free(ep);
    return out;
}
