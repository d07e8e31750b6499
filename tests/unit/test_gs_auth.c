/* test_gs_auth.c: GCS credentials and signing (auth/gs_sign.c, gs_creds.c)
 * without a network: GOOG1 signatures against vectors computed
 * independently (Python's hmac/hashlib/base64 over the string to sign
 * GDAL 3.6 builds), the RFC 822 date, the service account's JWT (decoded
 * and its RS256 signature verified with the public half of a key made
 * here), the boto file's line rules, token answers (and both parsers on
 * garbage), and the options chain
 * for the modes that need no server (no-sign, HMAC, boto HMAC, the errors
 * GDAL words, path-specific options under /vsigs/). Token grants are
 * tested against the lab (tests/integration/test_backend_gs.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cpl_conv.h>
#include <cpl_vsi.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "auth/gs_auth.h"
#include "auth/sigv4.h" /* vt__http_date: the Date GOOG1 signs */
#include "fuzz_bytes.h"

#define SECRET "vsitune+Lab/GCS/Secret0123456789abcdefEX"

static void test_date(void **state)
{
    char d[VT_HTTP_DATE_LEN];
    (void)state;
    vt__http_date(1796183842LL, d);
    assert_string_equal(d, "Wed, 02 Dec 2026 03:57:22 GMT");
    vt__http_date(0, d);
    assert_string_equal(d, "Thu, 01 Jan 1970 00:00:00 GMT");
}

static void test_goog1_vectors(void **state)
{
    char *sts = NULL, *a;
    /* x-goog-* lines lowercased, trimmed and sorted; others left out */
    const char *h[] = {"X-Goog-User-Project:  proj ", "Range: bytes=0-1",
                       "x-goog-meta-a: 1", NULL};
    (void)state;

    a = vt__gs_goog1("GET", NULL, NULL, "Wed, 02 Dec 2026 03:57:22 GMT", NULL,
                     "/lab/dir/a%20b.bin", "KEY", SECRET, &sts);
    assert_non_null(a);
    assert_string_equal(sts, "GET\n\n\nWed, 02 Dec 2026 03:57:22 GMT\n"
                             "/lab/dir/a%20b.bin");
    assert_string_equal(a, "GOOG1 KEY:AjBrXxRdfwZ4z1fy2v1uDCaPyTw=");
    free(a);
    free(sts);
    a = vt__gs_goog1("HEAD", NULL, NULL, "Thu, 01 Jan 1970 00:00:00 GMT", h,
                     "/lab/", "KEY", SECRET, &sts);
    assert_string_equal(sts, "HEAD\n\n\nThu, 01 Jan 1970 00:00:00 GMT\n"
                             "x-goog-meta-a:1\nx-goog-user-project:proj\n"
                             "/lab/");
    assert_string_equal(a, "GOOG1 KEY:HgAjs/JVHpuTm1zoC+U9wFUeynw=");
    free(a);
    free(sts);
}

static unsigned char *unb64(const char *s, size_t n, int *outlen)
{
    unsigned char *o = malloc(n + 4);
    int l = EVP_DecodeBlock(o, (const unsigned char *)s, (int)n);
    while (n && s[n - 1] == '=') {
        n--;
        l--;
    }
    o[l] = '\0';
    *outlen = l;
    return o;
}

static void test_jwt(void **state)
{
    EVP_PKEY *key = EVP_RSA_gen(2048);
    BIO *bio = BIO_new(BIO_s_mem());
    char *pem = NULL, err[256] = "", *jwt, *d1, *d2;
    long plen;
    int l;
    (void)state;

    assert_non_null(key);
    assert_int_equal(PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL), 1);
    plen = BIO_get_mem_data(bio, &pem);
    pem = strndup(pem, (size_t)plen);
    jwt = vt__gs_jwt(pem, "a@b.iam", "scope1", "http://aud/t", 1000, 3600, err,
                     sizeof err);
    assert_non_null(jwt);
    d1 = strchr(jwt, '.');
    d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    assert_non_null(d2);
    unsigned char *h = unb64(jwt, (size_t)(d1 - jwt), &l);
    assert_string_equal((char *)h, "{\"alg\":\"RS256\",\"typ\":\"JWT\"}");
    unsigned char *c = unb64(d1 + 1, (size_t)(d2 - d1 - 1), &l);
    assert_string_equal((char *)c,
                        "{\"iss\": \"a@b.iam\", \"scope\": \"scope1\", \"aud\": "
                        "\"http://aud/t\", \"iat\": 1000, \"exp\": 4600}");
    unsigned char *sig = unb64(d2 + 1, strlen(d2 + 1), &l);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    assert_int_equal(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key), 1);
    assert_int_equal(EVP_DigestVerify(ctx, sig, (size_t)l,
                                      (const unsigned char *)jwt,
                                      (size_t)(d2 - jwt)), 1);
    /* a bad key: NULL and why */
    assert_null(vt__gs_jwt("-----BEGIN PRIVATE KEY-----\nAAAA\n", "a", "s",
                           "u", 1, 1, err, sizeof err));
    assert_non_null(strstr(err, "private key"));
    EVP_MD_CTX_free(ctx);
    free(h);
    free(c);
    free(sig);
    free(jwt);
    free(pem);
    BIO_free(bio);
    EVP_PKEY_free(key);
}

