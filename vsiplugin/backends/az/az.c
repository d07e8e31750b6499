/* az.c: Azure Blob storage as a vt_backend (backends/backend.h):
 * vt__backend_az, what GDAL 3.6's /vsiaz/ reaches.
 *
 * Why: the read path asks for objects and byte ranges; this file turns
 * them into the very requests stock GDAL 3.6 sends for the same options
 * (measured on the lab's Azurite with CPL_CURL_VERBOSE): the URL
 * <endpoint>/<container>/<blob>[?<SAS>], the user's headers, x-ms-date, and with a shared key
 * x-ms-version and a Shared Key Authorization (auth/az_sign.c) signed over
 * Range and If-Match, with a bearer token the token and x-ms-version; and
 * it keeps the last failure in the words GDAL 3.6 gives it (Azure's error
 * body never becomes the message: GDAL's /vsiaz/ says "HTTP response code:
 * <n>"; 3.13 words Azure's code and message). Credentials are
 * auth/az_creds.c's, listings az_list.c's, the failure record bfail.c's
 * (per thread); a failure of a request answering for the name itself is
 * noted in backends/failmem.h (a failure met again is worded as GDAL's
 * remembered one, as /vsis3/'s and /vsigs/'s). No lock of its own. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_vsi_error.h>

#include "auth/az_auth.h"
#include "auth/sigv4.h"
#include "backends/az/az_int.h"
#include "backends/backend.h"
#include "backends/bfail.h"
#include "backends/failmem.h"
#include "backends/userhdr.h"
#include "base/config.h"
#include "base/xmlscan.h"
#include "compat/gdal_error.h"
#include "compat/gdal_release.h"

#define AZ_MAX_HEADERS 8
#define LIST_BODY_MAX (8u << 20)

/* ---- names ------------------------------------------------------------ */

static vt_err az_split(const char *path, char **container, char **key)
{
    const char *s;

    *container = *key = NULL;
    while (path && *path == '/')
        path++;
    if (!path || !*path)
        return VT_EINVAL;
    s = strchr(path, '/');
    *container = s ? strndup(path, (size_t)(s - path)) : strdup(path);
    *key = strdup(s ? s + 1 : "");
    if (!*container || !*key || !**container) {
        vt_err e = *container && *key ? VT_EINVAL : VT_ENOMEM;
        free(*container);
        free(*key);
        *container = *key = NULL;
        return e;
    }
    return VT_OK;
}

/* "container/key" (the options path) */
static char *opt_path(const char *container, const char *key)
{
    size_t l = strlen(container) + strlen(key) + 2;
    char *p = malloc(l);
    if (p)
        snprintf(p, l, "%s%s%s", container, *key ? "/" : "", key);
    return p;
}

static char *az_endpoint(const char *path)
{
    vt_az_cfg c;
    char err[512];
    char *e = NULL;

    if (vt__az_config_where(path, &c, err, sizeof err) != VT_OK)
        return NULL;
    e = c.endpoint ? strdup(c.endpoint) : NULL;
    vt__az_config_clear(&c);
    return e;
}

static int az_access_identity(const char *path, char *out, size_t outlen)
{
    vt_az_cfg c;
    char err[512];
    int rc;

    if (vt__cfg_bool(path, "VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS", 0)) {
        snprintf(out, outlen, "*");
        return 0;
    }
    if (vt__az_config(path, &c, err, sizeof err) != VT_OK)
        return -1;
    rc = vt__az_identity(&c, out, outlen);
    vt__az_config_clear(&c);
    return rc;
}

/* ---- requests --------------------------------------------------------- */

static void az_req_clear(vt_backend_req *r)
{
    if (!r)
        return;
    free(r->url);
    for (size_t i = 0; r->headers && r->headers[i]; i++)
        free(r->headers[i]);
    free(r->headers);
    free(r->cainfo);
    free(r->opts_path);
    memset(r, 0, sizeof(*r));
}

