/* creds_parse.c: pure parsers for the credentials providers (creds_parse.h).
 *
 * Kept apart from creds.c (which does the file and network I/O and the
 * locking) so every format we accept from outside, shared files, STS XML,
 * container/IMDS JSON, is unit-tested and fuzzable without a network. */
#include "auth/creds_parse.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/xmlscan.h"

#define JSON_MAX_VALUE 8192

static int is_sp(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' ||
           c == '\v';
}

/* Trim [*s, *e) in place (pointers move). */
static void trim(const char **s, const char **e)
{
    while (*s < *e && is_sp(**s))
        (*s)++;
    while (*e > *s && is_sp((*e)[-1]))
        (*e)--;
}

/* One line of [*p, end) as GDAL's CPLReadLineL cuts a file: it ends at
 * "\r\n", "\n\r", "\n" or "\r" (not part of it) or at the end, and GDAL
 * sees it as a C string, so a NUL byte ends its text (*n). *p moves past
 * the line end. */
static void next_line(const char **p, const char *end, const char **s,
                      size_t *n)
{
    const char *b = *p, *e = b, *z;

    while (e < end && *e != '\n' && *e != '\r')
        e++;
    z = memchr(b, '\0', (size_t)(e - b));
    *s = b;
    *n = (size_t)((z ? z : e) - b);
    if (e < end) {
        if (e + 1 < end && (e[1] == '\n' || e[1] == '\r') && e[1] != e[0])
            e++;
        e++;
    }
    *p = e;
}

/* Is the line s[0, n) exactly "[name]"? (GDAL compares whole lines.) */
static int header_is(const char *s, size_t n, const char *name)
{
    size_t k = name ? strlen(name) : 0;
    return name && n == k + 2 && s[0] == '[' && s[n - 1] == ']' &&
           !memcmp(s + 1, name, k);
}

int vt__ini_section(const char *text, size_t len, const char *name,
                    const char *alt, size_t *off, size_t *n)
{
    const char *p = text, *end = text + len, *body = NULL, *s;
    size_t ln;

    *off = *n = 0;
    if (!text || !name)
        return 0;
    while (p < end) {
        const char *at = p;
        next_line(&p, end, &s, &ln);
        if (ln == 0 || s[0] != '[')
            continue;
        if (body) { /* the next header ends the section */
            end = at;
            break;
        }
        if (header_is(s, ln, name) || header_is(s, ln, alt))
            body = p;
    }
    if (!body)
        return 0;
    *off = (size_t)(body - text);
    *n = (size_t)(end - body);
    return 1;
}

int vt__ini_next(const char *body, size_t len, size_t *pos,
                 struct vt_ini_kv *kv)
{
    const char *p, *end = body + len, *s;
    size_t ln;

    memset(kv, 0, sizeof(*kv));
    if (!body || *pos >= len)
        return 0;
    p = body + *pos;
    while (p < end) {
        next_line(&p, end, &s, &ln);
        /* GDAL's CPLParseNameValue: the first '=' or ':' splits; the key
         * loses trailing blanks, the value leading ones; nothing else. */
        size_t i = 0;
        while (i < ln && s[i] != '=' && s[i] != ':')
            i++;
        if (i == ln)
            continue;
        kv->key = s;
        kv->klen = i;
        while (kv->klen && (s[kv->klen - 1] == ' ' || s[kv->klen - 1] == '\t'))
            kv->klen--;
        for (i++; i < ln && (s[i] == ' ' || s[i] == '\t'); i++)
            ;
        kv->val = s + i;
        kv->vlen = ln - i;
        *pos = (size_t)(p - body);
        return 1;
    }
    *pos = len;
    return 0;
}

int vt__ini_key_is(const struct vt_ini_kv *kv, const char *key, int nocase)
{
    size_t k = strlen(key);
    return kv->klen == k && (nocase ? !strncasecmp(kv->key, key, k)
                                    : !memcmp(kv->key, key, k));
}

char *vt__ini_get(const char *text, size_t len, const char *section,
                  const char *key)
{
    struct vt_ini_kv kv;
    size_t off, n, pos = 0;
    char *found = NULL;

    if (!key || !vt__ini_section(text, len, section, NULL, &off, &n))
        return NULL;
    while (vt__ini_next(text + off, n, &pos, &kv)) {
        if (!vt__ini_key_is(&kv, key, 1))
            continue;
        char *v = strndup(kv.val, kv.vlen);
        if (v) {
            free(found);
            found = v;
        }
    }
    return found;
}

