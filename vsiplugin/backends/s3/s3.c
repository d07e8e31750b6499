/* s3.c: signed S3 GET requests, redirects and error bodies (s3.h).
 *
 * Why: this file turns a bucket, a key, a range and the options for their
 * path into the exact URL and headers sent, signed over the headers GDAL
 * 3.6 signs (host, x-amz-content-sha256, x-amz-date, x-amz-security-token,
 * x-amz-request-payer, and the user's own x-amz-* headers: nothing is
 * gained by signing Range or If-Match, and the same set makes a signature
 * comparable with GDAL's under AWS_TIMESTAMP), and follows S3's redirects as GDAL's CanRestartOnError
 * does. Where requests go is s3_route.c's business; the user's extra
 * headers backends/userhdr.c's. No lock of its own. */
#include "backends/s3/s3.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cpl_conv.h>
#include <cpl_error.h>

#include "base/config.h"
#include "auth/creds.h"
#include "compat/gdal_error.h"
#include "backends/bfail.h"
#include "backends/breq.h"
#include "backends/s3/s3_int.h"
#include "backends/userhdr.h"
#include "auth/sigv4.h"
#include "base/xmlscan.h"

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define S3_OWN_HEADERS 9           /* Host ... Authorization, and the NULL */
#define MAX_HOPS 4                 /* a request and up to 3 redirects */

/* ---- addressing ------------------------------------------------------- */

struct s3_addr {
    char url[4096];
    char host[VT_S3_HOST_CAP + 256];
    char path[4096]; /* path as sent and signed */
};

static vt_err s3_address(const char *bucket, const char *key,
                         const struct vt_s3_route *rt, struct s3_addr *a,
                         char *errbuf, size_t errlen)
{
    vt_err err = VT_OK;
    char *enc_key = vt__uri_encode(key, 1), *enc_bucket = NULL;
    int n1, n2;

    if (!enc_key)
        return VT_ENOMEM;
    if (rt->virt) {
        n1 = snprintf(a->host, sizeof(a->host), "%s.%s", bucket, rt->endpoint);
        n2 = snprintf(a->path, sizeof(a->path), "/%s", enc_key);
    } else {
        enc_bucket = vt__uri_encode(bucket, 0);
        if (!enc_bucket) {
            err = VT_ENOMEM;
            goto out;
        }
        n1 = snprintf(a->host, sizeof(a->host), "%s", rt->endpoint);
        n2 = snprintf(a->path, sizeof(a->path), "/%s/%s", enc_bucket, enc_key);
    }
    if (n1 < 0 || (size_t)n1 >= sizeof(a->host) || n2 < 0 ||
        (size_t)n2 >= sizeof(a->path) ||
        (size_t)snprintf(a->url, sizeof(a->url), "%s://%s%s",
                         rt->https ? "https" : "http", a->host,
                         a->path) >= sizeof(a->url)) {
        snprintf(errbuf, errlen, "s3://%s/%s: URL too long", bucket, key);
        err = VT_EINVAL;
    }
out:
    free(enc_key);
    free(enc_bucket);
    return err;
}

/* ---- request building ------------------------------------------------- */

void vt__s3_request_clear(vt_s3_request *r)
{
    vt__breq_clear(r);
}

/* A header value must not smuggle a line break into the request. */
static int clean_value(const char *v)
{
    for (; *v; v++)
        if (*v == '\r' || *v == '\n')
            return 0;
    return 1;
}

/* "YYYYMMDDTHHMMSSZ": AWS_TIMESTAMP for path when it is one (GDAL's test
 * hook, so signatures can be compared with GDAL's), else now. */
