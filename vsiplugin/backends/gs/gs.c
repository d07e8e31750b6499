/* gs.c: GDAL 3.6's /vsigs/ requests (gs_int.h).
 *
 * Why: the same URL and headers GDAL's VSIGSHandleHelper sends for a read
 * of the same object: CPL_GS_ENDPOINT + the encoded "bucket/key" (a bare
 * bucket gets a trailing '/'), then, by the credentials gs_auth.h finds,
 * the user's headers (GDAL_HTTP_HEADER_FILE, GDAL_HTTP_HEADERS: userhdr.h),
 * nothing more (GS_NO_SIGN_REQUEST, or a header file holding the
 * Authorization), "Authorization: Bearer <token>" or Date +
 * "Authorization: GOOG1 <id>:<HMAC-SHA1>" over the canonical resource,
 * and x-goog-user-project when GS_USER_PROJECT is set (signed in GOOG1 as
 * an x-goog-* header, with the user's x-goog-* ones, Content-MD5 and
 * Content-Type). The last failure of this thread is kept (copied)
 * for the GDAL face's wording of a failed open, and the failure of a
 * request answering for the name itself noted in backends/failmem.h (a
 * failure met again is worded as GDAL's remembered one). No lock. */
#include "backends/gs/gs_int.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cpl_error.h>

#include "auth/gs_auth.h"
#include "auth/sigv4.h"
#include "backends/backend.h"
#include "backends/breq.h"
#include "backends/failmem.h"
#include "backends/userhdr.h"
#include "base/xmlscan.h"
#include "compat/gdal_error.h"

#define GS_DEFAULT_ENDPOINT "https://storage.googleapis.com/"
#define GS_MAX_HEADERS 8

vt_err vt__gs_split(const char *path, char **bucket, char **key)
{
    const char *slash;
    *bucket = *key = NULL;
    while (path && *path == '/')
        path++;
    if (!path || !*path || *path == '/')
        return VT_EINVAL;
    slash = strchr(path, '/');
    *bucket = slash ? strndup(path, (size_t)(slash - path)) : strdup(path);
    *key = strdup(slash ? slash + 1 : "");
    if (!*bucket || !*key) {
        free(*bucket);
        free(*key);
        *bucket = *key = NULL;
        return VT_ENOMEM;
    }
    return VT_OK;
}

char *vt__gs_endpoint_for(const char *path)
{
    char *ep = vt__gs_opt(path, "CPL_GS_ENDPOINT");
    return ep ? ep : strdup(GS_DEFAULT_ENDPOINT);
}

char *vt__gs_endpoint(const char *path)
{
    char *b = NULL, *k = NULL, *ep = NULL, *out = NULL;
    if (vt__gs_split(path, &b, &k) == VT_OK && (ep = vt__gs_endpoint_for(path))) {
        size_t l = strlen(ep) + strlen(b) + 1;
        out = malloc(l);
        if (out)
            snprintf(out, l, "%s%s", ep, b);
    }
    free(b);
    free(k);
    free(ep);
    return out;
}

static int has_break(const char *v)
{
    return v && strpbrk(v, "\r\n") != NULL;
}

static vt_err bearer_header(vt_backend_req *o, size_t *n, const char *token)
{
    size_t l = strlen(token) + 8;
    char *v = malloc(l);
    vt_err e;
    if (!v)
        return VT_ENOMEM;
    snprintf(v, l, "Bearer %s", token);
    e = vt__breq_add(o, n, "Authorization", v);
    memset(v, 0, l);
    free(v);
    return e;
}

/* "Date" for path: CPL_GS_TIMESTAMP (GDAL's test hook) or now. */
static char *date_for(const char *path)
{
    char *d = vt__gs_opt(path, "CPL_GS_TIMESTAMP");
    if (!d) {
        d = malloc(VT_HTTP_DATE_LEN);
        if (d)
            vt__http_date((long long)time(NULL), d);
    }
    return d;
}