/* Append the header "name: value" (value: the parts a and b joined). */
static vt_err push(char **h, size_t *n, size_t cap, const char *name,
                   const char *a, const char *b)
{
    size_t l = strlen(name) + strlen(a) + (b ? strlen(b) : 0) + 4;
    if (*n >= cap)
        return VT_EINVAL;
    h[*n] = malloc(l);
    if (!h[*n])
        return VT_ENOMEM;
    snprintf(h[*n], l, "%s: %s%s", name, a, b ? b : "");
    (*n)++;
    return VT_OK;
}

/* The path part of the endpoint ("/devstoreaccount1" for Azurite's,
 * "" for Azure's own): Shared Key's resource starts with it. */
static const char *endpoint_path(const char *ep)
{
    const char *s = strstr(ep, "//");
    const char *p = s ? strchr(s + 2, '/') : NULL;
    return p ? p : "";
}

/* Build a request for container/key (key "" with query: the container),
 * query being "name=encoded value" pairs joined by '&', sorted by name
 * (as GDAL's map of parameters), params their decoded forms for signing. */
static vt_err build(const char *method, const char *container,
                    const char *key, const char *query,
                    const char *const *params, uint64_t off, uint64_t len,
                    const char *etag, vt_backend_req *out, char *errbuf,
                    size_t errlen)
{
    vt_az_cfg c;
    char *path = opt_path(container, key), *ec = NULL, *ek = NULL;
    char *res = NULL, *sts = NULL, range[64], date[40], sig[64];
    char *fixed_date = NULL;
    char **user = NULL;
    size_t n = 0, nuser = 0, cap = 0, ul, rl;
    vt_err err;

    memset(out, 0, sizeof(*out));
    if (errlen)
        errbuf[0] = '\0';
    if (!path)
        return VT_ENOMEM;
    err = vt__az_config(path, &c, errbuf, errlen);
    if (err != VT_OK) {
        free(path);
        return err;
    }
    /* the user's headers first, as GDAL 3.6 sends them on /vsiaz/ (its
     * x-ms-* ones are then signed with the rest) */
    user = vt__user_headers(path);
    while (user && user[nuser])
        nuser++;
    cap = nuser + AZ_MAX_HEADERS;
    out->headers = calloc(cap + 1, sizeof(char *));
    ec = vt__uri_encode(container, 0);
    ek = vt__uri_encode(key, 1);
    if (!out->headers || !ec || !ek) {
        err = VT_ENOMEM;
        goto out;
    }
    ul = strlen(c.endpoint) + strlen(ec) + strlen(ek) +
         (query ? strlen(query) : 0) + (c.sas ? strlen(c.sas) : 0) + 8;
    out->url = malloc(ul);
    if (!out->url) {
        err = VT_ENOMEM;
        goto out;
    }
    snprintf(out->url, ul, "%s/%s%s%s%s%s%s%s", c.endpoint, ec, *key ? "/" : "",
             ek, query || c.sas ? "?" : "", query ? query : "",
             query && c.sas ? "&" : "", c.sas ? c.sas : "");
    for (size_t i = 0; i < nuser; i++) {
        out->headers[n++] = user[i];
        user[i] = NULL;
    }
    if (len) {
        snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64, off,
                 off + len - 1);
        err = push(out->headers, &n, cap, "Range", range, NULL);
    }
    if (!err && etag)
        err = push(out->headers, &n, cap, "If-Match", etag, NULL);
    if (err)
        goto out;
    if (c.token) {
        err = push(out->headers, &n, cap, "Authorization", "Bearer ", c.token);
        if (!err)
            err = push(out->headers, &n, cap, "x-ms-version", VT_AZ_MS_VERSION,
                       NULL);
        goto out;
    }
    /* CPL_AZURE_TIMESTAMP: GDAL's fixed date, for signatures that can be
     * compared */
    fixed_date = vt__cfg_dup(NULL, "CPL_AZURE_TIMESTAMP");
    if (fixed_date)
        snprintf(date, sizeof(date), "%s", fixed_date);
    else
        vt__http_date((long long)time(NULL), date);
    err = push(out->headers, &n, cap, "x-ms-date", date, NULL);
    /* x-ms-version: signed requests only, until GDAL 3.13 sends it always */
    if (!err && (c.key || vt__gdal_release()->az_ms_version_always))
        err = push(out->headers, &n, cap, "x-ms-version", VT_AZ_MS_VERSION,
                   NULL);
    if (err || !c.key)
        goto out;
    rl = strlen(endpoint_path(c.endpoint)) + strlen(container) + strlen(ek) + 4;
    res = malloc(rl);
    if (!res) {
        err = VT_ENOMEM;
        goto out;
    }
    snprintf(res, rl, "%s/%s%s%s", endpoint_path(c.endpoint), container,
             *key ? "/" : "", ek);
    sts = vt__az_string_to_sign(method, (const char *const *)out->headers,
                                c.account, res, params);
    if (!sts) {
        err = VT_ENOMEM;
        goto out;
    }
    if (vt__az_sign(c.key, sts, sig, sizeof sig) != 0) {
        snprintf(errbuf, errlen, "az://%s/%s: AZURE_STORAGE_ACCESS_KEY is not "
                 "a base64 key", container, key);
        err = VT_ECREDS;
        goto out;
    }
    {
        size_t al = strlen(c.account) + strlen(sig) + 2;
        char *who = malloc(al);
        if (!who) {
            err = VT_ENOMEM;
            goto out;
        }
        snprintf(who, al, "%s:%s", c.account, sig);
        err = push(out->headers, &n, cap, "Authorization", "SharedKey ", who);
        free(who);
    }