static void amz_date_for(const char *path, char date[17])
{
    char *ts = vt__cfg_dup(path, "AWS_TIMESTAMP");
    int ok = ts && strlen(ts) == 16 && ts[8] == 'T' && ts[15] == 'Z';
    for (int i = 0; ok && i < 15; i++)
        if (i != 8 && !isdigit((unsigned char)ts[i]))
            ok = 0;
    if (ok)
        memcpy(date, ts, 17);
    else
        vt__amz_date((long long)time(NULL), date);
    if (ts && !ok)
        CPLDebug("VSITUNE", "AWS_TIMESTAMP=%s is not YYYYMMDDTHHMMSSZ: "
                 "signing with the current time", ts);
    free(ts);
}

static char *path_of(const char *bucket, const char *key)
{
    size_t n = strlen(bucket) + strlen(key) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", bucket, key);
    return p;
}

/* Build for an explicit route (vt__s3_get retries with the route a
 * redirect gave). method: "GET" or "HEAD" (signed as such); query: the
 * canonical query string (sorted, encoded), or NULL. */
static vt_err build_in(const char *method, const char *bucket,
                       const char *key, const char *query, uint64_t off,
                       uint64_t len, const char *if_match,
                       const struct vt_s3_route *rt, vt_s3_request *out,
                       char *errbuf, size_t errlen)
{
    vt_err err;
    vt_creds cr = {0};
    struct s3_addr *a = NULL;
    vt_sigv4_output sig = {0};
    size_t n = 0, nuser = 0;
    char date[17], range[64], *path = NULL, *payer = NULL, **user = NULL;
    const char **to_sign = NULL;
    size_t ns = 0;

    memset(out, 0, sizeof(*out));
    if (errlen)
        errbuf[0] = '\0';
    if (!bucket || !*bucket || !key || (if_match && !clean_value(if_match)) ||
        (len > 0 && off > UINT64_MAX - len)) {
        snprintf(errbuf, errlen, "s3://%s/%s: invalid request arguments",
                 bucket ? bucket : "", key ? key : "");
        return VT_EINVAL;
    }
    path = path_of(bucket, key);
    a = malloc(sizeof(*a));
    if (!path || !a) {
        err = VT_ENOMEM;
        goto out;
    }
    err = s3_address(bucket, key, rt, a, errbuf, errlen);
    if (err)
        goto out;
    err = vt__creds_get(path, &cr, errbuf, errlen);
    if (err)
        goto out;
    payer = vt__cfg_dup(path, "AWS_REQUEST_PAYER");
    if (payer && !clean_value(payer)) {
        snprintf(errbuf, errlen, "AWS_REQUEST_PAYER holds a line break");
        err = VT_EINVAL;
        goto out;
    }
    user = vt__user_headers(path);
    if (user)
        while (user[nuser])
            nuser++;
    out->headers = calloc(nuser + S3_OWN_HEADERS + 1, sizeof(char *));
    to_sign = calloc(nuser + S3_OWN_HEADERS + 1, sizeof(char *));
    if (!out->headers || !to_sign) {
        err = VT_ENOMEM;
        goto out;
    }
    /* The user's headers first, as GDAL puts them; like GDAL, their x-amz-*
     * ones (and Content-MD5) are signed (S3 refuses unsigned x-amz-*). */
    for (size_t i = 0; i < nuser; i++) {
        out->headers[n++] = user[i];
        if (!strncasecmp(user[i], "x-amz-", 6) ||
            !strncasecmp(user[i], "content-md5:", 12))
            to_sign[ns++] = user[i];
        user[i] = NULL;
    }
    amz_date_for(path, date);
    err = vt__breq_add(out, &n, "Host", a->host);
    if (!err)
        to_sign[ns++] = out->headers[n - 1];
    if (!err && len > 0) {
        snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64, off,
                 off + len - 1);
        err = vt__breq_add(out, &n, "Range", range);
    }
    if (!err && if_match)
        err = vt__breq_add(out, &n, "If-Match", if_match);
    if (!err && payer) {
        err = vt__breq_add(out, &n, "x-amz-request-payer", payer);
        if (!err)
            to_sign[ns++] = out->headers[n - 1];
    }
    if (!err && !cr.anonymous) {
        err = vt__breq_add(out, &n, "x-amz-date", date);
        if (!err) {
            to_sign[ns++] = out->headers[n - 1];
            err = vt__breq_add(out, &n, "x-amz-content-sha256",
                               EMPTY_SHA256);
        }
        if (!err)
            to_sign[ns++] = out->headers[n - 1];
        if (!err && cr.session_token && *cr.session_token) {
            err = vt__breq_add(out, &n, "X-Amz-Security-Token",
                               cr.session_token);
            if (!err)
                to_sign[ns++] = out->headers[n - 1];
        }
        if (err)
            goto out;
        to_sign[ns] = NULL;
        vt_sigv4_input in = {
            .method = method,
            .path = a->path,
            .query = query,
            .headers = to_sign,
            .payload_hash = EMPTY_SHA256,
            .amz_date = date,
            .region = rt->region,
            .service = "s3",
            .access_key = cr.access_key,
            .secret_key = cr.secret_key,
            .normalize_path = 0,
        };
        err = vt__sigv4_sign(&in, &sig);
        if (err) {
            snprintf(errbuf, errlen, "s3://%s/%s: cannot sign the request (%s)",
                     bucket, key, vt_strerror(err));
            goto out;
        }
        err = vt__breq_add(out, &n, "Authorization", sig.authorization);
    }
    if (err)
        goto out;
    if (query && *query) {
        size_t ul = strlen(a->url) + strlen(query) + 2;
        out->url = malloc(ul);
        if (out->url)
            snprintf(out->url, ul, "%s?%s", a->url, query);
    } else {
        out->url = strdup(a->url);
    }
    if (!out->url) {
        err = VT_ENOMEM;
        goto out;
    }
    /* The engine's fields: range or error-body room, GDAL's retry options,
     * and the CA file stock GDAL verifies this request's server with: a GET
     * or HEAD stands for a /vsis3/ handle's read, one with a query for
     * GDAL's listing (config.h, "CA bundle"). */
    vt__breq_finish(out, method, len, path, query != NULL);
    out->req.answer_transient = vt__s3_answer_transient; /* S3's words */
    out->req.counter = VT_S3_NAME;
