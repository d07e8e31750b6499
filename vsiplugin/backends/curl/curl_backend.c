/* curl_backend.c: /vsicurl/ (http and https URLs) as a vt_backend
 * (backends/backend.h).
 *
 * Why: STAC APIs and tilers hand out https URLs, often presigned or with a
 * token in the query, that GDAL reads through /vsicurl/. This table lets
 * the read path serve them as it serves /vsis3/, with the request stock
 * GDAL 3.6 would send for the same ranged read (cpl_vsil_curl.cpp,
 * cpl_http.cpp's CPLHTTPSetOptions):
 *   - the name: what follows "/vsicurl/" (curl_url.c); the container is ""
 *     and the key the name itself, so a "?url=...&opt=..." name keeps its
 *     options, and the query string is part of the object's identity;
 *   - no HEAD ever (head is NULL): a first GET learns the size from its
 *     Content-Range, so GET-only presigned URLs and servers that refuse
 *     HEAD cost nothing extra;
 *   - headers: GDAL_HTTP_HEADER_FILE and GDAL_HTTP_HEADERS (userhdr.c's
 *     reader, GDAL's rule for every prefix), the name's useragent, referer
 *     and cookie, GDAL_HTTP_COOKIE, GDAL_HTTP_USERPWD as Basic (curl's
 *     default scheme; GDAL_HTTP_AUTH unset or BASIC), GDAL_HTTP_AUTH=BEARER
 *     with GDAL_HTTP_BEARER from GDAL 3.9 (where it exists), Range,
 *     If-Match; max_retry, retry_delay, timeout, connecttimeout into the
 *     engine's request;
 *   - GDAL's options read as the running GDAL reads them: for the name's
 *     path first from GDAL 3.7 (config.h vt__cfg_http_path), the engine's
 *     too (the request's opts_path);
 *   - what is left to GDAL (GDAL_HTTPS_PROXY, GDAL_HTTP_PROXYUSERPWD,
 *     GDAL_PROXY_AUTH, other HTTP auth schemes, netrc credentials for the
 *     host, the name's header_file, unsafessl, proxy*, speed limits):
 *     build_get refuses (VT_EINVAL naming the option), so such a name stays
 *     GDAL's rather than being read another way;
 *   - a server that ignores Range: GDAL's test and words ("Range
 *     downloading not supported by this server!");
 *   - redirects: followed as GDAL's libcurl follows them, a GET to each
 *     Location the engine reports (follow()); the memory of S3-like signed
 *     targets (curl_redirect.c) is consulted, and fed where a GET ended
 *     (README.md, "Redirects");
 *   - failures: the last one per thread, for GDAL's words (gdal_error.h):
 *     /vsicurl/ never reads an error body, so "HTTP response code: <n>".
 * A URL is shown in debug lines and descriptions only redacted
 * (vt__curl_redact). No lock of its own; curl_redirect.c's briefly. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cpl_conv.h>
#include <cpl_error.h>

#include "auth/credkey.h"
#include "backends/backend.h"
#include "backends/breq.h"
#include "backends/curl/curl_int.h"
#include "backends/userhdr.h"
#include "base/config.h"
#include "compat/gdal_error.h"
#include "compat/gdal_release.h"

#define OWN_HEADERS 8            /* Range, If-Match, UA, Referer, Cookie,
                                    Authorization, spare, NULL */
#define ERROR_BODY_MIN (64 * 1024)
#define RANGE_WORDS "Range downloading not supported by this server!"

/* ---- names ------------------------------------------------------------ */

static vt_err curl_split(const char *path, char **container, char **key)
{
    struct vt_curl_target t;
    char err[128];
    vt_err rc;

    *container = NULL;
    *key = NULL;
    rc = vt__curl_parse_path(path, &t, err, sizeof err);
    if (t.unknown) /* GDAL 3.6 warns of each, then goes on */
        for (char *n = strtok(t.unknown, ","); n; n = strtok(NULL, ","))
            CPLError(CE_Warning, CPLE_NotSupported, "Unsupported option: %s", n);
    if (rc == VT_EINVAL && !strcmp(err, "Missing url parameter"))
        CPLError(CE_Failure, CPLE_IllegalArg, "Missing url parameter");
    vt__curl_target_clear(&t);
    if (rc)
        return rc;
    *container = strdup("");
    *key = strdup(path);
    if (!*container || !*key) {
        free(*container);
        free(*key);
        *container = *key = NULL;
        return VT_ENOMEM;
    }
    return VT_OK;
}