out:
    if (!err) {
        /* the CA file and the engine's options for the blob's path, as
         * GDAL 3.7+ reads a /vsiaz/ handle's (3.6: the configuration's;
         * config.h) */
        out->cainfo = vt__cfg_ca_bundle(path, query ? VT_CA_LIST : VT_CA_READ);
        out->opts_path = strdup(path);
        out->req.opts_path = out->opts_path;
        out->req.method = method;
        out->req.counter = vt__backend_az.name;
        out->req.url = out->url;
        out->req.headers = (const char *const *)out->headers;
        out->req.expect_len = len;
        out->req.max_retries = -1;
        out->req.retry_delay = -1;
        out->req.has_cainfo = 1;
        out->req.cainfo = out->cainfo;
    } else {
        if (!errbuf[0])
            snprintf(errbuf, errlen, "az://%s/%s: %s", container, key,
                     vt_strerror(err));
        az_req_clear(out);
    }
    vt__user_headers_free(user);
    free(fixed_date);
    free(sts);
    free(res);
    free(ec);
    free(ek);
    free(path);
    vt__az_config_clear(&c);
    return err;
}

static vt_err az_build_get(const char *container, const char *key,
                           uint64_t off, uint64_t len, const char *etag,
                           vt_backend_req *out, char *errbuf, size_t errlen)
{
    if (!container || !key)
        return VT_EINVAL;
    return build("GET", container, key, NULL, NULL, off, len, etag, out,
                 errbuf, errlen);
}

/* ---- answers ---------------------------------------------------------- */

/* The object stores' reading (backend.c), but Azure's 401 is a refusal
 * and its 301/307 no redirect vsitune follows. */
static vt_err az_status_err(long status)
{
    if (status == 401)
        return VT_EACCESS;
    if (status == 301 || status == 307)
        return VT_EHTTP;
    return vt__backend_status_err(status);
}

static void az_describe(char *buf, size_t len, const char *container,
                        const char *key, const vt_http_resp *r, vt_err err)
{
    char *code = NULL, *msg = NULL;
    const char *why = r->error[0] ? r->error : "";

    if (r->status >= 300 && r->body && r->body_len) {
        code = vt__xml_tag((const char *)r->body, r->body_len, "Code");
        msg = vt__xml_tag((const char *)r->body, r->body_len, "Message");
        if (msg && strchr(msg, '\n')) /* Azure adds RequestId and Time */
            *strchr(msg, '\n') = '\0';
    }
    if (r->status <= 0)
        snprintf(buf, len, "az://%s/%s: %s%s%s", container, key,
                 r->cause[0] ? r->cause : vt_strerror(err), why[0] ? ": " : "",
                 why);
    else if (r->status < 300)
        snprintf(buf, len, "az://%s/%s: HTTP %ld: %s (%s)", container, key,
                 r->status, why[0] ? why : "unusable answer", vt_strerror(err));
    else
        snprintf(buf, len, "az://%s/%s: HTTP %ld%s%s%s%s", container, key,
                 r->status, code ? " " : "", code ? code : "",
                 msg ? ": " : "", msg ? msg : "");
    free(code);
    free(msg);
}

