/* curl_url.c: a /vsicurl/ name read as GDAL 3.6 reads it, and how a URL
 * may be shown (curl_int.h).
 *
 * Why: the name is the object's identity (a presigned URL's or a SAS
 * token's query string included), and GDAL's "/vsicurl?url=...&opt=..."
 * syntax carries per-name options that decide the request. Reading them
 * exactly as VSICurlGetURLFromFilename does (cpl_vsil_curl.cpp, 3.6.2)
 * keeps the request what stock sends. A URL's query often is a credential:
 * nothing here or in the callers logs one unredacted. Pure: no I/O, no
 * GDAL calls, no state. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backends/curl/curl_int.h"

void vt__curl_target_clear(struct vt_curl_target *t)
{
    if (!t)
        return;
    free(t->url);
    free(t->useragent);
    free(t->referer);
    free(t->cookie);
    free(t->unapplied);
    free(t->unknown);
    memset(t, 0, sizeof(*t));
    t->max_retry = -1;
    t->retry_delay = -1;
    t->use_head = -1;
}

static int is_http(const char *s)
{
    return !strncmp(s, "http://", 7) || !strncmp(s, "https://", 8);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* [s, e) URL-unescaped as GDAL's CPLES_URL does: "%XX" a byte, '+' a
 * space. malloc'd. */
static char *unescape(const char *s, const char *e)
{
    char *out = malloc((size_t)(e - s) + 1), *o = out;
    if (!out)
        return NULL;
    while (s < e) {
        if (*s == '%' && e - s >= 3 && hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
            *o++ = (char)(hexval(s[1]) * 16 + hexval(s[2]));
            s += 3;
        } else {
            *o++ = *s == '+' ? ' ' : *s;
            s++;
        }
    }
    *o = '\0';
    return out;
}

/* GDAL's CPLTestBool: anything but NO, FALSE, OFF and 0 is true. */
static int test_bool(const char *v)
{
    return !(!strcasecmp(v, "NO") || !strcasecmp(v, "FALSE") ||
             !strcasecmp(v, "OFF") || !strcmp(v, "0"));
}

static vt_err set_str(char **dst, const char *v)
{
    free(*dst);
    *dst = strdup(v);
    return *dst ? VT_OK : VT_ENOMEM;
}

/* Append name to a ','-joined list. */
static vt_err list_add(char **list, const char *name)
{
    size_t n = *list ? strlen(*list) + 1 : 0;
    char *l = realloc(*list, n + strlen(name) + 1);
    if (!l)
        return VT_ENOMEM;
    if (n)
        l[n - 1] = ',';
    strcpy(l + n, name);
    *list = l;
    return VT_OK;
}

/* The options GDAL passes on to CPLHTTPSetOptions and vsitune's engine
 * cannot apply to one request (proxies, TLS checks, speed limits, a
 * header file of the name's own). */
static const char *const unapplied_names[] = {
    "header_file", "unsafessl", "low_speed_time", "low_speed_limit",
    "proxy", "proxyauth", "proxyuserpwd", NULL};

/* GDAL 3.6's names that change nothing vsitune does (listing, PLScenes'
 * redirect rule, Planetary Computer signing): accepted silently, as GDAL
 * accepts them. */
static const char *const ignored_names[] = {
    "list_dir", "empty_dir", "use_redirect_url_if_no_query_string_params",
    "pc_url_signing", "pc_collection", NULL};

static int in_list(const char *const *l, const char *name)
{
    for (; *l; l++)
        if (!strcasecmp(*l, name))
            return 1;
    return 0;
}

