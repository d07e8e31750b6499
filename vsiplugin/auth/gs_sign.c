/* gs_sign.c: the pure half of gs_auth.h: GOOG1 HMAC-SHA1 signatures, the
 * service account's RS256 JWT, the boto file and token answers. No I/O and
 * no globals, so tests/unit/test_gs_auth.c checks every byte offline. */
#include "auth/gs_auth.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include "auth/creds_parse.h"
#include "base/sha256.h"

/* ---- base64 ------------------------------------------------------------ */

char *vt__gs_base64(const unsigned char *data, size_t n)
{
    size_t cap = 4 * ((n + 2) / 3) + 1;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    if (EVP_EncodeBlock((unsigned char *)out, data, (int)n) < 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* ---- GOOG1 ------------------------------------------------------------ */

struct hdr {
    char *name; /* lowercased */
    const char *value;
    size_t vlen;
};

static int hdr_cmp(const void *a, const void *b)
{
    return strcmp(((const struct hdr *)a)->name, ((const struct hdr *)b)->name);
}

/* The x-goog-* lines of h, "name:value\n" each, sorted by name. malloc'd. */
static char *canonical_goog(const char *const *h)
{
    size_t n = 0, k = 0, total = 1;
    struct hdr *v = NULL;
    char *out = NULL;

    for (size_t i = 0; h && h[i]; i++)
        n++;
    v = calloc(n ? n : 1, sizeof(*v));
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *colon = strchr(h[i], ':');
        if (!colon || strncasecmp(h[i], "x-goog-", 7) != 0)
            continue;
        size_t nl = (size_t)(colon - h[i]);
        const char *val = colon + 1;
        while (*val == ' ' || *val == '\t')
            val++;
        size_t vl = strlen(val);
        while (vl && (val[vl - 1] == ' ' || val[vl - 1] == '\t'))
            vl--;
        v[k].name = strndup(h[i], nl);
        if (!v[k].name)
            goto out;
        for (char *p = v[k].name; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        v[k].value = val;
        v[k].vlen = vl;
        total += nl + vl + 2;
        k++;
    }
    qsort(v, k, sizeof(*v), hdr_cmp);
    out = malloc(total);
    if (!out)
        goto out;
    out[0] = '\0';
    for (size_t i = 0, o = 0; i < k; i++)
        o += (size_t)sprintf(out + o, "%s:%.*s\n", v[i].name, (int)v[i].vlen,
                             v[i].value);
out:
    for (size_t i = 0; i < k; i++)
        free(v[i].name);
    free(v);
    return out;
}

char *vt__gs_goog1(const char *verb, const char *content_md5,
                   const char *content_type, const char *date,
                   const char *const *xgoog, const char *resource,
                   const char *key_id, const char *secret,
                   char **string_to_sign)
{
    char *canon = canonical_goog(xgoog), *sts = NULL, *b64 = NULL,
         *auth = NULL;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    size_t l;

    if (string_to_sign)
        *string_to_sign = NULL;
    if (!canon)
        return NULL;
    l = strlen(verb) + strlen(content_md5 ? content_md5 : "") +
        strlen(content_type ? content_type : "") + strlen(date) +
        strlen(canon) + strlen(resource) + 8;
    sts = malloc(l);
    if (!sts)
        goto out;
    snprintf(sts, l, "%s\n%s\n%s\n%s\n%s%s", verb,
             content_md5 ? content_md5 : "", content_type ? content_type : "",
             date, canon, resource);
    if (!HMAC(EVP_sha1(), secret, (int)strlen(secret),
              (const unsigned char *)sts, strlen(sts), md, &mdlen))
        goto out;
    b64 = vt__gs_base64(md, mdlen);
    if (!b64)
        goto out;
    l = strlen(key_id) + strlen(b64) + 8;
    auth = malloc(l);
    if (auth)
        snprintf(auth, l, "GOOG1 %s:%s", key_id, b64);
    if (string_to_sign) {
        *string_to_sign = sts;
        sts = NULL;
    }
out:
    OPENSSL_cleanse(md, sizeof md);
    free(canon);
    free(sts);
    free(b64);
    return auth;
}

/* ---- JWT -------------------------------------------------------------- */

/* RS256 of msg with the PEM key: base64, malloc'd. */
static char *rs256(const char *pem, const char *msg, char *errbuf,
                   size_t errlen)
{
    BIO *bio = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    EVP_MD_CTX *ctx = key ? EVP_MD_CTX_new() : NULL;
    unsigned char *sig = NULL;
    size_t slen = 0;
    char *out = NULL;

    if (!key) {
        snprintf(errbuf, errlen, "cannot read the service account's private key");
        goto out;
    }
    if (!ctx || EVP_DigestSignInit(ctx, NULL, vt__sha256_md(), NULL, key) != 1 ||
        EVP_DigestSign(ctx, NULL, &slen, (const unsigned char *)msg,
                       strlen(msg)) != 1 ||
        !(sig = malloc(slen)) ||
        EVP_DigestSign(ctx, sig, &slen, (const unsigned char *)msg,
                       strlen(msg)) != 1) {
        snprintf(errbuf, errlen, "cannot sign with the service account's key");
        goto out;
    }
    out = vt__gs_base64(sig, slen);
out:
    free(sig);
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(key);
    BIO_free(bio);
    return out;
}

char *vt__gs_jwt(const char *pem, const char *email, const char *scope,
                 const char *aud, long long now, long lifetime, char *errbuf,
                 size_t errlen)
{
    /* base64 of {"alg":"RS256","typ":"JWT"}, the header GDAL sends */
    static const char header[] = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9";
    size_t l = strlen(email) + strlen(scope) + strlen(aud) + 128;
    char *claims = malloc(l), *b64 = NULL, *tosign = NULL, *sig = NULL,
         *out = NULL;

    if (!claims)
        return NULL;
    snprintf(claims, l,
             "{\"iss\": \"%s\", \"scope\": \"%s\", \"aud\": \"%s\", "
             "\"iat\": %lld, \"exp\": %lld}",
             email, scope, aud, now, now + lifetime);
    b64 = vt__gs_base64((const unsigned char *)claims, strlen(claims));
    if (!b64)
        goto out;
    l = sizeof(header) + strlen(b64) + 2;
    tosign = malloc(l);
    if (!tosign)
        goto out;
    snprintf(tosign, l, "%s.%s", header, b64);
    sig = rs256(pem, tosign, errbuf, errlen);
    if (!sig)
        goto out;
    l = strlen(tosign) + strlen(sig) + 2;
    out = malloc(l);
    if (out)
        snprintf(out, l, "%s.%s", tosign, sig);
out:
    free(claims);
    free(b64);
    free(tosign);
    free(sig);
    return out;
}

/* ---- the boto file ---------------------------------------------------- */

static char *trimmed(const char *s, size_t n)
{
    while (n && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    return strndup(s, n);
}

static void set_field(char **dst, const char *v, size_t n)
{
    free(*dst);
    *dst = trimmed(v, n);
}

void vt__gs_boto_parse(const char *text, size_t len, struct vt_gs_boto *b)
{
    enum { NONE, CREDS, OAUTH2 } sec = NONE;
    size_t pos = 0;

    memset(b, 0, sizeof(*b));
    while (pos < len) {
        const char *line = text + pos;
        size_t n = 0;
        while (pos + n < len && line[n] != '\n' && line[n] != '\r' &&
               line[n] != '\0')
            n++;
        pos += n;
        if (pos < len && text[pos] == '\r' && pos + 1 < len &&
            text[pos + 1] == '\n')
            pos++;
        pos++;
        if (n && line[0] == '[') {
            sec = (n == 13 && !memcmp(line, "[Credentials]", 13)) ? CREDS
                  : (n == 8 && !memcmp(line, "[OAuth2]", 8))      ? OAUTH2
                                                                 : NONE;
            continue;
        }
        if (sec == NONE)
            continue;
        size_t k = 0;
        while (k < n && line[k] != '=' && line[k] != ':')
            k++;
        if (k == n)
            continue;
        size_t kl = k;
        while (kl && (line[kl - 1] == ' ' || line[kl - 1] == '\t'))
            kl--;
        const char *v = line + k + 1;
        size_t vl = n - k - 1;
#define KEY_IS(s) (kl == strlen(s) && !strncasecmp(line, s, kl))
        if (sec == CREDS && KEY_IS("gs_access_key_id"))
            set_field(&b->access_key, v, vl);
        else if (sec == CREDS && KEY_IS("gs_secret_access_key"))
            set_field(&b->secret, v, vl);
        else if (sec == CREDS && KEY_IS("gs_oauth2_refresh_token"))
            set_field(&b->refresh_token, v, vl);
        else if (sec == OAUTH2 && KEY_IS("client_id"))
            set_field(&b->client_id, v, vl);
        else if (sec == OAUTH2 && KEY_IS("client_secret"))
            set_field(&b->client_secret, v, vl);
#undef KEY_IS
    }
}

void vt__gs_boto_clear(struct vt_gs_boto *b)
{
    char **f[] = {&b->access_key, &b->secret, &b->refresh_token,
                  &b->client_id, &b->client_secret};
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
        if (*f[i]) {
            OPENSSL_cleanse(*f[i], strlen(*f[i]));
            free(*f[i]);
        }
        *f[i] = NULL;
    }
}

/* ---- token answers ---------------------------------------------------- */

vt_err vt__gs_parse_token(const char *body, size_t len, char **token,
                          long *expires_in)
{
    const char *p, *end = body + len;
    *token = body ? vt__json_get_string(body, len, "access_token") : NULL;
    *expires_in = 0;
    if (!*token || !**token) {
        free(*token);
        *token = NULL;
        return VT_EPROTO;
    }
    /* expires_in is a number, which vt__json_get_string does not read */
    p = memmem(body, len, "\"expires_in\"", 12);
    if (p) {
        p += 12;
        while (p < end && (*p == ' ' || *p == ':' || *p == '\t'))
            p++;
        long v = 0;
        while (p < end && isdigit((unsigned char)*p) && v < 100000000)
            v = v * 10 + (*p++ - '0');
        *expires_in = v;
    }
    return VT_OK;
}