/* ---- the last failure, for GDAL's report ------------------------------ */

static _Thread_local char t_said[1280]; /* az_last_failure's words */

/* GDAL 3.6 to 3.12's /vsiaz/ does not read Azure's error body into its
 * message (no S3-like error parsing for Azure): the body is left out, so
 * the failure is worded "HTTP response code: <n>" as stock words it. From
 * 3.13 (gdal_release.h, az_error_words) stock words Azure's code and
 * message, and a 404 as its HEAD's "ObjectNotFound: Not Found". */
static int az_last_failure(const char *container, const char *key,
                           struct vt_gdal_fail *out)
{
    char *code = NULL, *msg = NULL;

    if (!vt__bfail_get("az://", container, key, out))
        return 0;
    if (vt__gdal_release()->az_error_words && out->status >= 300) {
        if (out->body) {
            code = vt__xml_tag(out->body, out->body_len, "Code");
            msg = vt__xml_tag(out->body, out->body_len, "Message");
        }
        if (out->status == 404) {
            /* 3.13 prefixes "ObjectNotFound: " itself (measured) */
            snprintf(t_said, sizeof(t_said), "Not Found");
            out->said_vsie = VSIE_AWSObjectNotFound;
            out->said = t_said;
        } else if (code && msg) {
            snprintf(t_said, sizeof(t_said), "%s: %s", code, msg);
            out->said_vsie = VSIE_AWSError;
            out->said = t_said;
        }
    }
    out->body = NULL;
    out->body_len = 0;
    free(code);
    free(msg);
    return 1;
}

/* A failure of a request answering for container/key itself (an open's or
 * a stat's: a HEAD, or a GET from byte 0 not pinned to an ETag), which
 * GDAL would keep in its cache of file properties: noted in failmem.h at
 * the name's endpoint. Returns 1 when it is the name's last failure again. */
static int note_again(const char *container, const char *key, vt_err err,
                      const vt_http_resp *r)
{
    char *name = opt_path(container, key), *ep = NULL, *code = NULL;
    int again = 0;

    if (!name)
        return 0;
    ep = az_endpoint(name);
    if (r->body && r->body_len)
        code = vt__xml_tag((const char *)r->body, r->body_len, "Code");
    again = vt__failmem_note(name, ep, r->status, err, code);
    free(code);
    free(ep);
    free(name);
    return again;
}

static vt_err perform(const char *method, const char *container,
                      const char *key, const char *query,
                      const char *const *params, uint64_t off, uint64_t len,
                      const char *etag, size_t max_body, vt_http_resp *resp,
                      char *errbuf, size_t errlen)
{
    vt_backend_req rq;
    vt_err err;

    memset(resp, 0, sizeof(*resp));
    vt__bfail_forget();
    if (!container || !key)
        return VT_EINVAL;
    err = build(method, container, key, query, params, off, len, etag, &rq,
                errbuf, errlen);
    if (err) {
        vt__bfail_note("az://", container, key, err, NULL, NULL, errbuf, 0);
        return err;
    }
    if (max_body)
        rq.req.max_body = max_body;
    err = vt__engine_perform(&rq.req, resp);
    if (!err)
        err = az_status_err(resp->status);
    if (err) {
        int first = !query && *key &&
                    (!strcmp(method, "HEAD") || (off == 0 && !etag));
        az_describe(errbuf, errlen, container, key, resp, err);
        CPLDebug("VSITUNE", "%s", errbuf);
        vt__bfail_note("az://", container, key, err, resp, rq.url, NULL,
                       first && note_again(container, key, err, resp));
    } else if (!query && *key) {
        char *name = opt_path(container, key);
        if (name)
            vt__failmem_ok(name);
        free(name);
    }
    az_req_clear(&rq);
    return err;
}