static void test_boto(void **state)
{
    struct vt_gs_boto b;
    const char *t = "[Credentials]\n"
                    "gs_access_key_id = AK\n"
                    "GS_Secret_Access_Key:  SK  \r\n"
                    "[Credentials] \n"       /* not exactly the header: */
                    "gs_oauth2_refresh_token = no\n" /* another section */
                    "[OAuth2]\n"
                    "client_id=CID\n"
                    "client_secret = CS\n"
                    "[Boto]\n"
                    "client_id = no\n";
    (void)state;
    vt__gs_boto_parse(t, strlen(t), &b);
    assert_string_equal(b.access_key, "AK");
    assert_string_equal(b.secret, "SK");
    assert_null(b.refresh_token);
    assert_string_equal(b.client_id, "CID");
    assert_string_equal(b.client_secret, "CS");
    vt__gs_boto_clear(&b);
    assert_null(b.access_key);
}

static void test_token_answer(void **state)
{
    char *t;
    long e;
    const char *ok = "{\"access_token\":\"ya29.x\",\"expires_in\": 3599,"
                     "\"token_type\":\"Bearer\"}";
    (void)state;
    assert_int_equal(vt__gs_parse_token(ok, strlen(ok), &t, &e), VT_OK);
    assert_string_equal(t, "ya29.x");
    assert_int_equal(e, 3599);
    free(t);
    assert_int_equal(vt__gs_parse_token("{\"error\":\"x\"}", 13, &t, &e),
                     VT_EPROTO);
    assert_null(t);
}

/* The parsers of outside input (a boto file, a token endpoint's answer)
 * on garbage made of their own fragments: bounded by the length given
 * (buffers of exactly that size, so ASan sees any overread), no crash. */
static void test_parsers_on_garbage(void **state)
{
    static const char *const frags[] = {
        "[Credentials]", "[OAuth2]", "\n", "\r\n", "=", ":", " ",
        "gs_access_key_id", "gs_secret_access_key", "gs_oauth2_refresh_token",
        "client_id", "client_secret", "{", "}", "\"access_token\"",
        "\"expires_in\"", "\"", "\\u00", "99999999999999999999", ","};
    uint32_t seed = 20;
    (void)state;
    for (int i = 0; i < 20000; i++) {
        size_t n;
        char *b = fuzz_bytes(&seed, 200, frags, sizeof(frags) / sizeof(frags[0]),
                             &n);
        struct vt_gs_boto bt;
        char *t = NULL;
        long e;
        vt__gs_boto_parse(b, n, &bt);
        vt__gs_boto_clear(&bt);
        if (vt__gs_parse_token(b, n, &t, &e) == VT_OK) {
            assert_non_null(t);
            assert_true(e >= 0);
        }
        free(t);
        free(b);
    }
}

static const char *const chain_opts[] = {
    "GS_NO_SIGN_REQUEST", "GS_SECRET_ACCESS_KEY", "GS_ACCESS_KEY_ID",
    "GS_OAUTH2_REFRESH_TOKEN", "GS_OAUTH2_CLIENT_ID", "GS_OAUTH2_CLIENT_SECRET",
    "GOOGLE_APPLICATION_CREDENTIALS", "GS_OAUTH2_PRIVATE_KEY",
    "GS_OAUTH2_PRIVATE_KEY_FILE", "GS_OAUTH2_CLIENT_EMAIL", NULL};

static int chain_setup(void **state)
{
    (void)state;
    for (size_t i = 0; chain_opts[i]; i++)
        CPLSetConfigOption(chain_opts[i], NULL);
    CPLSetConfigOption("CPL_GS_CREDENTIALS_FILE", "");
    CPLSetConfigOption("CPL_GCE_SKIP", "YES");
    VSIClearPathSpecificOptions(NULL);
    return 0;
}

