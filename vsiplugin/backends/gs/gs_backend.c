/* gs_backend.c: Google Cloud Storage as a vt_backend (backends/backend.h),
 * the way GDAL 3.6's /vsigs/ reaches it: gs.c's requests, gs_auth.h's
 * credentials, listings through the XML API's ListBucketResult (the shape
 * S3's ListObjects v1 answers, parsed by backends/listxml.h), and the
 * shared caches' identity of a credential as a keyed hash (never a token
 * or secret in clear). */
#include "backends/backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_string.h>

#include "auth/gs_auth.h"
#include "auth/sigv4.h"
#include "backends/breq.h"
#include "backends/failmem.h"
#include "backends/gs/gs_int.h"
#include "backends/listxml.h"
#include "base/sha256.h"

static vt_err gs_get(const char *bucket, const char *key, uint64_t off,
                     uint64_t len, const char *etag, vt_http_resp *resp,
                     char *errbuf, size_t errlen)
{
    return vt__gs_perform("GET", bucket, key, NULL, off, len, etag, resp,
                          errbuf, errlen);
}

static vt_err gs_head(const char *bucket, const char *key, vt_http_resp *resp,
                      char *errbuf, size_t errlen)
{
    return vt__gs_perform("HEAD", bucket, key, NULL, 0, 0, NULL, resp, errbuf,
                          errlen);
}

/* GDAL's listing query: delimiter, max-keys (when bounded), prefix, sorted
 * by name, values encoded as CPLAWSURLEncode does ('/' too). */
static vt_err gs_list(const char *bucket, const char *prefix, const char *dir,
                      int max_keys, vt_list_page *out, char *errbuf,
                      size_t errlen)
{
    vt_http_resp r;
    vt_err err;
    char *enc = vt__uri_encode(prefix ? prefix : "", 0), *q = NULL;
    size_t l;

    memset(out, 0, sizeof(*out));
    if (!enc)
        return VT_ENOMEM;
    l = strlen(enc) + 64;
    q = malloc(l);
    if (!q) {
        free(enc);
        return VT_ENOMEM;
    }
    if (max_keys > 0)
        snprintf(q, l, "delimiter=%%2F&max-keys=%d&prefix=%s", max_keys, enc);
    else
        snprintf(q, l, "delimiter=%%2F&prefix=%s", enc);
    err = vt__gs_perform("GET", bucket, "", q, 0, 0, NULL, &r, errbuf, errlen);
    if (err == VT_OK) {
        err = vt__listxml_parse((const char *)r.body, r.body_len,
                                dir ? dir : "", out);
        if (err != VT_OK)
            snprintf(errbuf, errlen,
                     "gs://%s/?prefix=%s: not a ListBucketResult", bucket,
                     prefix ? prefix : "");
    }
    vt__http_resp_clear(&r);
    free(enc);
    free(q);
    return err;
}

/* "<credential identity>\nreq:<hash of the request options that decide
 * access>" (GS_USER_PROJECT bills another project; the header options add
 * headers). The chain runs dry: a grant names the identity, so no token
 * is fetched for it (a fetch here would be one GDAL never makes). */
static int gs_access_identity(const char *path, char *out, size_t outlen)
{
    static const char *const names[] = {"GS_USER_PROJECT", "GDAL_HTTP_HEADERS",
                                        "GDAL_HTTP_HEADER_FILE", NULL};
    vt_gs_creds c;
    char cred[80], h[65], *shape = NULL;
    size_t sl = 1;
    int rc = -1;

    char *across = vt__gs_opt(path, "VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS");
    int any = across && CPLTestBool(across);
    free(across);
    if (any) {
        snprintf(cred, sizeof cred, "*");
    } else {
        int gdal_app = 0;
        if (vt__gs_creds_peek(path, &c, &gdal_app) != VT_OK)
            return -1;
        snprintf(cred, sizeof cred, "%s", c.identity);
        vt__gs_creds_clear(&c);
    }
    for (size_t i = 0; names[i]; i++) {
        char *v = vt__gs_opt(path, names[i]);
        size_t add = strlen(names[i]) + (v ? strlen(v) + 1 : 0) + 1;
        char *ns = realloc(shape, sl + add);
        if (!ns) {
            free(v);
            goto out;
        }
        if (!shape)
            ns[0] = '\0';
        shape = ns;
        /* "name=value\n" or "name\n" when unset: never ambiguous */
        snprintf(shape + strlen(shape), add + 1, "%s%s%s\n", names[i],
                 v ? "=" : "", v ? v : "");
        sl += add;
        free(v);
    }
    vt__sha256_hex(shape, strlen(shape), h);
    h[32] = '\0';
    rc = (size_t)snprintf(out, outlen, "%s\nreq:%s", cred, h) < outlen ? 0 : -1;
out:
    free(shape);
    return rc;
}

/* GDAL's VSICurlClearCache forgets the failures it kept and the bearer
 * tokens (its static OAuth2 manager); its PartialClearCache and a write
 * the failures of the names under a prefix only. Nothing else is learnt
 * per name (GCS does not redirect /vsigs/ reads). */
static void gs_forget(const char *prefix)
{
    vt__failmem_forget(prefix);
    if (!prefix)
        vt__gs_creds_reset();
}

/* A refresh token with GDAL's own OAuth2 application (gs_auth.h). */
static int gs_declines(const char *path)
{
    vt_gs_creds c;
    int gdal_app = 0;
    vt__gs_creds_peek(path, &c, &gdal_app);
    vt__gs_creds_clear(&c);
    if (gdal_app)
        CPLDebug("VSITUNE", "gs: %s: refresh token with GDAL's own OAuth2 "
                 "application: left to GDAL's /vsigs/", path);
    return gdal_app;
}

const vt_backend vt__backend_gs = {
    .name = VT_GS_NAME,
    .gdal_prefix = "/vsigs/",
    .scheme = "gs://",
    .split = vt__gs_split,
    .endpoint = vt__gs_endpoint,
    .access_identity = gs_access_identity,
    .build_get = vt__gs_build_get,
    .req_clear = vt__breq_clear,
    .get = gs_get,
    .head = gs_head,
    .list = gs_list,
    .describe = vt__gs_describe,
    .status_err = vt__gs_status_err,
    .last_failure = vt__gs_last_failure,
    .forget = gs_forget,
    .declines = gs_declines,
};