static char *curl_endpoint(const char *path)
{
    struct vt_curl_target t;
    char err[128];
    char *o = NULL;

    if (vt__curl_parse_path(path, &t, err, sizeof err) == VT_OK)
        o = vt__curl_origin(t.url);
    vt__curl_target_clear(&t);
    return o;
}

/* ---- what decides access ---------------------------------------------- */

/* The options besides the URL that can turn a 200 into a 401/403: their
 * values, NUL-separated, in one malloc'd buffer (*n bytes); *any 1 when one
 * is set. The URL itself (its token, its signature) is in the key. */
static char *access_material(const struct vt_curl_target *t, size_t *n,
                             int *any)
{
    static const char *const names[] = {
        "GDAL_HTTP_USERPWD", "GDAL_HTTP_AUTH", "GDAL_HTTP_BEARER",
        "GDAL_HTTP_COOKIE", "GDAL_HTTP_HEADERS", "GDAL_HTTP_HEADER_FILE",
        NULL};
    const char *own[] = {t->cookie, t->referer, t->useragent};
    const size_t nnames = sizeof(names) / sizeof(names[0]) - 1;
    const char *hp = vt__cfg_http_path(t->name);
    char *buf = NULL;
    size_t len = 0;

    *any = 0;
    for (size_t i = 0; i < nnames + 3; i++) {
        char *v = i < nnames ? vt__cfg_dup(hp, names[i]) : NULL;
        const char *s = i < nnames ? v : own[i - nnames];
        size_t l = s ? strlen(s) : 0;
        char *nb = realloc(buf, len + l + 2);
        if (!nb) {
            free(v);
            free(buf);
            return NULL;
        }
        buf = nb;
        buf[len++] = s ? 'y' : 'n'; /* set to "" is not unset */
        memcpy(buf + len, s ? s : "", l + 1);
        len += l + 1;
        *any |= s != NULL;
        free(v);
    }
    *n = len;
    return buf;
}

/* "anonymous" when no option decides access, "*" when sharing across
 * credentials was asked for, else "signed:<HMAC keyed by every value>": a
 * name that proves holding the password, cookie or header without holding
 * it (auth/credkey.h). */
static int curl_access_identity(const char *path, char *out, size_t outlen)
{
    struct vt_curl_target t;
    char err[128], *m = NULL;
    size_t n = 0;
    int any = 0, rc = -1;

    if (vt__curl_parse_path(path, &t, err, sizeof err) != VT_OK)
        goto out;
    if (vt__cfg_bool(path, "VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS", 0)) {
        rc = (size_t)snprintf(out, outlen, "*") < outlen ? 0 : -1;
        goto out;
    }
    m = access_material(&t, &n, &any);
    if (!m)
        goto out;
    if (!any) {
        rc = (size_t)snprintf(out, outlen, "anonymous") < outlen ? 0 : -1;
        goto out;
    }
    /* every byte of m keys the HMAC: NULs become a separator it can hold */
    for (size_t i = 0; i + 1 < n; i++)
        if (!m[i])
            m[i] = '\x1f';
    rc = vt__ident_signer("vsicurl", m, NULL, "", out, outlen);
out:
    free(m);
    vt__curl_target_clear(&t);
    return rc;
}

/* ---- requests ---------------------------------------------------------- */

static void curl_req_clear(vt_backend_req *r)
{
    vt__breq_clear(r);
}