out:
    if (err) {
        vt__s3_request_clear(out);
        if (errlen && !errbuf[0])
            snprintf(errbuf, errlen, "s3://%s/%s: %s", bucket, key,
                     vt_strerror(err));
    }
    vt__user_headers_free(user);
    free(to_sign);
    vt__sigv4_output_clear(&sig);
    vt__creds_clear(&cr);
    free(payer);
    free(path);
    free(a);
    return err;
}

/* Entry of both public calls: errbuf cleared, arguments checked, the route
 * bucket/key takes now. */
static vt_err begin(const char *bucket, const char *key,
                    struct vt_s3_route *rt, char *errbuf, size_t errlen)
{
    if (errlen)
        errbuf[0] = '\0';
    if (!bucket || !key)
        return VT_EINVAL;
    return vt__s3_route(bucket, key, rt, errbuf, errlen);
}

vt_err vt__s3_build_get(const char *bucket, const char *key, uint64_t off,
                        uint64_t len, const char *if_match, vt_s3_request *out,
                        char *errbuf, size_t errlen)
{
    struct vt_s3_route rt;
    vt_err err;

    memset(out, 0, sizeof(*out));
    err = begin(bucket, key, &rt, errbuf, errlen);
    if (err)
        return err;
    return build_in("GET", bucket, key, NULL, off, len, if_match, &rt, out,
                    errbuf, errlen);
}

/* ---- answers ---------------------------------------------------------- */

void vt__s3_parse_error(const char *body, size_t len, char **code,
                        char **message)
{
    *code = body ? vt__xml_tag(body, len, "Code") : NULL;
    *message = body ? vt__xml_tag(body, len, "Message") : NULL;
}

vt_err vt__s3_status_err(long status)
{
    return vt__backend_status_err(status);
}