static int digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int vt__parse_iso8601(const char *s, time_t *out)
{
    int Y, M, D, h, m, sec, oh = 0, om = 0;
    struct tm tm;
    if (!s || strlen(s) < 19 || digits(s, 4, &Y) || s[4] != '-' ||
        digits(s + 5, 2, &M) || s[7] != '-' || digits(s + 8, 2, &D) ||
        (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
        digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &m) ||
        s[16] != ':' || digits(s + 17, 2, &sec))
        return -1;
    const char *p = s + 19;
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    int sign = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = (*p == '+') ? 1 : -1;
        if (digits(p + 1, 2, &oh) || p[3] != ':' || digits(p + 4, 2, &om))
            return -1;
        p += 6;
    } else {
        return -1;
    }
    if (*p || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 ||
        sec > 60 || oh > 23 || om > 59)
        return -1;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = Y - 1900;
    tm.tm_mon = M - 1;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = sec;
    time_t t = timegm(&tm);
    if (t == (time_t)-1)
        return -1;
    *out = t - sign * (oh * 3600 + om * 60);
    return 0;
}

/* Common tail of both parsers: take ownership of the four strings. */
static vt_err fill(vt_creds *out, char *ak, char *sk, char *tok, char *exp)
{
    vt_err err = VT_OK;
    time_t t = 0;
    if (!ak || !sk || !*ak || !*sk ||
        (exp && *exp && vt__parse_iso8601(exp, &t))) {
        err = VT_EPROTO;
        goto out;
    }
    /* 0 means "does not expire": an Expiration at or before the epoch is
     * long past, not never. */
    if (exp && *exp && t <= 0)
        t = 1;
    out->access_key = ak;
    out->secret_key = sk;
    out->session_token = tok;
    out->expiration = t;
    ak = sk = tok = NULL;
out:
    free(ak);
    free(sk);
    free(tok);
    free(exp);
    return err;
}

typedef char *(*field_getter)(const char *body, size_t len, const char *name);

/* The four fields through get (XML or JSON); the token field's name differs. */
static vt_err parse_fields(const char *body, size_t len, vt_creds *out,
                           field_getter get, const char *token_name)
{
    out->access_key = out->secret_key = out->session_token = NULL;
    out->expiration = 0;
    if (!body)
        return VT_EPROTO;
    return fill(out, get(body, len, "AccessKeyId"),
                get(body, len, "SecretAccessKey"), get(body, len, token_name),
                get(body, len, "Expiration"));
}

vt_err vt__creds_parse_sts_xml(const char *body, size_t len, vt_creds *out)
{
    return parse_fields(body, len, out, vt__xml_tag, "SessionToken");
}

/* ---- JSON ------------------------------------------------------------- */

/* End of the JSON string whose opening quote is at s[i]: index of the
 * closing quote, or len when unterminated. */
static size_t string_end(const char *s, size_t len, size_t i)
{
    for (i++; i < len; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return i;
    }
    return len;
}

static int hex4(const char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int d = (c >= '0' && c <= '9')   ? c - '0'
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                         : -1;
        if (d < 0)
            return -1;
        v = v * 16 + (unsigned)d;
    }
    *out = v;
    return 0;
}

/* Decode the JSON string body s[0..n) (between the quotes). malloc'd. */
static char *json_decode(const char *s, size_t n)
{
    char *o = malloc(n + 1); /* decoding never grows (\uXXXX: 6 -> <= 3) */
    size_t j = 0;
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\') {
            o[j++] = s[i];
            continue;
        }
        if (++i >= n)
            goto bad;
        switch (s[i]) {
        case '"': o[j++] = '"'; break;
        case '\\': o[j++] = '\\'; break;
        case '/': o[j++] = '/'; break;
        case 'b': o[j++] = '\b'; break;
        case 'f': o[j++] = '\f'; break;
        case 'n': o[j++] = '\n'; break;
        case 'r': o[j++] = '\r'; break;
        case 't': o[j++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (i + 4 >= n || hex4(s + i + 1, &cp) || cp == 0)
                goto bad;
            i += 4;
            /* Surrogates are not expected in credentials: refused. */
            if (cp >= 0xd800 && cp <= 0xdfff)
                goto bad;
            if (cp < 0x80) {
                o[j++] = (char)cp;
            } else if (cp < 0x800) {
                o[j++] = (char)(0xc0 | (cp >> 6));
                o[j++] = (char)(0x80 | (cp & 0x3f));
            } else {
                o[j++] = (char)(0xe0 | (cp >> 12));
                o[j++] = (char)(0x80 | ((cp >> 6) & 0x3f));
                o[j++] = (char)(0x80 | (cp & 0x3f));
            }
            break;
        }
        default:
            goto bad;
        }
    }
    o[j] = '\0';
    return o;