/* Build a GET of url for target t (url: t's own or a redirect's target). */
static vt_err build_for(const struct vt_curl_target *t, const char *url,
                        uint64_t off, uint64_t len, const char *etag,
                        vt_backend_req *out, char *errbuf, size_t errlen)
{
    vt_err err = VT_OK;
    char **user = NULL, *cookie = NULL, *auth = NULL, range[64];
    const char *unapplied = t->unapplied;
    /* GDAL's HTTP options for the name, as the running GDAL reads them */
    const char *hp = vt__cfg_http_path(t->name);
    size_t nuser = 0, n = 0;

    memset(out, 0, sizeof(*out));
    if ((etag && strpbrk(etag, "\r\n")) || (len > 0 && off > UINT64_MAX - len)) {
        snprintf(errbuf, errlen, "vsicurl: invalid request arguments");
        return VT_EINVAL;
    }
    if (!unapplied)
        unapplied = vt__curl_unapplied_option(hp);
    if (!unapplied && vt__curl_netrc_applies(hp, url))
        unapplied = "GDAL_HTTP_NETRC";
    if (!unapplied)
        auth = vt__curl_auth_value(hp, &unapplied);
    if (unapplied) {
        snprintf(errbuf, errlen, "vsicurl: %s is not applied by vsitune's "
                 "engine yet: the name stays GDAL's", unapplied);
        err = VT_EINVAL;
        goto out;
    }
    user = vt__user_headers(t->name);
    while (user && user[nuser])
        nuser++;
    out->headers = calloc(nuser + OWN_HEADERS, sizeof(char *));
    out->url = strdup(url);
    if (!out->headers || !out->url) {
        err = VT_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < nuser; i++) {
        out->headers[n++] = user[i];
        user[i] = NULL;
    }
    cookie = t->cookie ? strdup(t->cookie) : vt__cfg_dup(hp, "GDAL_HTTP_COOKIE");
    if (len > 0) {
        snprintf(range, sizeof range, "bytes=%" PRIu64 "-%" PRIu64, off,
                 off + len - 1);
        err = vt__breq_add(out, &n, "Range", range);
    }
    if (!err && etag)
        err = vt__breq_add(out, &n, "If-Match", etag);
    if (!err && t->useragent)
        err = vt__breq_add(out, &n, "User-Agent", t->useragent);
    if (!err && t->referer)
        err = vt__breq_add(out, &n, "Referer", t->referer);
    if (!err && cookie)
        err = vt__breq_add(out, &n, "Cookie", cookie);
    if (!err && auth)
        err = vt__breq_add(out, &n, "Authorization", auth);
    if (err) {
        if (err == VT_EINVAL)
            snprintf(errbuf, errlen, "vsicurl: a header value holds a line "
                     "break");
        goto out;
    }
    out->req.method = "GET";
    out->req.counter = vt__backend_curl.name;
    out->req.url = out->url;
    out->req.headers = (const char *const *)out->headers;
    out->req.expect_len = len;
    /* Room for the range, an error page, or a whole small object from a
     * server that ignores Range (GDAL accepts one up to ten times the
     * range, from byte 0: vt__curl_range_ignored). */
    out->req.max_body = len == 0 ? 0
                        : len > ERROR_BODY_MIN / 10 ? (size_t)len * 10 + 1
                                                    : ERROR_BODY_MIN;
    out->req.max_retries = t->max_retry;
    out->req.retry_delay = t->retry_delay;
    out->req.timeout_ms = t->timeout_ms;
    out->req.connect_timeout_ms = t->connect_timeout_ms;
    out->cainfo = vt__cfg_ca_bundle(t->name, VT_CA_READ);
    out->req.cainfo = out->cainfo;
    out->req.has_cainfo = 1;
    if (t->name && !(out->opts_path = strdup(t->name))) {
        err = VT_ENOMEM;
        goto out;
    }
    out->req.opts_path = out->opts_path;
out:
    if (err)
        curl_req_clear(out);
    vt__user_headers_free(user);
    free(cookie);
    free(auth);
    return err;
}

/* Where a GET of t goes now: a remembered redirect target while valid and
 * CPL_VSIL_CURL_USE_S3_REDIRECT is on, else t's URL. malloc'd. */
