/* sigv4.c: AWS Signature Version 4 (see sigv4.h), pure: bytes in, bytes out.
 *
 * Why our own signer: libcurl 7.88's CURLOPT_AWS_SIGV4 leaves the query
 * unsorted and the path unencoded, so keys with spaces or '+' fail. This file
 * builds the canonical request, the string to sign and the Authorization
 * value with OpenSSL libcrypto (SHA-256; HMAC over it is ours) and nothing
 * else: no I/O, no locks, callable from any thread. Its SHA-256 is the
 * plugin's one, fetched once (base/sha256.h).
 *
 * Every string is built in a bounded growable buffer (struct sbuf, capped at
 * SIGV4_MAX_TEXT) so a hostile header list cannot make us allocate without
 * limit; going over the cap is VT_EINVAL. */
#include "auth/sigv4.h"
#include "base/sha256.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#define SIGV4_MAX_TEXT (1u << 20) /* cap of any canonical text we build */
#define SIGV4_MAX_HEADERS 256     /* cap of header lines we sign */
#define SIGV4_MAX_PARAMS 1024     /* cap of query parameters */

/* A bounded string builder. buf is malloc'd and owned by the sbuf until
 * sbuf_take() hands it over; sbuf_free() releases it otherwise. */
struct sbuf {
    char *buf;
    size_t len;
    size_t cap;
    int failed; /* sticky: an append failed (OOM or over SIGV4_MAX_TEXT) */
};

static void sbuf_add(struct sbuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > SIGV4_MAX_TEXT) {
        b->failed = 1;
        return;
    }
    if (b->len + n + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap : 256;
        while (ncap < b->len + n + 1)
            ncap *= 2;
        char *nb = realloc(b->buf, ncap);
        if (!nb) {
            b->failed = 1;
            return;
        }
        b->buf = nb;
        b->cap = ncap;
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = '\0';
}

static void sbuf_puts(struct sbuf *b, const char *s)
{
    sbuf_add(b, s, strlen(s));
}

static void sbuf_putc(struct sbuf *b, char c)
{
    sbuf_add(b, &c, 1);
}

/* Hand the built string to the caller (who frees it); NULL when failed. */
static char *sbuf_take(struct sbuf *b)
{
    char *s = NULL;
    if (!b->failed) {
        if (!b->buf)
            sbuf_add(b, "", 0);
        if (!b->failed) {
            s = b->buf;
            b->buf = NULL;
        }
    }
    free(b->buf);
    memset(b, 0, sizeof(*b));
    return s;
}

static void sbuf_free(struct sbuf *b)
{
    free(b->buf);
    memset(b, 0, sizeof(*b));
}

static int is_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
           c == '~';
}

static void encode_into(struct sbuf *b, const char *s, size_t n, int keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (is_unreserved(c) || (keep_slash && c == '/')) {
            sbuf_putc(b, (char)c);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            sbuf_add(b, e, 3);
        }
    }
}

char *vt__uri_encode(const char *s, int keep_slash)
{
    struct sbuf b = {0};
    if (!s)
        return NULL;
    encode_into(&b, s, strlen(s), keep_slash);
    return sbuf_take(&b);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decode s[0..n) into a malloc'd string (caller frees). A '%' not
 * followed by two hex digits is kept as is. '+' is kept ('+' is not a space
 * in SigV4's view of the query, as in botocore). */
static char *pct_decode(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    size_t j = 0;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 &&
            hexval(s[i + 2]) >= 0) {
            out[j++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
            i += 2;
        } else {
            out[j++] = s[i];
        }
    }
    out[j] = '\0';
    return out;
}

static const EVP_MD *sha256(void) { return vt__sha256_md(); }

void vt__amz_date(long long t, char out[17])
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm)) {
        snprintf(out, 17, "19700101T000000Z");
        return;
    }
    strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

