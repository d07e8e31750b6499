/* az_sign.c: Azure's Shared Key signature (az_auth.h).
 *
 * Why: a request GDAL 3.6 signs with AZURE_STORAGE_ACCESS_KEY carries an
 * HMAC-SHA256, keyed by the decoded account key, over a string built from
 * the verb, eleven standard headers, the x-ms-* headers and the resource
 * with its query parameters. Pure: the caller gives the headers it sends
 * and the date in them, so the same inputs give GDAL's very signature
 * (tests/unit/test_az_auth.c holds stock GDAL's own as vectors). */
#include "auth/az_auth.h"
#include "auth/sigv4.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* A growing string. */
struct sbuf {
    char *s;
    size_t n, cap;
    int oom;
};

static void sb_add(struct sbuf *b, const char *p, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 256) + n;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->n, p, n);
    b->n += n;
    b->s[b->n] = '\0';
}

static void sb_str(struct sbuf *b, const char *p)
{
    sb_add(b, p, strlen(p));
}

/* The value of header name in lines ("" when absent), trimmed: its start
 * and length. */
static const char *header_val(const char *const *headers, const char *name,
                              size_t *len)
{
    size_t nl = strlen(name);
    for (size_t i = 0; headers && headers[i]; i++) {
        const char *h = headers[i];
        if (strncasecmp(h, name, nl) != 0 || h[nl] != ':')
            continue;
        h += nl + 1;
        while (*h == ' ' || *h == '\t')
            h++;
        size_t n = strlen(h);
        while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
            n--;
        *len = n;
        return h;
    }
    *len = 0;
    return "";
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "name:value" of every x-ms-* header, the name lowercased, the value
 * trimmed, sorted. NULL-terminated malloc'd array (count in *n). */
static char **ms_headers(const char *const *headers, size_t *n)
{
    size_t cnt = 0, k = 0;
    char **v;

    for (size_t i = 0; headers && headers[i]; i++)
        cnt += strncasecmp(headers[i], "x-ms-", 5) == 0;
    v = calloc(cnt + 1, sizeof(*v));
    if (!v)
        return NULL;
    for (size_t i = 0; headers && headers[i]; i++) {
        const char *h = headers[i], *colon = strchr(h, ':');
        size_t vl;
        if (strncasecmp(h, "x-ms-", 5) != 0 || !colon)
            continue;
        char name[128];
        size_t nl = (size_t)(colon - h);
        if (nl >= sizeof(name))
            nl = sizeof(name) - 1;
        for (size_t j = 0; j < nl; j++)
            name[j] = (char)tolower((unsigned char)h[j]);
        name[nl] = '\0';
        const char *val = header_val(headers + i, name, &vl);
        size_t len = nl + vl + 2;
        v[k] = malloc(len);
        if (!v[k])
            break;
        snprintf(v[k], len, "%s:%.*s", name, (int)vl, val);
        k++;
    }
    qsort(v, k, sizeof(*v), cmp_str);
    *n = k;
    return v;
}

static void free_list(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

char *vt__az_string_to_sign(const char *verb, const char *const *headers,
                            const char *account, const char *resource,
                            const char *const *params)
{
    /* the standard headers, in Shared Key's order */
    static const char *const std_headers[] = {
        "Content-Encoding", "Content-Language", "Content-Length",
        "Content-MD5", "Content-Type", "Date", "If-Modified-Since",
        "If-Match", "If-None-Match", "If-Unmodified-Since", "Range"};
    struct sbuf b = {0};
    size_t nms = 0, np = 0;
    char **ms = ms_headers(headers, &nms), **ps = NULL;

    if (!ms)
        return NULL;
    sb_str(&b, verb);
    sb_str(&b, "\n");
    for (size_t i = 0; i < sizeof(std_headers) / sizeof(std_headers[0]); i++) {
        size_t vl;
        const char *v = header_val(headers, std_headers[i], &vl);
        /* Content-Length 0 is signed empty (x-ms-version 2015-02-21+) */
        if (!strcmp(std_headers[i], "Content-Length") && vl == 1 && *v == '0')
            vl = 0;
        sb_add(&b, v, vl);
        sb_str(&b, "\n");
    }
    for (size_t i = 0; i < nms; i++) {
        sb_str(&b, ms[i]);
        sb_str(&b, "\n");
    }
    sb_str(&b, "/");
    sb_str(&b, account);
    sb_str(&b, resource);
    while (params && params[np])
        np++;
    ps = calloc(np + 1, sizeof(*ps));
    if (!ps)
        b.oom = 1;
    for (size_t i = 0; ps && i < np; i++)
        ps[i] = (char *)params[i];
    if (ps)
        qsort(ps, np, sizeof(*ps), cmp_str);
    for (size_t i = 0; ps && i < np; i++) {
        const char *eq = strchr(ps[i], '=');
        sb_str(&b, "\n");
        if (!eq) {
            sb_str(&b, ps[i]);
            sb_str(&b, ":");
            continue;
        }
        sb_add(&b, ps[i], (size_t)(eq - ps[i]));
        sb_str(&b, ":");
        sb_str(&b, eq + 1);
    }
    free(ps);
    free_list(ms);
    if (b.oom || !b.s) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

/* The 6-bit value of a base64 character; '=' 64; -1 for any other. */
static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return c == '=' ? 64 : -1;
}

/* The account key decoded the way GDAL decodes it (measured: the
 * autotest's key "MY_ACCOUNT_KEY" is accepted and signs): characters
 * outside the alphabet are skipped, a short last group is completed with
 * zero bits, '=' in a group's third or fourth place ends the group, and
 * never more bytes come out than characters were kept. out has room for
 * strlen(in) bytes; returns the decoded length. */
static size_t key_decode(const char *in, unsigned char *out)
{
    size_t kept = 0, n = 0;
    unsigned char q[4];
    int qn = 0;

    for (const unsigned char *p = (const unsigned char *)in; *p; p++)
        if (b64_value(*p) >= 0)
            kept++;
    for (const unsigned char *p = (const unsigned char *)in;; p++) {
        if (*p) {
            if (b64_value(*p) < 0)
                continue;
            q[qn++] = *p;
            if (qn < 4)
                continue;
        } else if (qn == 0) {
            break;
        }
        while (qn < 4)
            q[qn++] = 'A';
        unsigned v0 = (unsigned)b64_value(q[0]), v1 = (unsigned)b64_value(q[1]);
        unsigned v2 = (unsigned)b64_value(q[2]), v3 = (unsigned)b64_value(q[3]);
        out[n++] = (unsigned char)((v0 << 2) | (v1 >> 4));
        if (n < kept && q[2] != '=')
            out[n++] = (unsigned char)(((v1 & 0xf) << 4) | (v2 >> 2));
        if (n < kept && q[3] != '=')
            out[n++] = (unsigned char)(((v2 & 0x3) << 6) | v3);
        qn = 0;
        if (n >= kept || !*p)
            break;
    }
    return n;
}

int vt__az_sign(const char *key_b64, const char *sts, char *out,
                size_t outlen)
{
    size_t kl = strlen(key_b64);
    unsigned char *key = malloc(kl + 1);
    unsigned char md[32];
    size_t n;
    int rc = -1;

    if (outlen)
        out[0] = '\0';
    if (!key || kl == 0 || outlen < 45)
        goto out;
    n = key_decode(key_b64, key);
    if (vt__hmac_sha256(key, n, sts, strlen(sts), md) != 0)
        goto out;
    EVP_EncodeBlock((unsigned char *)out, md, 32);
    rc = 0;
out:
    if (key)
        OPENSSL_cleanse(key, kl + 1);
    OPENSSL_cleanse(md, sizeof md);
    free(key);
    return rc;
}