static char *current_url(const struct vt_curl_target *t)
{
    int expired = 0;
    char *to = NULL;

    if (vt__cfg_bool(NULL, "CPL_VSIL_CURL_USE_S3_REDIRECT", 1))
        to = vt__curl_redirect_lookup(t->url, time(NULL), &expired);
    if (expired)
        CPLDebug("VSITUNE", "vsicurl: redirect URL has expired: using the "
                 "original URL");
    return to ? to : strdup(t->url);
}

static vt_err curl_build_get(const char *container, const char *key,
                             uint64_t off, uint64_t len, const char *etag,
                             vt_backend_req *out, char *errbuf, size_t errlen)
{
    struct vt_curl_target t;
    char *url = NULL;
    vt_err err;

    (void)container;
    memset(out, 0, sizeof(*out));
    if (errlen)
        errbuf[0] = '\0';
    err = vt__curl_parse_path(key, &t, errbuf, errlen);
    if (!err) {
        url = current_url(&t);
        err = url ? build_for(&t, url, off, len, etag, out, errbuf, errlen)
                  : VT_ENOMEM;
    }
    free(url);
    vt__curl_target_clear(&t);
    return err;
}

/* ---- answers ------------------------------------------------------------ */

static vt_err curl_status_err(long status)
{
    /* An object store's reading of a status (backend.h), plus what web
     * servers answer and S3 does not: any redirect, 401, 410 Gone */
    if (status >= 300 && status < 400)
        return VT_EREDIRECT;
    if (status == 401)
        return VT_EACCESS;
    if (status == 410)
        return VT_ENOTFOUND;
    return vt__backend_status_err(status);
}

/* The URL of a /vsicurl/ name, redacted, into buf. */
static void shown_name(const char *key, char *buf, size_t len)
{
    struct vt_curl_target t;
    char err[128];

    if (vt__curl_parse_path(key, &t, err, sizeof err) == VT_OK)
        vt__curl_redact(t.url, buf, len);
    else
        snprintf(buf, len, "/vsicurl/ name without a URL");
    vt__curl_target_clear(&t);
}

static void curl_describe(char *buf, size_t len, const char *container,
                          const char *key, const vt_http_resp *r, vt_err err)
{
    char name[1024];
    const char *why = r->error[0] ? r->error : "";

    (void)container;
    shown_name(key, name, sizeof name);
    if (r->status <= 0)
        snprintf(buf, len, "%s: %s%s%s", name,
                 r->cause[0] ? r->cause : vt_strerror(err), why[0] ? ": " : "",
                 why);
    else if (r->status < 300)
        snprintf(buf, len, "%s: HTTP %ld: %s (%s)", name, r->status,
                 why[0] ? why : "unusable answer", vt_strerror(err));
    else if (r->status < 400)
        snprintf(buf, len, "%s: HTTP %ld: a redirect not followed (to "
                 "another host with access options, or too many)", name,
                 r->status);
    else
        snprintf(buf, len, "%s: HTTP %ld%s%s%s", name, r->status,
                 vt__err_is_transient(err) ? " (" : "",
                 vt__err_is_transient(err) ? vt_strerror(err) : "",
                 vt__err_is_transient(err) ? ")" : "");
}

/* ---- the last failure, for GDAL's report --------------------------------- */

static _Thread_local struct {
    int set;
    vt_err err;
    long status;
    char key[4096];
    char where[1100];   /* the URL, redacted */
    char url[4096];     /* as asked: GDAL's warning names it whole */
    char transport[256];
    char cause[160];
} t_fail;

/* 1 when stock GDAL opens t with a GET instead of a HEAD (cpl_vsil_curl.cpp,
 * GetFileSizeOrHeaders): an S3-like signed URL (valid for GET only), a
 * mapbox tiles URL, or HEAD turned off (the name's use_head, else
 * CPL_VSIL_CURL_USE_HEAD). */
static int stock_opens_with_get(const struct vt_curl_target *t)
{
    if (vt__curl_is_s3_signed(t->url) || strstr(t->url, ".tiles.mapbox.com/"))
        return 1;
    if (t->use_head >= 0)
        return !t->use_head;
    return !vt__cfg_bool(NULL, "CPL_VSIL_CURL_USE_HEAD", 1);
}