void vt__http_date(long long t, char out[VT_HTTP_DATE_LEN])
{
    /* spelled out: strftime's %a and %b follow the locale, HTTP's do not */
    static const char *const days[] = {"Sun", "Mon", "Tue", "Wed",
                                       "Thu", "Fri", "Sat"};
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr",
                                         "May", "Jun", "Jul", "Aug",
                                         "Sep", "Oct", "Nov", "Dec"};
    time_t tt = (time_t)t;
    struct tm tm;
    char buf[96]; /* room for any int the fields could hold */
    if (!gmtime_r(&tt, &tm) || tm.tm_year + 1900 > 9999) {
        snprintf(out, VT_HTTP_DATE_LEN, "Thu, 01 Jan 1970 00:00:00 GMT");
        return;
    }
    snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT",
             days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
             tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    snprintf(out, VT_HTTP_DATE_LEN, "%.*s", VT_HTTP_DATE_LEN - 1, buf);
}

/* ---- canonical URI ---------------------------------------------------- */

/* S3 (normalize=0): the path exactly as sent. Other services: drop empty and
 * "." segments, resolve "..", and encode every segment (again: a '%' already
 * in the path becomes %25, which is AWS's double encoding). */
static void canonical_uri(struct sbuf *b, const char *path, int normalize)
{
    if (!path || !*path) {
        sbuf_putc(b, '/');
        return;
    }
    if (!normalize) {
        if (path[0] != '/')
            sbuf_putc(b, '/');
        sbuf_puts(b, path);
        return;
    }
    /* Segment table: offsets into path; bounded by the path's length. */
    size_t plen = strlen(path);
    size_t nseg = 0;
    size_t *start = malloc((plen / 2 + 2) * sizeof(size_t));
    size_t *len = malloc((plen / 2 + 2) * sizeof(size_t));
    int trailing = 0;
    if (!start || !len) {
        b->failed = 1;
        goto out;
    }
    for (size_t i = 0; i < plen;) {
        size_t j = i;
        while (j < plen && path[j] != '/')
            j++;
        size_t n = j - i;
        int last = (j >= plen);
        if (n == 0) {
            /* empty segment: "//" collapses */
        } else if (n == 1 && path[i] == '.') {
            if (last)
                trailing = 1;
        } else if (n == 2 && path[i] == '.' && path[i + 1] == '.') {
            if (nseg > 0)
                nseg--;
            if (last)
                trailing = 1;
        } else {
            start[nseg] = i;
            len[nseg] = n;
            nseg++;
        }
        i = j + 1;
    }
    if (path[plen - 1] == '/')
        trailing = 1;
    for (size_t k = 0; k < nseg; k++) {
        sbuf_putc(b, '/');
        encode_into(b, path + start[k], len[k], 0);
    }
    if (nseg == 0 || trailing)
        sbuf_putc(b, '/');
out:
    free(start);
    free(len);
}

/* ---- canonical query -------------------------------------------------- */

struct qparam {
    char *name;  /* encoded, malloc'd */
    char *value; /* encoded, malloc'd */
};

static int qparam_cmp(const void *a, const void *b)
{
    const struct qparam *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->value, y->value);
}

/* Re-encode one name or value: decode what was sent, encode per SigV4. */
static char *reencode(const char *s, size_t n)
{
    char *raw = pct_decode(s, n);
    char *enc = raw ? vt__uri_encode(raw, 0) : NULL;
    free(raw);
    return enc;
}

static vt_err canonical_query(struct sbuf *b, const char *query)
{
    vt_err err = VT_OK;
    struct qparam *ps = NULL;
    size_t np = 0;
    if (!query || !*query)
        return VT_OK;
    ps = calloc(SIGV4_MAX_PARAMS, sizeof(*ps));
    if (!ps)
        return VT_ENOMEM;
    for (const char *p = query; *p;) {
        const char *amp = strchr(p, '&');
        size_t n = amp ? (size_t)(amp - p) : strlen(p);
        if (n > 0) {
            if (np == SIGV4_MAX_PARAMS) {
                err = VT_EINVAL;
                goto out;
            }
            const char *eq = memchr(p, '=', n);
            size_t nn = eq ? (size_t)(eq - p) : n;
            ps[np].name = reencode(p, nn);
            ps[np].value = eq ? reencode(eq + 1, n - nn - 1) : reencode("", 0);
            np++;
            if (!ps[np - 1].name || !ps[np - 1].value) {
                err = VT_ENOMEM;
                goto out;
            }
        }
        p += n;
        if (*p == '&')
            p++;
    }
    qsort(ps, np, sizeof(*ps), qparam_cmp);
    for (size_t i = 0; i < np; i++) {
        if (i)
            sbuf_putc(b, '&');
        sbuf_puts(b, ps[i].name);
        sbuf_putc(b, '=');
        sbuf_puts(b, ps[i].value);
    }
out:
    for (size_t i = 0; i < np; i++) {
        free(ps[i].name);
        free(ps[i].value);
    }
    free(ps);
    return err;
}