/* REGION of an S3 host "s3.REGION.amazonaws.com", "s3-REGION.amazonaws.com"
 * or either with "bucket." in front, into buf. 0 found, -1 not. */
static int region_of_host(const char *host, char *buf, size_t len)
{
    const char *p = strstr(host, "s3.");
    if (!p)
        p = strstr(host, "s3-");
    const char *q = p ? strstr(p + 3, ".amazonaws.com") : NULL;
    if (!q || q <= p + 3 || (size_t)(q - p - 3) >= len)
        return -1;
    snprintf(buf, len, "%.*s", (int)(q - p - 3), p + 3);
    return vt__s3_valid_region(buf) ? 0 : -1;
}

/* A new route for an S3 redirect answer in r (GDAL's CanRestartOnError,
 * plus x-amz-bucket-region where S3 sends it). 1 when *next differs from
 * cur and the request should be sent again; *temporary for a
 * TemporaryRedirect. */
static int follow_redirect(const char *bucket, const struct vt_s3_route *cur,
                           const vt_http_resp *r, struct vt_s3_route *next,
                           int *temporary)
{
    const char *body = (const char *)r->body;
    size_t blen = r->body_len;
    char *code = body ? vt__xml_tag(body, blen, "Code") : NULL;
    char *reg = NULL, *ep = NULL;
    size_t bl = strlen(bucket);
    int changed = 0;

    *next = *cur;
    *temporary = 0;
    if (code && !strcasecmp(code, "AuthorizationHeaderMalformed")) {
        reg = vt__xml_tag(body, blen, "Region");
        if (!reg && r->bucket_region)
            reg = strdup(r->bucket_region);
        if (reg && vt__s3_valid_region(reg))
            snprintf(next->region, sizeof(next->region), "%s", reg);
    } else if (code && (!strcasecmp(code, "PermanentRedirect") ||
                        !strcasecmp(code, "TemporaryRedirect"))) {
        *temporary = !strcasecmp(code, "TemporaryRedirect");
        ep = vt__xml_tag(body, blen, "Endpoint");
        if (ep && (strlen(ep) >= VT_S3_HOST_CAP ||
                   strpbrk(ep, "/?# \t\r\n")))
            goto out; /* not a host[:port]: do not follow */
        if (ep && cur->virt) {
            if (strncmp(ep, bucket, bl) != 0 || ep[bl] != '.')
                goto out; /* GDAL: malformed answer */
            snprintf(next->endpoint, sizeof(next->endpoint), "%s", ep + bl + 1);
        } else if (ep && !strncmp(ep, bucket, bl) && ep[bl] == '.') {
            if (strchr(bucket, '.') && r->bucket_region &&
                vt__s3_valid_region(r->bucket_region)) {
                /* A dotted bucket cannot be a subdomain under TLS: the
                 * regional endpoint, path style (GDAL #7154). */
                snprintf(next->endpoint, sizeof(next->endpoint),
                         "s3.%s.amazonaws.com", r->bucket_region);
            } else {
                next->virt = 1;
                snprintf(next->endpoint, sizeof(next->endpoint), "%s",
                         ep + bl + 1);
            }
        } else if (ep) {
            snprintf(next->endpoint, sizeof(next->endpoint), "%s", ep);
        }
        /* The region, where S3 says it: saves the 400 that GDAL then gets
         * for a request signed in the old one. */
        if (r->bucket_region && vt__s3_valid_region(r->bucket_region))
            snprintf(next->region, sizeof(next->region), "%s",
                     r->bucket_region);
        else if (ep)
            region_of_host(ep, next->region, sizeof(next->region));
        if (!ep && next->region[0] && strcmp(next->region, cur->region) &&
            !cur->endpoint_given)
            snprintf(next->endpoint, sizeof(next->endpoint),
                     strcmp(next->region, "us-east-1") ? "s3.%s.amazonaws.com"
                                                      : "s3.amazonaws.com",
                     next->region);
    } else if (r->bucket_region && vt__s3_valid_region(r->bucket_region)) {
        /* No XML to read (or another code) but S3 named the region. */
        *temporary = r->status == 307;
        snprintf(next->region, sizeof(next->region), "%s", r->bucket_region);
        if (!cur->endpoint_given)
            snprintf(next->endpoint, sizeof(next->endpoint),
                     strcmp(next->region, "us-east-1") ? "s3.%s.amazonaws.com"
                                                      : "s3.amazonaws.com",
                     next->region);
    }
    changed = strcmp(next->region, cur->region) != 0 ||
              strcmp(next->endpoint, cur->endpoint) != 0 ||
              next->virt != cur->virt;
out:
    free(code);
    free(reg);
    free(ep);
    return changed;
}