/* One "name=value" (or "name:value") option into t. */
static vt_err take_option(struct vt_curl_target *t, const char *tok)
{
    const char *sep = strpbrk(tok, "=:");
    char name[64];
    const char *v;

    if (!sep || sep == tok || (size_t)(sep - tok) >= sizeof(name))
        return VT_OK; /* GDAL: no name/value pair, nothing happens */
    snprintf(name, sizeof(name), "%.*s", (int)(sep - tok), tok);
    v = sep + 1;
    while (*v == ' ')
        v++;
    if (!strcasecmp(name, "url"))
        return set_str(&t->url, v);
    if (!strcasecmp(name, "max_retry"))
        t->max_retry = atoi(v);
    else if (!strcasecmp(name, "retry_delay"))
        t->retry_delay = atof(v);
    else if (!strcasecmp(name, "use_head"))
        t->use_head = test_bool(v);
    else if (!strcasecmp(name, "timeout"))
        t->timeout_ms = (long)(atof(v) * 1000);
    else if (!strcasecmp(name, "connecttimeout"))
        t->connect_timeout_ms = (long)(atof(v) * 1000);
    else if (!strcasecmp(name, "useragent"))
        return set_str(&t->useragent, v);
    else if (!strcasecmp(name, "referer"))
        return set_str(&t->referer, v);
    else if (!strcasecmp(name, "cookie"))
        return set_str(&t->cookie, v);
    else if (in_list(unapplied_names, name))
        return t->unapplied ? VT_OK : set_str(&t->unapplied, name);
    else if (!in_list(ignored_names, name))
        return list_add(&t->unknown, name);
    return VT_OK;
}

vt_err vt__curl_parse_path(const char *path, struct vt_curl_target *t,
                           char *errbuf, size_t errlen)
{
    vt_err err = VT_OK;
    const char *p = path, *e;

    memset(t, 0, sizeof(*t));
    vt__curl_target_clear(t);
    if (errlen)
        errbuf[0] = '\0';
    if (!path)
        return VT_EINVAL;
    t->name = path;
    if (is_http(p)) {
        t->url = strdup(p);
        return t->url ? VT_OK : VT_ENOMEM;
    }
    if (!strncmp(p, "ftp://", 6) || !strncmp(p, "file://", 7)) {
        snprintf(errbuf, errlen, "vsicurl: only http and https URLs are "
                 "served by vsitune");
        return VT_EINVAL;
    }
    if (*p == '?')
        p++;
    while (!err && *p) {
        e = strchr(p, '&');
        if (!e)
            e = p + strlen(p);
        if (e > p) {
            char *tok = unescape(p, e);
            err = tok ? take_option(t, tok) : VT_ENOMEM;
            free(tok);
        }
        p = *e ? e + 1 : e;
    }
    if (!err && (!t->url || !t->url[0])) {
        snprintf(errbuf, errlen, "Missing url parameter");
        err = VT_EINVAL;
    } else if (!err && !is_http(t->url)) {
        snprintf(errbuf, errlen, "vsicurl: only http and https URLs are "
                 "served by vsitune");
        err = VT_EINVAL;
    }
    if (err) {
        char *unknown = t->unknown; /* kept: the caller warns of them */
        t->unknown = NULL;
        vt__curl_target_clear(t);
        t->unknown = unknown;
    }
    return err;
}

/* The authority of an http(s) URL: [s, e) after "scheme://", before the
 * path, query or fragment; user info skipped. 0, or -1 when empty. */
static int authority(const char *url, const char **s, const char **e,
                     size_t *scheme_len)
{
    const char *p = strstr(url, "://"), *at;
    if (!p || !is_http(url))
        return -1;
    *scheme_len = (size_t)(p - url);
    p += 3;
    *e = p + strcspn(p, "/?#");
    at = memchr(p, '@', (size_t)(*e - p));
    *s = at ? at + 1 : p;
    return *e > *s ? 0 : -1;
}