/* ---- canonical headers ------------------------------------------------ */

struct hdr {
    char *name;  /* lowercase, malloc'd */
    char *value; /* trimmed and folded, malloc'd */
    size_t order;
};

static int hdr_cmp(const void *a, const void *b)
{
    const struct hdr *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Parse "Name: value" (value may span folded lines) into *h. */
static vt_err parse_header(const char *line, size_t order, struct hdr *h)
{
    const char *colon = strchr(line, ':');
    if (!colon || colon == line)
        return VT_EINVAL;
    const char *ne = colon;
    while (ne > line && is_ws(ne[-1]))
        ne--;
    if (ne == line)
        return VT_EINVAL;
    size_t nlen = (size_t)(ne - line);
    h->name = malloc(nlen + 1);
    h->value = malloc(strlen(colon + 1) + 1);
    h->order = order;
    if (!h->name || !h->value)
        return VT_ENOMEM;
    for (size_t i = 0; i < nlen; i++) {
        unsigned char c = (unsigned char)line[i];
        if (c <= ' ' || c == 0x7f)
            return VT_EINVAL; /* no spaces or controls in a header name */
        h->name[i] = (char)tolower(c);
    }
    h->name[nlen] = '\0';
    /* Trim both ends, fold every run of whitespace into one space. */
    const char *v = colon + 1;
    size_t j = 0;
    int pending_space = 0;
    for (; *v; v++) {
        if (is_ws(*v)) {
            pending_space = (j > 0);
            continue;
        }
        if (pending_space)
            h->value[j++] = ' ';
        pending_space = 0;
        h->value[j++] = *v;
    }
    h->value[j] = '\0';
    return VT_OK;
}

/* Build the canonical header block and the signed-header list. */
static vt_err canonical_headers(struct sbuf *cb, struct sbuf *sb,
                                const char *const *headers)
{
    vt_err err = VT_OK;
    size_t n = 0;
    struct hdr *hs = NULL;
    int have_host = 0;
    if (!headers)
        return VT_EINVAL;
    while (headers[n])
        if (++n > SIGV4_MAX_HEADERS)
            return VT_EINVAL;
    hs = calloc(n ? n : 1, sizeof(*hs));
    if (!hs)
        return VT_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        err = parse_header(headers[i], i, &hs[i]);
        if (err)
            goto out;
        if (!strcmp(hs[i].name, "host"))
            have_host = 1;
    }
    /* x-amz-date is signed by S3 requests, not by GDAL's STS AssumeRole
     * (SignedHeaders=host): the date is in the string to sign either way. */
    if (!have_host) {
        err = VT_EINVAL;
        goto out;
    }
    qsort(hs, n, sizeof(*hs), hdr_cmp);
    for (size_t i = 0; i < n; i++) {
        int dup = (i > 0 && !strcmp(hs[i].name, hs[i - 1].name));
        if (dup) {
            sbuf_putc(cb, ',');
        } else {
            if (i > 0) {
                sbuf_putc(cb, '\n');
                sbuf_putc(sb, ';');
            }
            sbuf_puts(cb, hs[i].name);
            sbuf_putc(cb, ':');
            sbuf_puts(sb, hs[i].name);
        }
        sbuf_puts(cb, hs[i].value);
    }
    sbuf_putc(cb, '\n');
out:
    for (size_t i = 0; i < n; i++) {
        free(hs[i].name);
        free(hs[i].value);
    }
    free(hs);
    return err;
}