bad:
    free(o);
    return NULL;
}

char *vt__json_get_string(const char *body, size_t len, const char *key)
{
    size_t klen = key ? strlen(key) : 0;
    if (!body || !klen)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        if (body[i] != '"')
            continue;
        size_t e = string_end(body, len, i);
        if (e >= len)
            return NULL;
        size_t ks = i + 1, kn = e - ks;
        size_t j = e + 1;
        while (j < len && is_sp(body[j]))
            j++;
        if (j >= len || body[j] != ':') {
            i = e; /* a string value: skip it whole */
            continue;
        }
        /* body[ks..ks+kn) is a key. */
        j++;
        while (j < len && is_sp(body[j]))
            j++;
        if (kn == klen && !memcmp(body + ks, key, klen) && j < len &&
            body[j] == '"') {
            size_t ve = string_end(body, len, j);
            if (ve >= len || ve - j - 1 > JSON_MAX_VALUE)
                return NULL;
            return json_decode(body + j + 1, ve - j - 1);
        }
        i = j - 1;
    }
    return NULL;
}

vt_err vt__creds_parse_json(const char *body, size_t len, vt_creds *out)
{
    /* IMDS adds "Code": "Success"; anything else there is a failure. */
    char *code = body ? vt__json_get_string(body, len, "Code") : NULL;
    int bad = code && strcmp(code, "Success") != 0;
    free(code);
    if (bad) {
        out->access_key = out->secret_key = out->session_token = NULL;
        out->expiration = 0;
        return VT_EPROTO;
    }
    return parse_fields(body, len, out, vt__json_get_string, "Token");
}

char *vt__imds_first_role(const char *body, size_t len)
{
    const char *p = body, *end = body + len;
    if (!body)
        return NULL;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *s = p, *e = nl ? nl : end;
        p = nl ? nl + 1 : end;
        trim(&s, &e);
        if (s == e)
            continue;
        if (e - s > 128)
            return NULL;
        for (const char *c = s; c < e; c++)
            if (!isalnum((unsigned char)*c) &&
                (*c == '\0' || !strchr("+=,.@_-", *c))) /* strchr finds NUL */
                return NULL;
        return strndup(s, (size_t)(e - s));
    }
    return NULL;
}

int vt__ec2_guess(const char *hypervisor_uuid, const char *sys_vendor)
{
    if (hypervisor_uuid)
        return strncasecmp(hypervisor_uuid, "ec2", 3) == 0;
    if (sys_vendor)
        return strncmp(sys_vendor, "Amazon EC2", 10) == 0;
    return -1;
}

/* Hosts an http:// FULL_URI may name (AWS SDKs' rule): loopback, the ECS
 * and EKS Pod Identity link-local agents. */
static int allowed_http_host(const char *h, size_t n)
{
    static const char *ok[] = {"localhost", "[::1]", "169.254.170.2",
                               "169.254.170.23", "[fd00:ec2::23]"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (strlen(ok[i]) == n && !strncasecmp(h, ok[i], n))
            return 1;
    return n > 4 && !strncmp(h, "127.", 4) && strspn(h, "0123456789.") >= n;
}

char *vt__container_url(const char *relative_uri, const char *full_uri,
                        int *refused)
{
    *refused = 0;
    if (relative_uri && *relative_uri) {
        size_t n = strlen(relative_uri) + 32;
        char *u = malloc(n);
        if (u)
            snprintf(u, n, "http://169.254.170.2%s%s",
                     relative_uri[0] == '/' ? "" : "/", relative_uri);
        return u;
    }
    if (!full_uri || !*full_uri)
        return NULL;
    if (!strncasecmp(full_uri, "https://", 8))
        return strdup(full_uri);
    if (strncasecmp(full_uri, "http://", 7)) {
        *refused = 1;
        return NULL;
    }
    const char *h = full_uri + 7;
    size_t hn;
    if (*h == '[') {
        const char *rb = strchr(h, ']');
        hn = rb ? (size_t)(rb - h) + 1 : strlen(h);
    } else {
        hn = strcspn(h, ":/?#");
    }
    if (!allowed_http_host(h, hn)) {
        *refused = 1;
        return NULL;
    }
    return strdup(full_uri);
}
