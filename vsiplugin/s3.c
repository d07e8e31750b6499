/* s3.c: S3 addressing, signed GET requests, redirects and error bodies.
 *
 * Why: GDAL users already configure /vsis3/ with AWS_S3_ENDPOINT,
 * AWS_VIRTUAL_HOSTING, AWS_REGION, ... This file turns those options (read
 * with CPLGetConfigOption at call time, so --config works) plus a bucket and
 * key into the exact URL and signed headers sent, and maps S3's answers back
 * to vt_err. The one piece of mutable state is the region table: buckets
 * that answered with a region redirect, remembered process-wide under
 * region_lock (a leaf lock: nothing else is locked or called while held). */
#include "s3.h"

#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpl_conv.h>
#include <cpl_string.h>

#include "creds.h"
#include "forksafe.h"
#include "sigv4.h"
#include "xmlscan.h"

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define S3_MAX_HEADERS 12
#define REGION_TABLE_CAP 256   /* buckets remembered; oldest replaced first */
#define ERROR_BODY_MIN (64 * 1024) /* room for an XML error on a short range */

/* ---- region table ----------------------------------------------------- */

struct region_entry {
    char *bucket; /* malloc'd */
    char *region; /* malloc'd */
};

static pthread_mutex_t region_lock = PTHREAD_MUTEX_INITIALIZER;
static struct region_entry region_table[REGION_TABLE_CAP];
static size_t region_next; /* slot replaced next once the table is full */

/* Register region_lock with forksafe.c once (first use). */
static pthread_once_t region_once = PTHREAD_ONCE_INIT;

static void region_forksafe(void)
{
    vt__forksafe_register(&region_lock);
}

/* Remember bucket's region. Takes region_lock; copies both strings. */
static void region_remember(const char *bucket, const char *region)
{
    char *b = strdup(bucket), *r = strdup(region);
    if (!b || !r) {
        free(b);
        free(r);
        return;
    }
    pthread_once(&region_once, region_forksafe);
    pthread_mutex_lock(&region_lock);
    size_t slot = REGION_TABLE_CAP;
    for (size_t i = 0; i < REGION_TABLE_CAP; i++) {
        if (region_table[i].bucket && !strcmp(region_table[i].bucket, bucket)) {
            slot = i;
            break;
        }
    }
    if (slot == REGION_TABLE_CAP) {
        for (size_t i = 0; i < REGION_TABLE_CAP && slot == REGION_TABLE_CAP; i++)
            if (!region_table[i].bucket)
                slot = i;
        if (slot == REGION_TABLE_CAP) {
            slot = region_next;
            region_next = (region_next + 1) % REGION_TABLE_CAP;
        }
    }
    free(region_table[slot].bucket);
    free(region_table[slot].region);
    region_table[slot].bucket = b;
    region_table[slot].region = r;
    pthread_mutex_unlock(&region_lock);
}

/* Remembered region of bucket, malloc'd, or NULL. Takes region_lock. */
static char *region_lookup(const char *bucket)
{
    char *r = NULL;
    pthread_once(&region_once, region_forksafe);
    pthread_mutex_lock(&region_lock);
    for (size_t i = 0; i < REGION_TABLE_CAP; i++) {
        if (region_table[i].bucket && !strcmp(region_table[i].bucket, bucket)) {
            r = strdup(region_table[i].region);
            break;
        }
    }
    pthread_mutex_unlock(&region_lock);
    return r;
}

static const char *cfg(const char *name, const char *def)
{
    const char *v = CPLGetConfigOption(name, NULL);
    return (v && *v) ? v : def;
}

char *vt__s3_region_for(const char *bucket)
{
    char *r = bucket ? region_lookup(bucket) : NULL;
    if (r)
        return r;
    const char *o = cfg("AWS_REGION", cfg("AWS_DEFAULT_REGION", NULL));
    if (o)
        return strdup(o);
    r = vt__creds_profile_region();
    return r ? r : strdup("us-east-1");
}