vt_err vt__gs_build(const char *method, const char *bucket, const char *key,
                    const char *query, uint64_t off, uint64_t len,
                    const char *etag, vt_backend_req *out, char *errbuf,
                    size_t errlen)
{
    vt_gs_creds cr;
    vt_err err;
    size_t n = 0, l, nuser = 0, nsign = 0;
    char **user = NULL;
    const char **sign = NULL, *md5 = NULL, *ctype = NULL;
    char *path = NULL, *ep = NULL, *enc = NULL, *resource = NULL,
         *project = NULL, *date = NULL, *auth = NULL, range[64];

    memset(out, 0, sizeof(*out));
    memset(&cr, 0, sizeof(cr));
    if (errlen)
        errbuf[0] = '\0';
    if (!bucket || !*bucket || !key || has_break(etag) ||
        (len > 0 && off > UINT64_MAX - len)) {
        snprintf(errbuf, errlen, "gs://%s/%s: invalid request arguments",
                 bucket ? bucket : "", key ? key : "");
        return VT_EINVAL;
    }
    l = strlen(bucket) + strlen(key) + 2;
    path = malloc(l);
    if (!path) {
        err = VT_ENOMEM;
        goto out;
    }
    snprintf(path, l, "%s%s%s", bucket, *key ? "/" : "", key);
    err = vt__gs_creds_get(path, &cr, errbuf, errlen);
    if (err)
        goto out;
    project = vt__gs_opt(path, "GS_USER_PROJECT");
    if (has_break(project)) {
        snprintf(errbuf, errlen, "GS_USER_PROJECT holds a line break");
        err = VT_EINVAL;
        goto out;
    }
    ep = vt__gs_endpoint_for(path);
    enc = vt__uri_encode(path, 1);
    user = vt__user_headers(path);
    while (user && user[nuser])
        nuser++;
    out->headers = calloc(nuser + GS_MAX_HEADERS + 1, sizeof(char *));
    sign = calloc(nuser + 2, sizeof(char *));
    if (!ep || !enc || !out->headers || !sign) {
        err = VT_ENOMEM;
        goto out;
    }
    /* The user's headers first, as GDAL puts them; their x-goog-* ones,
     * Content-MD5 and Content-Type go into GOOG1's string to sign. */
    for (size_t i = 0; i < nuser; i++) {
        const char *h = user[i];
        if (!strncasecmp(h, "x-goog-", 7))
            sign[nsign++] = h;
        else if (!strncasecmp(h, "content-md5:", 12))
            md5 = h + 12;
        else if (!strncasecmp(h, "content-type:", 13))
            ctype = h + 13;
        out->headers[n++] = user[i];
        user[i] = NULL;
    }
    while (md5 && (*md5 == ' ' || *md5 == '\t'))
        md5++;
    while (ctype && (*ctype == ' ' || *ctype == '\t'))
        ctype++;
    /* GDAL: endpoint + encoded "bucket/key"; a bare bucket ends in '/' */
    l = strlen(ep) + strlen(enc) + (query ? strlen(query) : 0) + 4;
    out->url = malloc(l);
    resource = malloc(strlen(enc) + 3);
    if (!out->url || !resource) {
        err = VT_ENOMEM;
        goto out;
    }
    snprintf(out->url, l, "%s%s%s%s%s", ep, enc, *key ? "" : "/",
             query ? "?" : "", query ? query : "");
    snprintf(resource, strlen(enc) + 3, "/%s%s", enc, *key ? "" : "/");
    if (len > 0) {
        snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64, off,
                 off + len - 1);
        err = vt__breq_add(out, &n, "Range", range);
    }
    if (!err && etag)
        err = vt__breq_add(out, &n, "If-Match", etag);
    if (!err && cr.mode == VT_GS_HMAC) {
        char up[512];
        if (project && (size_t)snprintf(up, sizeof(up), "x-goog-user-project: %s",
                                        project) < sizeof(up))
            sign[nsign++] = up;
        date = date_for(path);
        auth = date ? vt__gs_goog1(method, md5, ctype, date, sign, resource,
                                   cr.access_key, cr.secret, NULL)
                    : NULL;
        err = auth ? vt__breq_add(out, &n, "Date", date) : VT_ENOMEM;
        if (!err)
            err = vt__breq_add(out, &n, "Authorization", auth);
    } else if (!err && cr.mode == VT_GS_BEARER) {
        err = has_break(cr.bearer) ? VT_ECREDS
                                   : bearer_header(out, &n, cr.bearer);
    }
    if (!err && project && cr.mode != VT_GS_NOSIGN && cr.mode != VT_GS_HEADER_FILE)
        err = vt__breq_add(out, &n, "x-goog-user-project", project);
    if (err)
        goto out;
    vt__breq_finish(out, method, len, path, query != NULL);
    out->req.counter = VT_GS_NAME;
out:
    if (err) {
        vt__breq_clear(out);
        if (errlen && !errbuf[0])
            snprintf(errbuf, errlen, "gs://%s/%s: %s", bucket, key,
                     vt_strerror(err));
    }
    vt__gs_creds_clear(&cr);
    vt__user_headers_free(user);
    free(sign);
    free(path);
    free(ep);
    free(enc);
    free(resource);
    free(project);
    free(date);
    if (auth)
        memset(auth, 0, strlen(auth));
    free(auth);
    return err;
}

vt_err vt__gs_build_get(const char *bucket, const char *key, uint64_t off,
                        uint64_t len, const char *etag, vt_backend_req *out,
                        char *errbuf, size_t errlen)
{
    return vt__gs_build("GET", bucket, key, NULL, off, len, etag, out, errbuf,
                        errlen);
}

vt_err vt__gs_status_err(long status)
{
    /* S3's reading (backend.h), plus the 302 and 401 GCS answers */
    if (status == 302)
        return VT_EREDIRECT;
    if (status == 401)
        return VT_EACCESS;
    return vt__backend_status_err(status);
}