void vt__s3_describe(char *buf, size_t len, const char *bucket,
                     const char *key, const vt_http_resp *r, vt_err err)
{
    char *code = NULL, *msg = NULL;
    const char *why = r->error[0] ? r->error : "";

    if (r->status >= 300 && r->body && r->body_len > 0)
        vt__s3_parse_error((const char *)r->body, r->body_len, &code, &msg);
    if (r->status <= 0) {
        snprintf(buf, len, "s3://%s/%s: %s%s%s", bucket, key,
                 r->cause[0] ? r->cause : vt_strerror(err), why[0] ? ": " : "",
                 why);
    } else if (r->status < 300) {
        /* An answer that looked like success but was not usable: say exactly
         * what was wrong with it (the engine's or the caller's words). */
        snprintf(buf, len, "s3://%s/%s: HTTP %ld: %s (%s)", bucket, key,
                 r->status, why[0] ? why : "unusable answer", vt_strerror(err));
    } else {
        snprintf(buf, len, "s3://%s/%s: HTTP %ld%s%s%s%s%s%s%s", bucket, key,
                 r->status, code ? " " : "", code ? code : "",
                 msg ? ": " : "", msg ? msg : "",
                 vt__err_is_transient(err) ? " (" : "",
                 vt__err_is_transient(err) ? vt_strerror(err) : "",
                 vt__err_is_transient(err) ? ")" : "");
    }
    free(code);
    free(msg);
}

/* ---- the last failure, for GDAL's report ------------------------------- */

/* first: the request answers for the name itself (an open's or a stat's:
 * a HEAD, or a GET from byte 0 not pinned to an ETag), whose failure GDAL
 * would keep in its cache; its failure is noted (vt__s3_fail_note). */
static void fail_record(const char *bucket, const char *key, vt_err err,
                        const vt_http_resp *r, const char *url,
                        const char *message, int first)
{
    int again = 0;
    if (first) {
        char *code = r && r->body && r->body_len
                         ? vt__xml_tag((const char *)r->body, r->body_len, "Code")
                         : NULL;
        again = vt__s3_fail_note(bucket, key, r ? r->status : 0, err, code);
        free(code);
    }
    vt__bfail_note("s3://", bucket, key, err, r, url, message, again);
}

int vt__s3_last_failure(const char *bucket, const char *key,
                        struct vt_gdal_fail *out)
{
    return vt__bfail_get("s3://", bucket, key, out);
}

/* Returns VT_OK for 200/206; for any other answer vt__s3_status_err(status)
 * with errbuf from vt__s3_describe; for a transport failure the engine's
 * error with its words. *resp always holds the last answer (status, body)
 * and is the caller's to clear. Blocks the calling thread (any thread);
 * s3_route.c's lock is taken briefly. */