/* A region name as S3 spells them: lowercase letters, digits, '-'. */
static int valid_region(const char *r)
{
    size_t n = r ? strlen(r) : 0;
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!islower((unsigned char)r[i]) && !isdigit((unsigned char)r[i]) &&
            r[i] != '-')
            return 0;
    return 1;
}

/* ---- addressing ------------------------------------------------------- */

vt_err vt__s3_split(const char *path, char **bucket, char **key)
{
    *bucket = NULL;
    *key = NULL;
    if (!path)
        return VT_EINVAL;
    while (*path == '/')
        path++;
    const char *slash = strchr(path, '/');
    size_t blen = slash ? (size_t)(slash - path) : strlen(path);
    if (blen == 0)
        return VT_EINVAL;
    *bucket = strndup(path, blen);
    *key = strdup(slash ? slash + 1 : "");
    if (!*bucket || !*key) {
        free(*bucket);
        free(*key);
        *bucket = *key = NULL;
        return VT_ENOMEM;
    }
    return VT_OK;
}

/* DNS-compatible for virtual hosting (and no dots: they break the TLS
 * wildcard certificate, which is why GDAL goes path style for them). */
static int dns_compatible(const char *b)
{
    size_t n = strlen(b);
    if (n < 3 || n > 63 || !isalnum((unsigned char)b[0]) ||
        !isalnum((unsigned char)b[n - 1]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!islower((unsigned char)b[i]) && !isdigit((unsigned char)b[i]) &&
            b[i] != '-')
            return 0;
    return 1;
}

/* An IP literal endpoint ("127.0.0.1:9000", "[::1]:9000") cannot take a
 * bucket as a subdomain: such endpoints are always addressed path style. */
static int ip_literal(const char *host)
{
    if (host[0] == '[')
        return 1;
    for (; *host && *host != ':' && *host != '/'; host++)
        if (!isdigit((unsigned char)*host) && *host != '.')
            return 0;
    return 1;
}

struct s3_addr {
    char url[4096];
    char host[512];
    char path[4096]; /* path as sent and signed */
};

/* Fill addr for bucket/key in region. Reads AWS_S3_ENDPOINT, AWS_HTTPS and
 * AWS_VIRTUAL_HOSTING now. */
static vt_err s3_address(const char *bucket, const char *key, const char *region,
                         struct s3_addr *a, char *errbuf, size_t errlen)
{
    vt_err err = VT_OK;
    char endpoint[512];
    char *enc_key = NULL;
    char given[512];
    const char *ep = given;
    /* Copy the option at once: the pointer lives only until the next
     * config change. */
    snprintf(given, sizeof(given), "%s", cfg("AWS_S3_ENDPOINT", ""));
    int https = CPLTestBool(cfg("AWS_HTTPS", "YES"));

    if (*ep) {
        if (!strncmp(ep, "http://", 7)) {
            ep += 7;
            https = 0;
        } else if (!strncmp(ep, "https://", 8)) {
            ep += 8;
            https = 1;
        }
        snprintf(endpoint, sizeof(endpoint), "%s", ep);
    } else if (strcmp(region, "us-east-1") != 0) {
        snprintf(endpoint, sizeof(endpoint), "s3.%s.amazonaws.com", region);
    } else {
        snprintf(endpoint, sizeof(endpoint), "s3.amazonaws.com");
    }
    size_t el = strlen(endpoint);
    while (el > 0 && endpoint[el - 1] == '/')
        endpoint[--el] = '\0';
    if (el == 0 || strpbrk(endpoint, "/?# \t\r\n")) {
        snprintf(errbuf, errlen, "AWS_S3_ENDPOINT '%s' is not a host[:port]",
                 given);
        return VT_EINVAL;
    }
    int virt = CPLTestBool(cfg("AWS_VIRTUAL_HOSTING", "TRUE")) &&
               dns_compatible(bucket) && !ip_literal(endpoint);

    enc_key = vt__uri_encode(key, 1);
    if (!enc_key) {
        err = VT_ENOMEM;
        goto out;
    }
    int n1, n2;
    if (virt) {
        n1 = snprintf(a->host, sizeof(a->host), "%s.%s", bucket, endpoint);
        n2 = snprintf(a->path, sizeof(a->path), "/%s", enc_key);
    } else {
        char *enc_bucket = vt__uri_encode(bucket, 0);
        if (!enc_bucket) {
            err = VT_ENOMEM;
            goto out;
        }
        n1 = snprintf(a->host, sizeof(a->host), "%s", endpoint);
        n2 = snprintf(a->path, sizeof(a->path), "/%s/%s", enc_bucket, enc_key);
        free(enc_bucket);
    }
    if (n1 < 0 || (size_t)n1 >= sizeof(a->host) || n2 < 0 ||
        (size_t)n2 >= sizeof(a->path) ||
        (size_t)snprintf(a->url, sizeof(a->url), "%s://%s%s",
                         https ? "https" : "http", a->host,
                         a->path) >= sizeof(a->url)) {
        snprintf(errbuf, errlen, "s3://%s/%s: URL too long", bucket, key);
        err = VT_EINVAL;
    }
out:
    free(enc_key);
    return err;
}

/* ---- request building ------------------------------------------------- */

void vt__s3_request_clear(vt_s3_request *r)
{
    if (!r)
        return;
    if (r->headers)
        for (char **h = r->headers; *h; h++)
            free(*h);
    free(r->headers);
    free(r->url);
    memset(r, 0, sizeof(*r));
}

/* Append a malloc'd "Name: value" line to the list (n counts lines). */
static vt_err add_header(char **list, size_t *n, const char *name,
                         const char *value)
{
    if (*n + 1 >= S3_MAX_HEADERS)
        return VT_EINVAL;
    size_t l = strlen(name) + strlen(value) + 3;
    char *h = malloc(l);
    if (!h)
        return VT_ENOMEM;
    snprintf(h, l, "%s: %s", name, value);
    list[(*n)++] = h;
    list[*n] = NULL;
    return VT_OK;
}

/* A header value must not smuggle a line break into the request. */
static int clean_value(const char *v)
{
    for (; *v; v++)
        if (*v == '\r' || *v == '\n')
            return 0;
    return 1;
}

/* Build for an explicit region (vt__s3_get uses the region it retries in).
 * method: "GET" or "HEAD" (signed as such). */
static vt_err build_in(const char *method, const char *bucket,
                       const char *key, uint64_t off,
                           uint64_t len, const char *if_match,
                           const char *region, vt_s3_request *out,
                           char *errbuf, size_t errlen)
{
    vt_err err;
    vt_creds cr = {0};
    struct s3_addr *a = NULL;
    vt_sigv4_output sig = {0};
    size_t n = 0;
    char date[17], range[64];

    memset(out, 0, sizeof(*out));
    if (errlen)
        errbuf[0] = '\0';
    if (region && !valid_region(region)) {
        snprintf(errbuf, errlen, "AWS_REGION '%s' is not a region name "
                 "(lowercase letters, digits and '-')", region);
        return VT_EINVAL;
    }
    if (!bucket || !*bucket || !key || !region ||
        (if_match && !clean_value(if_match)) ||
        (len > 0 && off > UINT64_MAX - len)) {
        snprintf(errbuf, errlen, "s3://%s/%s: invalid request arguments",
                 bucket ? bucket : "", key ? key : "");
        return VT_EINVAL;
    }
    a = malloc(sizeof(*a));
    out->headers = calloc(S3_MAX_HEADERS, sizeof(char *));
    if (!a || !out->headers) {
        err = VT_ENOMEM;
        goto out;
    }
    err = s3_address(bucket, key, region, a, errbuf, errlen);
    if (err)
        goto out;
    err = vt__creds_get(&cr, errbuf, errlen);
    if (err)
        goto out;

    vt__amz_date((long long)time(NULL), date);
    err = add_header(out->headers, &n, "Host", a->host);
    if (!err && len > 0) {
        snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64, off,
                 off + len - 1);
        err = add_header(out->headers, &n, "Range", range);
    }
    if (!err && if_match)
        err = add_header(out->headers, &n, "If-Match", if_match);
    const char *payer = CPLGetConfigOption("AWS_REQUEST_PAYER", NULL);
    if (!err && payer && *payer) {
        if (!clean_value(payer)) {
            snprintf(errbuf, errlen, "AWS_REQUEST_PAYER holds a line break");
            err = VT_EINVAL;
            goto out;
        }
        err = add_header(out->headers, &n, "x-amz-request-payer", payer);
    }
    if (!cr.anonymous) {
        if (!err)
            err = add_header(out->headers, &n, "x-amz-content-sha256", EMPTY_SHA256);
        if (!err)
            err = add_header(out->headers, &n, "x-amz-date", date);
        if (!err && cr.session_token && *cr.session_token)
            err = add_header(out->headers, &n, "x-amz-security-token",
                             cr.session_token);
        if (err)
            goto out;
        vt_sigv4_input in = {
            .method = method,
            .path = a->path,
            .query = NULL,
            .headers = (const char *const *)out->headers,
            .payload_hash = EMPTY_SHA256,
            .amz_date = date,
            .region = region,
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
        err = add_header(out->headers, &n, "Authorization", sig.authorization);
    }
    if (err)
        goto out;
    out->url = strdup(a->url);
    if (!out->url) {
        err = VT_ENOMEM;
        goto out;
    }
    out->req.method = method;
    out->req.url = out->url;
    out->req.headers = (const char *const *)out->headers;
    out->req.expect_len = len;
    /* Range GET: room for the range or an XML error body; whole object:
     * the engine's default bound. */
    out->req.max_body = len == 0 ? 0
                        : len > ERROR_BODY_MIN ? (size_t)len : ERROR_BODY_MIN;
    out->req.max_retries = -1;
    out->req.retry_delay = -1;
out:
    if (err) {
        vt__s3_request_clear(out);
        if (errlen && !errbuf[0])
            snprintf(errbuf, errlen, "s3://%s/%s: %s", bucket, key,
                     vt_strerror(err));
    }
    vt__sigv4_output_clear(&sig);
    vt__creds_clear(&cr);
    free(a);
    return err;
}

vt_err vt__s3_build_get(const char *bucket, const char *key, uint64_t off,
                        uint64_t len, const char *if_match, vt_s3_request *out,
                        char *errbuf, size_t errlen)
{
    char *region = vt__s3_region_for(bucket);
    vt_err err;
    if (!region) {
        memset(out, 0, sizeof(*out));
        return VT_ENOMEM;
    }
    err = build_in("GET", bucket, key, off, len, if_match, region, out, errbuf,
                       errlen);
    free(region);
    return err;
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
    switch (status) {
    case 200:
    case 206:
        return VT_OK;
    case 301:
    case 307:
        return VT_EREDIRECT;
    case 403:
        return VT_EACCESS;
    case 404:
        return VT_ENOTFOUND;
    case 412:
        return VT_ECHANGED;
    case 416:
        return VT_ERANGE;
    case 429:
        return VT_ETRANSIENT;
    default:
        if (status >= 500 && status <= 599)
            return VT_ETRANSIENT;
        return VT_EHTTP;
    }
}

/* Region named by a redirect: the x-amz-bucket-region header, else <Region>
 * in the error XML, else the region inside <Endpoint>
 * (bucket.s3.eu-west-1.amazonaws.com / s3-eu-west-1.amazonaws.com).
 * malloc'd or NULL. */
static char *redirect_region(const vt_http_resp *r)
{
    char *reg = NULL, *ep = NULL;
    if (r->bucket_region && valid_region(r->bucket_region))
        return strdup(r->bucket_region);
    if (!r->body)
        return NULL;
    reg = vt__xml_tag((const char *)r->body, r->body_len, "Region");
    if (reg && valid_region(reg))
        return reg;
    free(reg);
    reg = NULL;
    ep = vt__xml_tag((const char *)r->body, r->body_len, "Endpoint");
    if (ep) {
        const char *p = strstr(ep, "s3.");
        if (!p)
            p = strstr(ep, "s3-");
        const char *q = p ? strstr(p + 3, ".amazonaws.com") : NULL;
        if (q && q > p + 3) {
            reg = strndup(p + 3, (size_t)(q - p - 3));
            if (reg && !valid_region(reg)) {
                free(reg);
                reg = NULL;
            }
        }
    }
    free(ep);
    return reg;
}

void vt__s3_describe(char *buf, size_t len, const char *bucket,
                     const char *key, const vt_http_resp *r, vt_err err)
{
    char *code = NULL, *msg = NULL;
    const char *why = r->error[0] ? r->error : "";

    if (r->status >= 300 && r->body && r->body_len > 0)
        vt__s3_parse_error((const char *)r->body, r->body_len, &code, &msg);
    if (r->status <= 0) {
        snprintf(buf, len, "s3://%s/%s: %s%s%s", bucket, key, vt_strerror(err),
                 why[0] ? ": " : "", why);
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

/* Returns VT_OK for 200/206; for any other answer vt__s3_status_err(status)
 * with errbuf = "s3://bucket/key: HTTP <status> <Code>: <Message>"; for a
 * transport failure the engine's error with its words. *resp always holds
 * the last answer (status, body) and is the caller's to clear. Blocks the
 * calling thread (any thread); takes region_lock briefly after a redirect. */
static vt_err s3_perform(const char *method, const char *bucket,
                         const char *key, uint64_t off, uint64_t len,
                         const char *if_match, vt_http_resp *resp,
                         char *errbuf, size_t errlen)
{
    vt_err err = VT_OK;
    vt_s3_request rq = {0};
    char *region = vt__s3_region_for(bucket);

    memset(resp, 0, sizeof(*resp));
    if (errlen)
        errbuf[0] = '\0';
    if (!region)
        return VT_ENOMEM;
    for (int attempt = 0; attempt < 2; attempt++) {
        err = build_in(method, bucket, key, off, len, if_match, region, &rq, errbuf,
                           errlen);
        if (err)
            goto out;
        err = vt__engine_perform(&rq.req, resp);
        vt__s3_request_clear(&rq);
        if (err) {
            vt__s3_describe(errbuf, errlen, bucket, key, resp, err);
            goto out;
        }
        long st = resp->status;
        if (attempt == 0 && (st == 301 || st == 307 || st == 400)) {
            char *nr = redirect_region(resp);
            if (nr && strcmp(nr, region) != 0) {
                region_remember(bucket, nr);
                free(region);
                region = nr;
                vt__http_resp_clear(resp);
                continue;
            }
            free(nr);
        }
        break;
    }
    err = vt__s3_status_err(resp->status);
    if (err)
        vt__s3_describe(errbuf, errlen, bucket, key, resp, err);
out:
    free(region);
    return err;
}

vt_err vt__s3_get(const char *bucket, const char *key, uint64_t off,
                  uint64_t len, const char *if_match, vt_http_resp *resp,
                  char *errbuf, size_t errlen)
{
    return s3_perform("GET", bucket, key, off, len, if_match, resp, errbuf,
                      errlen);
}

vt_err vt__s3_head(const char *bucket, const char *key, vt_http_resp *resp,
                   char *errbuf, size_t errlen)
{
    return s3_perform("HEAD", bucket, key, 0, 0, NULL, resp, errbuf, errlen);
}