void vt__gs_describe(char *buf, size_t len, const char *bucket,
                     const char *key, const vt_http_resp *r, vt_err err)
{
    char *code = NULL, *msg = NULL;
    if (r && r->status > 0) {
        if (r->body) {
            code = vt__xml_tag((const char *)r->body, r->body_len, "Code");
            msg = vt__xml_tag((const char *)r->body, r->body_len, "Message");
        }
        snprintf(buf, len, "gs://%s/%s: HTTP %ld%s%s%s%s%s", bucket, key,
                 r->status, code ? " " : "", code ? code : "",
                 msg ? ": " : "", msg ? msg : "",
                 err == VT_ETRANSIENT ? " (transient server error, retries "
                                        "exhausted)"
                                      : "");
    } else {
        snprintf(buf, len, "gs://%s/%s: %s%s%s", bucket, key, vt_strerror(err),
                 r && r->error[0] ? ": " : "", r ? r->error : "");
    }
    free(code);
    free(msg);
}

/* ---- this thread's last failure --------------------------------------- */

struct gs_fail {
    int set;
    int again; /* the same failure as the name's last one (failmem.h) */
    vt_err err;
    long status;
    char bucket[256], key[1024];
    char transport[256], cause[160], message[1024], where[1300], url[1600];
};

static _Thread_local struct gs_fail t_fail;

/* first: the request answers for the name itself (an open's or a stat's:
 * a HEAD, or a GET from byte 0 not pinned to an ETag), whose failure GDAL
 * would keep in its cache of file properties: noted in failmem.h. */
static void note_failure(const char *bucket, const char *key, vt_err err,
                         const vt_http_resp *r, const char *url,
                         const char *msg, int first)
{
    struct gs_fail *f = &t_fail;
    f->again = 0;
    if (first && r) {
        char name[1300], *ep = NULL, *code = NULL;
        snprintf(name, sizeof(name), "%s/%s", bucket, key);
        ep = vt__gs_endpoint(name);
        if (r->body && r->body_len)
            code = vt__xml_tag((const char *)r->body, r->body_len, "Code");
        f->again = vt__failmem_note(name, ep, r->status, err, code);
        free(ep);
        free(code);
    }
    f->set = 1;
    f->err = err;
    f->status = r ? r->status : 0;
    snprintf(f->bucket, sizeof(f->bucket), "%s", bucket);
    snprintf(f->key, sizeof(f->key), "%s", key);
    snprintf(f->transport, sizeof(f->transport), "%s", r ? r->error : "");
    snprintf(f->cause, sizeof(f->cause), "%s", r ? r->cause : "");
    snprintf(f->message, sizeof(f->message), "%s", msg ? msg : "");
    snprintf(f->where, sizeof(f->where), "gs://%s/%s", bucket, key);
    snprintf(f->url, sizeof(f->url), "%s", url ? url : "");
}

int vt__gs_last_failure(const char *bucket, const char *key,
                        struct vt_gdal_fail *out)
{
    const struct gs_fail *f = &t_fail;
    if (!f->set || strcmp(f->bucket, bucket) || strcmp(f->key, key))
        return 0;
    memset(out, 0, sizeof(*out));
    out->err = f->err;
    out->status = f->status;
    /* No body: stock 3.6's /vsigs/ does not read GCS's XML error (its
     * VSIGSHandleHelper has no CanRestartOnError), so its words are the
     * status's, "HTTP response code: 403" (measured in test_backend_gs.py);
     * describe() keeps GCS's code for vsitune's own lines. */
    out->body = NULL;
    out->body_len = 0;
    out->transport = f->transport[0] ? f->transport : NULL;
    out->cause = f->cause[0] ? f->cause : NULL;
    out->message = f->err == VT_ECREDS ? f->message : NULL;
    out->where = f->where;
    out->url = f->url[0] ? f->url : NULL;
    out->again = f->again;
    return 1;
}

vt_err vt__gs_perform(const char *method, const char *bucket,
                      const char *key, const char *query, uint64_t off,
                      uint64_t len, const char *etag, vt_http_resp *resp,
                      char *errbuf, size_t errlen)
{
    vt_backend_req rq;
    vt_err err;

    memset(resp, 0, sizeof(*resp));
    err = vt__gs_build(method, bucket ? bucket : "", key ? key : "", query,
                       off, len, etag, &rq, errbuf, errlen);
    if (err) {
        note_failure(bucket ? bucket : "", key ? key : "", err, NULL, NULL,
                     errbuf, 0);
        return err;
    }
    err = vt__engine_perform(&rq.req, resp);
    if (err == VT_OK)
        err = vt__gs_status_err(resp->status);
    if (err != VT_OK) {
        int first = !query && !etag && *key &&
                    (!strcmp(method, "HEAD") || off == 0);
        vt__gs_describe(errbuf, errlen, bucket, key, resp, err);
        note_failure(bucket, key, err, resp, rq.url, NULL, first);
    } else {
        if (t_fail.set && !strcmp(t_fail.bucket, bucket) &&
            !strcmp(t_fail.key, key))
            t_fail.set = 0;
        if (!query && *key) {
            char name[1300];
            snprintf(name, sizeof(name), "%s/%s", bucket, key);
            vt__failmem_ok(name);
        }
    }
    vt__breq_clear(&rq);
    return err;
}