static void test_chain(void **state)
{
    vt_gs_creds c;
    char err[1024], id1[80];
    (void)state;

    /* nothing configured: GDAL's message, naming the boto file ("" here) */
    assert_int_equal(vt__gs_creds_get("b/k", &c, err, sizeof err), VT_ECREDS);
    assert_string_equal(err,
                        "GS_SECRET_ACCESS_KEY+GS_ACCESS_KEY_ID, "
                        "GS_OAUTH2_REFRESH_TOKEN or GOOGLE_APPLICATION_CREDENTIALS "
                        "or GS_OAUTH2_PRIVATE_KEY+GS_OAUTH2_CLIENT_EMAIL and , or "
                        "GS_NO_SIGN_REQUEST=YES configuration options not defined");

    CPLSetConfigOption("GS_SECRET_ACCESS_KEY", SECRET);
    assert_int_equal(vt__gs_creds_get("b/k", &c, err, sizeof err), VT_ECREDS);
    assert_string_equal(err, "GS_ACCESS_KEY_ID configuration option not defined");
    CPLSetConfigOption("GS_ACCESS_KEY_ID", "KEY");
    assert_int_equal(vt__gs_creds_get("b/k", &c, err, sizeof err), VT_OK);
    assert_int_equal(c.mode, VT_GS_HMAC);
    assert_string_equal(c.access_key, "KEY");
    assert_non_null(strstr(c.identity, "signed:"));
    assert_null(strstr(c.identity, "KEY"));
    snprintf(id1, sizeof id1, "%s", c.identity);
    vt__gs_creds_clear(&c);

    /* another secret, another identity; no-sign wins over everything */
    CPLSetConfigOption("GS_SECRET_ACCESS_KEY", "other");
    assert_int_equal(vt__gs_creds_get("b/k", &c, err, sizeof err), VT_OK);
    assert_string_not_equal(c.identity, id1);
    vt__gs_creds_clear(&c);
    VSISetPathSpecificOption("/vsigs/nb", "GS_NO_SIGN_REQUEST", "YES");
    assert_int_equal(vt__gs_creds_get("nb/k", &c, err, sizeof err), VT_OK);
    assert_int_equal(c.mode, VT_GS_NOSIGN);
    assert_string_equal(c.identity, "anonymous");
    vt__gs_creds_clear(&c);
    /* the path-specific option is /vsigs/'s, not /vsis3/'s */
    VSISetPathSpecificOption("/vsis3/b", "GS_NO_SIGN_REQUEST", "YES");
    assert_int_equal(vt__gs_creds_get("b/k", &c, err, sizeof err), VT_OK);
    assert_int_equal(c.mode, VT_GS_HMAC);
    vt__gs_creds_clear(&c);

    /* refresh token: client id and secret both or none */
    chain_setup(state);
    CPLSetConfigOption("GS_OAUTH2_REFRESH_TOKEN", "rt");
    CPLSetConfigOption("GS_OAUTH2_CLIENT_ID", "cid");
    assert_int_equal(vt__gs_creds_get("b/k", &c, err, sizeof err), VT_ECREDS);
    assert_string_equal(err, "Either both or none of GS_OAUTH2_CLIENT_ID and "
                             "GS_OAUTH2_CLIENT_SECRET must be set");
    /* a private key without an email */
    chain_setup(state);
    CPLSetConfigOption("GS_OAUTH2_PRIVATE_KEY", "x");
    assert_int_equal(vt__gs_creds_get("b/k", &c, err, sizeof err), VT_ECREDS);
    assert_string_equal(err, "GS_OAUTH2_CLIENT_EMAIL not defined");
    chain_setup(state);
}

static void test_boto_file(void **state)
{
    char path[] = "/tmp/test_gs_botoXXXXXX", err[512];
    int fd = mkstemp(path);
    vt_gs_creds c;
    const char *t = "[Credentials]\ngs_access_key_id = BK\n"
                    "gs_secret_access_key = BS\n";
    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(write(fd, t, strlen(t)), (int)strlen(t));
    close(fd);
    CPLSetConfigOption("CPL_GS_CREDENTIALS_FILE", path);
    assert_int_equal(vt__gs_creds_get("b/k", &c, err, sizeof err), VT_OK);
    assert_int_equal(c.mode, VT_GS_HMAC);
    assert_string_equal(c.access_key, "BK");
    assert_string_equal(c.secret, "BS");
    assert_string_equal(c.source, "boto");
    vt__gs_creds_clear(&c);
    CPLSetConfigOption("CPL_GS_CREDENTIALS_FILE", "");
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_date),
        cmocka_unit_test(test_goog1_vectors),
        cmocka_unit_test(test_jwt),
        cmocka_unit_test(test_boto),
        cmocka_unit_test(test_token_answer),
        cmocka_unit_test(test_parsers_on_garbage),
        cmocka_unit_test_setup(test_chain, chain_setup),
        cmocka_unit_test_setup(test_boto_file, chain_setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