/* ---- signature -------------------------------------------------------- */

/* HMAC-SHA-256 (RFC 2104) of msg under key into out, with the digest
 * context c: H((K ^ opad) || H((K ^ ipad) || msg)), K the key padded to the
 * 64-byte block (hashed first when longer). out may alias key. */
static int hmac_n(EVP_MD_CTX *c, const void *key, size_t klen, const void *msg,
                  size_t mlen, unsigned char out[32])
{
    unsigned char k[64] = {0}, pad[64], inner[32];
    unsigned int n = 0;
    int ok = 1;

    if (klen > sizeof(k))
        ok = EVP_Digest(key, klen, k, &n, sha256(), NULL) && n == 32;
    else
        memcpy(k, key, klen);
    for (size_t i = 0; i < sizeof(k); i++)
        pad[i] = k[i] ^ 0x36;
    ok = ok && EVP_DigestInit_ex(c, sha256(), NULL) &&
         EVP_DigestUpdate(c, pad, sizeof(pad)) &&
         EVP_DigestUpdate(c, msg, mlen) &&
         EVP_DigestFinal_ex(c, inner, &n) && n == 32;
    for (size_t i = 0; i < sizeof(k); i++)
        pad[i] = k[i] ^ 0x5c;
    ok = ok && EVP_DigestInit_ex(c, sha256(), NULL) &&
         EVP_DigestUpdate(c, pad, sizeof(pad)) &&
         EVP_DigestUpdate(c, inner, sizeof(inner)) &&
         EVP_DigestFinal_ex(c, out, &n) && n == 32;
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(pad, sizeof(pad));
    OPENSSL_cleanse(inner, sizeof(inner));
    return ok ? 0 : -1;
}

static int hmac(EVP_MD_CTX *c, const void *key, size_t klen, const char *msg,
                unsigned char out[32])
{
    return hmac_n(c, key, klen, msg, strlen(msg), out);
}

int vt__hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
                    unsigned char out[32])
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    int rc = c ? hmac_n(c, key, klen, msg, mlen, out) : -1;

    EVP_MD_CTX_free(c);
    return rc;
}

static int valid_amz_date(const char *d)
{
    if (!d || strlen(d) != 16 || d[8] != 'T' || d[15] != 'Z')
        return 0;
    for (int i = 0; i < 15; i++)
        if (i != 8 && !isdigit((unsigned char)d[i]))
            return 0;
    return 1;
}

/* The access key goes into the Authorization header as GDAL puts it, with
 * whatever the shared file's line held (blanks, an inline "# ..."): the
 * server, not the signer, refuses a key it does not know. Only what would
 * break the header is refused. */
static int valid_key_id(const char *s)
{
    return s && *s && !strpbrk(s, "\r\n");
}

static int valid_token(const char *s)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == '/' || *s == ',' || *s == 0x7f)
            return 0;
    return 1;
}