static vt_err az_get(const char *container, const char *key, uint64_t off,
                     uint64_t len, const char *etag, vt_http_resp *resp,
                     char *errbuf, size_t errlen)
{
    return perform("GET", container, key, NULL, NULL, off, len, etag, 0, resp,
                   errbuf, errlen);
}

static vt_err az_head(const char *container, const char *key,
                      vt_http_resp *resp, char *errbuf, size_t errlen)
{
    return perform("HEAD", container, key, NULL, NULL, 0, 0, NULL, 0, resp,
                   errbuf, errlen);
}

/* List Blobs (GDAL's ReadDir): restype=container&comp=list, "/" as the
 * delimiter, the prefix when not empty, maxresults when asked; in the URL
 * in name order as GDAL's map of parameters, signed decoded. */
static vt_err az_list(const char *container, const char *prefix,
                      const char *dir, int max_keys, vt_list_page *out,
                      char *errbuf, size_t errlen)
{
    char *enc = vt__uri_encode(prefix ? prefix : "", 0);
    char *query = NULL, *pprefix = NULL, maxr[48] = "", pmax[48];
    const char *params[6];
    size_t ql, np = 0;
    vt_http_resp r;
    vt_err err = VT_ENOMEM;

    memset(out, 0, sizeof(*out));
    memset(&r, 0, sizeof(r));
    if (!enc)
        goto out;
    if (max_keys > 0)
        snprintf(maxr, sizeof(maxr), "maxresults=%d&", max_keys);
    ql = strlen(enc) + 128;
    query = malloc(ql);
    pprefix = malloc(strlen(prefix ? prefix : "") + 8);
    if (!query || !pprefix)
        goto out;
    snprintf(query, ql, "comp=list&delimiter=%%2F&%s%s%s%srestype=container",
             maxr, *enc ? "prefix=" : "", enc, *enc ? "&" : "");
    params[np++] = "comp=list";
    params[np++] = "delimiter=/";
    if (max_keys > 0) {
        snprintf(pmax, sizeof(pmax), "maxresults=%d", max_keys);
        params[np++] = pmax;
    }
    if (prefix && *prefix) {
        sprintf(pprefix, "prefix=%s", prefix);
        params[np++] = pprefix;
    }
    params[np++] = "restype=container";
    params[np] = NULL;
    err = perform("GET", container, "", query, params, 0, 0, NULL,
                  LIST_BODY_MAX, &r, errbuf, errlen);
    if (err == VT_OK) {
        err = vt__az_parse_list((const char *)r.body, r.body_len,
                                dir ? dir : "", out);
        if (err != VT_OK)
            snprintf(errbuf, errlen,
                     "az://%s/?prefix=%s: not an EnumerationResults",
                     container, prefix ? prefix : "");
    }
out:
    vt__http_resp_clear(&r);
    free(enc);
    free(query);
    free(pprefix);
    return err;
}

/* GDAL's VSICurlClearCache: the failures and the managed identity tokens
 * it kept; its PartialClearCache and a write: the failures of the names
 * under a prefix only. Nothing else is remembered per name (no redirects,
 * no regions). */
static void az_forget(const char *prefix)
{
    vt__failmem_forget(prefix);
    if (!prefix || !prefix[0])
        vt__az_forget_tokens();
}

const vt_backend vt__backend_az = {
    .name = "az",
    .gdal_prefix = "/vsiaz/",
    .scheme = "az://",
    .split = az_split,
    .endpoint = az_endpoint,
    .access_identity = az_access_identity,
    .build_get = az_build_get,
    .req_clear = az_req_clear,
    .get = az_get,
    .head = az_head,
    .list = az_list,
    .describe = az_describe,
    .status_err = az_status_err,
    .last_failure = az_last_failure,
    .forget = az_forget,
};