/* curl's words stock GDAL adds to "HTTP response code: <n>" when the
 * failure r answered such a GET: from 3.10 (measured on 3.10.3 and 3.13.3;
 * 3.6.2 adds none; 3.7 to 3.9 not measured) its write callback stops the
 * transfer at the first body bytes whatever the status, and curl says so
 * with the length of that first piece: the error page's, when it comes in
 * one piece, as a short one does. NULL when stock adds nothing. */
static const char *stock_get_words(const struct vt_curl_target *t,
                                   const vt_http_resp *r, char *buf,
                                   size_t len)
{
    if (!r || r->status < 400 || !r->body_len ||
        vt__gdal_release_running() < 3100000 || !stock_opens_with_get(t))
        return NULL;
    snprintf(buf, len, "Failure writing output to destination, passed %zu "
             "returned 0", r->body_len);
    return buf;
}

static void fail_record(const char *key, const char *url, vt_err err,
                        const vt_http_resp *r, const char *words)
{
    t_fail.set = 1;
    t_fail.err = err;
    t_fail.status = r ? r->status : 0;
    snprintf(t_fail.key, sizeof t_fail.key, "%s", key);
    shown_name(key, t_fail.where, sizeof t_fail.where);
    snprintf(t_fail.url, sizeof t_fail.url, "%s", url ? url : "");
    snprintf(t_fail.transport, sizeof t_fail.transport, "%s",
             words ? words : r ? r->error : "");
    snprintf(t_fail.cause, sizeof t_fail.cause, "%s", r ? r->cause : "");
}

static int curl_last_failure(const char *container, const char *key,
                             struct vt_gdal_fail *out)
{
    (void)container;
    memset(out, 0, sizeof(*out));
    if (!t_fail.set || strcmp(key, t_fail.key) != 0)
        return 0;
    out->err = t_fail.err;
    out->status = t_fail.status;
    /* /vsicurl/ never reads an error body: GDAL's words are the status */
    out->transport = t_fail.transport[0] ? t_fail.transport : NULL;
    out->cause = t_fail.cause[0] ? t_fail.cause : NULL;
    out->where = t_fail.where;
    out->url = t_fail.url[0] ? t_fail.url : NULL;
    return 1;
}

/* One GET, judged: VT_OK for a usable 200/206. */
static vt_err perform_once(const struct vt_curl_target *t, const char *key,
                           const char *url, uint64_t off, uint64_t len,
                           const char *etag, vt_http_resp *resp, char *errbuf,
                           size_t errlen)
{
    vt_backend_req rq;
    vt_err err = build_for(t, url, off, len, etag, &rq, errbuf, errlen);

    if (err) {
        fail_record(key, url, err, NULL, errbuf);
        return err;
    }
    err = vt__engine_perform(&rq.req, resp);
    curl_req_clear(&rq);
    if (vt__curl_range_ignored(off, len, resp)) {
        /* GDAL's test, on the headers: the body's size does not matter */
        err = VT_EPROTO;
        snprintf(resp->error, sizeof resp->error, "%s", RANGE_WORDS);
        curl_describe(errbuf, errlen, "", key, resp, err);
        fail_record(key, url, err, resp, RANGE_WORDS);
        return err;
    }
    if (!err)
        err = curl_status_err(resp->status);
    if (err) {
        char words[128];
        curl_describe(errbuf, errlen, "", key, resp, err);
        fail_record(key, url, err, resp,
                    stock_get_words(t, resp, words, sizeof words));
    }
    return err;
}

#define MAX_HOPS 10

/* The GET of url answered a redirect (resp): follow it as GDAL's libcurl
 * does (CURLOPT_FOLLOWLOCATION), a GET to each Location in turn, at most
 * MAX_HOPS. To another origin only when no option decides access (curl
 * keeps Authorization and Cookie to the first host; such a name stays
 * GDAL's). A 2xx at an S3-like signed target is remembered as GDAL does
 * (vt__curl_redirect_note). VT_EREDIRECT when not followed. */