char *vt__curl_origin(const char *url)
{
    const char *s, *e;
    size_t sl, n;
    char *out;

    if (!url || authority(url, &s, &e, &sl) != 0)
        return NULL;
    n = sl + 3 + (size_t)(e - s) + 1;
    out = malloc(n);
    if (!out)
        return NULL;
    snprintf(out, n, "%.*s://%.*s", (int)sl, url, (int)(e - s), s);
    for (char *c = out; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    return out;
}

char *vt__curl_resolve(const char *base, const char *location)
{
    char *origin = NULL, *out = NULL;
    const char *q;
    size_t dir;

    if (!base || !location || !*location || strpbrk(location, "\r\n"))
        return NULL;
    if (!strncasecmp(location, "http://", 7) ||
        !strncasecmp(location, "https://", 8))
        return vt__curl_origin(location) ? strdup(location) : NULL;
    if (location[strcspn(location, ":/?#")] == ':')
        return NULL; /* another scheme */
    if (!(origin = vt__curl_origin(base)))
        return NULL;
    if (location[0] == '/' && location[1] == '/') /* scheme-relative */
        (void)!asprintf(&out, "%.*s%s", (int)strcspn(origin, ":") + 1,
                        origin, location);
    else if (location[0] == '/')
        (void)!asprintf(&out, "%s%s", origin, location);
    else { /* beside the base's last path segment, its query dropped */
        const char *auth = strstr(base, "://") + 3;
        q = base + strcspn(base, "?#");
        if (q > auth && memchr(auth, '/', (size_t)(q - auth))) {
            for (dir = (size_t)(q - base); base[dir - 1] != '/'; dir--)
                ;
            (void)!asprintf(&out, "%.*s%s", (int)dir, base, location);
        } else {
            (void)!asprintf(&out, "%s/%s", origin, location);
        }
    }
    free(origin);
    return out;
}

void vt__curl_redact(const char *url, char *out, size_t len)
{
    const char *s, *e, *p;
    size_t sl, o = 0;

    if (!len)
        return;
    out[0] = '\0';
    if (!url)
        return;
#define PUT(str, n)                                                          \
    do {                                                                     \
        size_t k_ = (n);                                                     \
        if (o + k_ >= len)                                                   \
            k_ = len - 1 - o;                                                \
        memcpy(out + o, (str), k_);                                          \
        o += k_;                                                             \
        out[o] = '\0';                                                       \
    } while (0)
    if (authority(url, &s, &e, &sl) == 0) {
        PUT(url, sl + 3);
        PUT(s, (size_t)(e - s));
        p = e;
    } else {
        p = url;
    }
    size_t pathlen = strcspn(p, "?#");
    PUT(p, pathlen);
    p += pathlen;
    if (*p == '?') {
        p++;
        PUT("?", 1);
        while (*p && *p != '#') {
            size_t n = strcspn(p, "&#");
            const char *eq = memchr(p, '=', n);
            PUT(p, eq ? (size_t)(eq - p) : n);
            if (eq)
                PUT("=***", 4);
            p += n;
            if (*p == '&') {
                PUT("&", 1);
                p++;
            }
        }
    }
    if (*p == '#')
        PUT("#***", 4);
#undef PUT
}

int vt__curl_range_ignored(uint64_t off, uint64_t len, const vt_http_resp *r)
{
    if (len == 0 || r->status != 200 || r->has_content_range)
        return 0;
    if (off != 0)
        return 1;
    return r->has_total && r->total_size / 10 >= len &&
           r->total_size > 10 * len;
}

/* The next blank-separated token of [*p, e) into tok (cut at cap), or 0 at
 * the end. A '#' at the start of a line skips the line. */
static int next_token(const char **p, const char *e, char *tok, size_t cap)
{
    const char *s = *p;
    size_t n = 0;

    for (;;) {
        while (s < e && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n'))
            s++;
        if (s < e && *s == '#' && (s == *p || s[-1] == '\n')) {
            while (s < e && *s != '\n')
                s++;
            continue;
        }
        break;
    }
    if (s >= e)
        return 0;
    while (s < e && !(*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')) {
        if (n + 1 < cap)
            tok[n++] = *s;
        s++;
    }
    tok[n] = '\0';
    *p = s;
    return 1;
}

int vt__curl_netrc_has(const char *text, size_t len, const char *host)
{
    const char *p = text, *e = text + len;
    char tok[256];

    while (next_token(&p, e, tok, sizeof tok)) {
        if (!strcmp(tok, "default"))
            return 1;
        if (!strcmp(tok, "machine")) {
            if (!next_token(&p, e, tok, sizeof tok))
                return 0;
            if (!strcasecmp(tok, host))
                return 1;
        } else if (!strcmp(tok, "macdef")) {
            /* its name, then lines up to an empty one */
            const char *blank = NULL;
            for (const char *q = p; q + 1 < e && !blank; q++)
                if (q[0] == '\n' && (q[1] == '\n' ||
                                     (q[1] == '\r' && q + 2 < e && q[2] == '\n')))
                    blank = q + 1;
            p = blank ? blank : e;
        }
    }
    return 0;
}

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *vt__curl_basic_auth(const char *userpwd)
{
    size_t n = strlen(userpwd), o = 6;
    char *out = malloc(6 + 4 * ((n + 2) / 3) + 1);

    if (!out)
        return NULL;
    memcpy(out, "Basic ", 6);
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned char)userpwd[i] << 16;
        if (i + 1 < n)
            v |= (unsigned char)userpwd[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)userpwd[i + 2];
        out[o++] = b64[(v >> 18) & 63];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? b64[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}