static vt_err s3_perform(const char *method, const char *bucket,
                         const char *key, const char *query, uint64_t off,
                         uint64_t len, const char *if_match, size_t max_body,
                         vt_http_resp *resp, char *errbuf, size_t errlen)
{
    vt_err err = VT_OK;
    vt_s3_request rq = {0};
    struct vt_s3_route rt, next;
    char url[4096] = "";

    /* the name's own first answer (see fail_record) */
    int first = !query && *key &&
                (!strcmp(method, "HEAD") || (off == 0 && !if_match));

    memset(resp, 0, sizeof(*resp));
    vt__bfail_forget();
    err = begin(bucket, key, &rt, errbuf, errlen);
    if (err)
        return err;
    for (int hop = 0; hop < MAX_HOPS; hop++) {
        err = build_in(method, bucket, key, query, off, len, if_match, &rt,
                       &rq, errbuf, errlen);
        if (err) {
            fail_record(bucket, key, err, NULL, NULL, errbuf, 0);
            return err;
        }
        if (max_body)
            rq.req.max_body = max_body;
        snprintf(url, sizeof(url), "%s", rq.url);
        err = vt__engine_perform(&rq.req, resp);
        vt__s3_request_clear(&rq);
        if (err) {
            vt__s3_describe(errbuf, errlen, bucket, key, resp, err);
            fail_record(bucket, key, err, resp, url, NULL, first);
            return err;
        }
        long st = resp->status;
        int temporary = 0;
        if (hop + 1 < MAX_HOPS && (st == 301 || st == 307 || st == 400) &&
            follow_redirect(bucket, &rt, resp, &next, &temporary)) {
            CPLDebug("VSITUNE", "s3://%s/%s: HTTP %ld: now %s://%s%s%s in %s%s",
                     bucket, key, st, next.https ? "https" : "http",
                     next.virt ? bucket : "", next.virt ? "." : "",
                     next.endpoint, next.region,
                     temporary ? " (temporary)" : "");
            vt__s3_route_remember(bucket, key, &next, temporary);
            rt = next;
            vt__http_resp_clear(resp);
            continue;
        }
        break;
    }
    err = vt__s3_status_err(resp->status);
    if (err) {
        vt__s3_describe(errbuf, errlen, bucket, key, resp, err);
        fail_record(bucket, key, err, resp, url, NULL, first);
    } else if (!query && *key) {
        vt__s3_fail_ok(bucket, key);
    }
    return err;
}

vt_err vt__s3_get(const char *bucket, const char *key, uint64_t off,
                  uint64_t len, const char *if_match, vt_http_resp *resp,
                  char *errbuf, size_t errlen)
{
    return s3_perform("GET", bucket, key, NULL, off, len, if_match, 0, resp,
                      errbuf, errlen);
}

vt_err vt__s3_head(const char *bucket, const char *key, vt_http_resp *resp,
                   char *errbuf, size_t errlen)
{
    /* A HEAD has no body: redirects are followed on x-amz-bucket-region. */
    return s3_perform("HEAD", bucket, key, NULL, 0, 0, NULL, 0, resp, errbuf,
                      errlen);
}

vt_err vt__s3_list(const char *bucket, const char *prefix, int max_keys,
                   vt_http_resp *resp, char *errbuf, size_t errlen)
{
    /* ListObjects (v1, as GDAL lists): one page, keys under prefix, with
     * "directories" folded at the next '/'. Parameters sorted by name, as
     * SigV4's canonical query wants them. */
    char *enc = vt__uri_encode(prefix, 0);
    char *query = NULL;
    vt_err err;
    size_t ql;

    memset(resp, 0, sizeof(*resp));
    if (!enc)
        return VT_ENOMEM;
    ql = strlen(enc) + 64;
    query = malloc(ql);
    if (!query) {
        free(enc);
        return VT_ENOMEM;
    }
    snprintf(query, ql, "delimiter=%%2F&max-keys=%d&prefix=%s",
             max_keys > 0 && max_keys <= 1000 ? max_keys : 1000, enc);
    err = s3_perform("GET", bucket, "", query, 0, 0, NULL, 8u << 20, resp,
                     errbuf, errlen);
    free(enc);
    free(query);
    return err;
}