static vt_err follow(const struct vt_curl_target *t, const char *key,
                     const char *url, uint64_t off, uint64_t len,
                     const char *etag, vt_http_resp *resp, char *errbuf,
                     size_t errlen)
{
    vt_err err = VT_EREDIRECT;
    char *at = strdup(url), *to = NULL, *o1 = vt__curl_origin(t->url), *o2;
    char *m = NULL;
    size_t n = 0;
    int any = 1;

    if ((m = access_material(t, &n, &any)) == NULL)
        any = 1;
    for (int hop = 0; at && err == VT_EREDIRECT && hop < MAX_HOPS; hop++) {
        if (!(to = vt__curl_resolve(at, resp->location)))
            break;
        o2 = vt__curl_origin(to);
        if (any && (!o1 || !o2 || strcmp(o1, o2) != 0)) {
            free(o2);
            break;
        }
        free(o2);
        CPLDebug("VSITUNE", "vsicurl: HTTP %ld: following the redirect",
                 resp->status);
        vt__http_resp_clear(resp);
        free(at);
        at = to;
        to = NULL;
        err = perform_once(t, key, at, off, len, etag, resp, errbuf, errlen);
    }
    if (!err) {
        t_fail.set = 0;
        if (errlen)
            errbuf[0] = '\0'; /* the redirect's words are no failure */
        (void)vt__curl_redirect_note(
            t->url, at, resp->date, time(NULL),
            vt__cfg_bool(NULL, "CPL_VSIL_CURL_USE_S3_REDIRECT", 1));
    }
    free(to);
    free(at);
    free(o1);
    free(m);
    return err;
}

static vt_err curl_get(const char *container, const char *key, uint64_t off,
                       uint64_t len, const char *etag, vt_http_resp *resp,
                       char *errbuf, size_t errlen)
{
    struct vt_curl_target t;
    char *url = NULL;
    vt_err err;

    (void)container;
    memset(resp, 0, sizeof(*resp));
    t_fail.set = 0;
    if (errlen)
        errbuf[0] = '\0';
    err = vt__curl_parse_path(key, &t, errbuf, errlen);
    if (err) {
        fail_record(key, NULL, err, NULL, errbuf);
        goto out;
    }
    url = current_url(&t);
    if (!url) {
        err = VT_ENOMEM;
        goto out;
    }
    err = perform_once(&t, key, url, off, len, etag, resp, errbuf, errlen);
    if (err == VT_EREDIRECT)
        err = follow(&t, key, url, off, len, etag, resp, errbuf, errlen);
    if (err == VT_EACCESS && strcmp(url, t.url) != 0) {
        /* A remembered target refused (expired early, clocks apart): back
         * to the original URL once, as GDAL goes back to the redirect. */
        CPLDebug("VSITUNE", "vsicurl: redirect URL refused (HTTP %ld): "
                 "using the original URL", resp->status);
        vt__curl_redirect_forget(t.url);
        vt__http_resp_clear(resp);
        err = perform_once(&t, key, t.url, off, len, etag, resp, errbuf,
                           errlen);
        if (err == VT_EREDIRECT)
            err = follow(&t, key, t.url, off, len, etag, resp, errbuf, errlen);
    }
out:
    free(url);
    vt__curl_target_clear(&t);
    return err;
}

/* GDAL's VSICurlClearCache forgets where redirects led; a partial clear
 * (VSICurlPartialClearCache) those of URLs under the prefix. No failure
 * is kept to forget: each one is a first (README.md). */
static void curl_forget(const char *prefix)
{
    vt__curl_redirect_forget(prefix);
}

const vt_backend vt__backend_curl = {
    .name = "curl",
    .gdal_prefix = "/vsicurl/",
    .scheme = "",
    .split = curl_split,
    .endpoint = curl_endpoint,
    .access_identity = curl_access_identity,
    .build_get = curl_build_get,
    .req_clear = curl_req_clear,
    .get = curl_get,
    .head = NULL,
    .list = NULL,
    .describe = curl_describe,
    .status_err = curl_status_err,
    .last_failure = curl_last_failure,
    .forget = curl_forget,
};