vt_err vt__sigv4_sign(const vt_sigv4_input *in, vt_sigv4_output *out)
{
    vt_err err = VT_OK;
    struct sbuf creq = {0}, signed_hdrs = {0}, hdrs = {0}, sts = {0}, auth = {0};
    char *signed_list = NULL;
    char *secret = NULL;
    char scope[128];
    char creq_hash[65];
    unsigned char k[32];
    static const char hex[] = "0123456789abcdef";

    memset(out, 0, sizeof(*out));
    if (!in || !in->method || !*in->method || !in->payload_hash ||
        !*in->payload_hash || !valid_amz_date(in->amz_date) ||
        !valid_token(in->region) || !valid_token(in->service) ||
        !valid_key_id(in->access_key) || !in->secret_key) {
        err = VT_EINVAL;
        goto out;
    }

    /* Canonical request. */
    sbuf_puts(&creq, in->method);
    sbuf_putc(&creq, '\n');
    canonical_uri(&creq, in->path, in->normalize_path);
    sbuf_putc(&creq, '\n');
    err = canonical_query(&creq, in->query);
    if (err)
        goto out;
    sbuf_putc(&creq, '\n');
    err = canonical_headers(&hdrs, &signed_hdrs, in->headers);
    if (err)
        goto out;
    signed_list = sbuf_take(&signed_hdrs);
    if (hdrs.failed || !signed_list) {
        err = VT_EINVAL;
        goto out;
    }
    sbuf_add(&creq, hdrs.buf, hdrs.len);
    sbuf_putc(&creq, '\n');
    sbuf_puts(&creq, signed_list);
    sbuf_putc(&creq, '\n');
    sbuf_puts(&creq, in->payload_hash);
    if (creq.failed) {
        err = VT_EINVAL;
        goto out;
    }
    vt__sha256_hex(creq.buf, creq.len, creq_hash);

    /* String to sign. */
    if (snprintf(scope, sizeof(scope), "%.8s/%s/%s/aws4_request", in->amz_date,
                 in->region, in->service) >= (int)sizeof(scope)) {
        err = VT_EINVAL;
        goto out;
    }
    sbuf_puts(&sts, "AWS4-HMAC-SHA256\n");
    sbuf_puts(&sts, in->amz_date);
    sbuf_putc(&sts, '\n');
    sbuf_puts(&sts, scope);
    sbuf_putc(&sts, '\n');
    sbuf_puts(&sts, creq_hash);
    if (sts.failed) {
        err = VT_ENOMEM;
        goto out;
    }

    /* Signing key chain: HMAC("AWS4"+secret, date) -> region -> service ->
     * "aws4_request", then the signature over the string to sign. */
    char date8[9];
    memcpy(date8, in->amz_date, 8);
    date8[8] = '\0';
    size_t slen = strlen(in->secret_key);
    secret = malloc(slen + 5);
    if (!secret) {
        err = VT_ENOMEM;
        goto out;
    }
    memcpy(secret, "AWS4", 4);
    memcpy(secret + 4, in->secret_key, slen + 1);
    unsigned char sig[32];
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    if (!c) {
        err = VT_ENOMEM;
        goto out;
    }
    if (hmac(c, secret, slen + 4, date8, k) || hmac(c, k, 32, in->region, k) ||
        hmac(c, k, 32, in->service, k) || hmac(c, k, 32, "aws4_request", k) ||
        hmac(c, k, 32, sts.buf, sig)) {
        EVP_MD_CTX_free(c);
        err = VT_EINVAL;
        goto out;
    }
    EVP_MD_CTX_free(c);
    for (int i = 0; i < 32; i++) {
        out->signature[2 * i] = hex[sig[i] >> 4];
        out->signature[2 * i + 1] = hex[sig[i] & 15];
    }
    out->signature[64] = '\0';

    sbuf_puts(&auth, "AWS4-HMAC-SHA256 Credential=");
    sbuf_puts(&auth, in->access_key);
    sbuf_putc(&auth, '/');
    sbuf_puts(&auth, scope);
    sbuf_puts(&auth, ",SignedHeaders="); /* GDAL's spelling, no spaces */
    sbuf_puts(&auth, signed_list);
    sbuf_puts(&auth, ",Signature=");
    sbuf_puts(&auth, out->signature);

    out->canonical_request = sbuf_take(&creq);
    out->string_to_sign = sbuf_take(&sts);
    out->authorization = sbuf_take(&auth);
    if (!out->canonical_request || !out->string_to_sign || !out->authorization)
        err = VT_ENOMEM;
out:
    if (err)
        vt__sigv4_output_clear(out);
    sbuf_free(&creq);
    sbuf_free(&signed_hdrs);
    sbuf_free(&hdrs);
    sbuf_free(&sts);
    sbuf_free(&auth);
    free(signed_list);
    if (secret) {
        OPENSSL_cleanse(secret, strlen(secret));
        free(secret);
    }
    OPENSSL_cleanse(k, sizeof(k));
    return err;
}

void vt__sigv4_output_clear(vt_sigv4_output *out)
{
    if (!out)
        return;
    free(out->canonical_request);
    free(out->string_to_sign);
    free(out->authorization);
    memset(out, 0, sizeof(*out));
}
