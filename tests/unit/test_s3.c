/* test_s3.c: S3 addressing, request building and error parsing (s3.c,
 * xmlscan.c), without a network: what vt__s3_build_get would send (URL,
 * headers, signature over exactly the path sent), the status mapping, and
 * the error-body scanner fed well-formed, truncated and random bytes.
 * vt__s3_get's region redirect needs a server: tests/integration covers it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_vsi.h>

#include "auth/creds.h"
#include "compat/gdal_error.h"
#include "compat/gdal_release.h"
#include "backends/s3/s3.h"
#include "auth/sigv4.h"
#include "base/xmlscan.h"

#include "fuzz_bytes.h"

static const char *all_opts[] = {
    "AWS_S3_ENDPOINT", "AWS_HTTPS", "AWS_VIRTUAL_HOSTING", "AWS_REGION",
    "AWS_DEFAULT_REGION", "AWS_REQUEST_PAYER", "AWS_NO_SIGN_REQUEST",
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_TIMESTAMP", "GDAL_HTTP_HEADERS",
    "GDAL_HTTP_HEADER_FILE", NULL};

/* Every option this test touches set to "" (which masks the environment),
 * then the test's own keys. */
static int setup(void **state)
{
    (void)state;
    for (int i = 0; all_opts[i]; i++)
        CPLSetConfigOption(all_opts[i], "");
    CPLSetConfigOption("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials");
    CPLSetConfigOption("CPL_AWS_CREDENTIALS_FILE", "/nonexistent/credentials");
    VSIClearPathSpecificOptions(NULL);
    vt__s3_forget_routes();
    CPLSetConfigOption("AWS_CONFIG_FILE", "/nonexistent/config");
    CPLSetConfigOption("AWS_EC2_METADATA_DISABLED", "YES");
    CPLSetConfigOption("AWS_ACCESS_KEY_ID", "AKIDTEST");
    CPLSetConfigOption("AWS_SECRET_ACCESS_KEY", "SECRETTEST");
    vt__creds_reset();
    return 0;
}

/* The value of header name in a built request, or NULL. */
static const char *hdr(const vt_s3_request *r, const char *name)
{
    size_t n = strlen(name);
    for (char **h = r->headers; *h; h++)
        if (!strncasecmp(*h, name, n) && (*h)[n] == ':')
            return *h + n + 2;
    return NULL;
}

/* Recompute the signature from what the request carries (the URL's path,
 * the headers its Authorization lists as signed) and compare. */
static void check_signature(const vt_s3_request *r, const char *region)
{
    const char *auth = hdr(r, "Authorization");
    const char *hs[16];
    size_t n = 0;
    char signed_list[256];
    assert_non_null(auth);
    const char *sh = strstr(auth, "SignedHeaders=");
    assert_non_null(sh);
    snprintf(signed_list, sizeof(signed_list), ";%.*s;",
             (int)strcspn(sh + 14, ","), sh + 14);
    for (char **h = r->headers; *h; h++) {
        char name[64];
        size_t k = strcspn(*h, ":");
        snprintf(name, sizeof(name), ";%.*s;", (int)k, *h);
        for (char *c = name; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        if (strstr(signed_list, name))
            hs[n++] = *h;
    }
    hs[n] = NULL;
    const char *path = strchr(strstr(r->url, "://") + 3, '/');
    vt_sigv4_input in = {
        .method = "GET", .path = path, .headers = hs,
        .payload_hash = hdr(r, "x-amz-content-sha256"),
        .amz_date = hdr(r, "x-amz-date"), .region = region, .service = "s3",
        .access_key = "AKIDTEST", .secret_key = "SECRETTEST",
    };
    vt_sigv4_output out;
    assert_int_equal(vt__sigv4_sign(&in, &out), VT_OK);
    assert_string_equal(out.authorization, auth);
    vt__sigv4_output_clear(&out);
}

static void test_split(void **state)
{
    (void)state;
    char *b, *k;
    assert_int_equal(vt__s3_split("bucket/dir/k.tif", &b, &k), VT_OK);
    assert_string_equal(b, "bucket");
    assert_string_equal(k, "dir/k.tif");
    free(b);
    free(k);
    assert_int_equal(vt__s3_split("bucket", &b, &k), VT_OK);
    assert_string_equal(b, "bucket");
    assert_string_equal(k, "");
    free(b);
    free(k);
    assert_int_equal(vt__s3_split("bucket/", &b, &k), VT_OK);
    assert_string_equal(k, "");
    free(b);
    free(k);
    assert_int_equal(vt__s3_split("", &b, &k), VT_EINVAL);
    assert_null(b);
    assert_null(k);
    assert_int_equal(vt__s3_split("/", &b, &k), VT_EINVAL);
    assert_int_equal(vt__s3_split(NULL, &b, &k), VT_EINVAL);
}

static void test_status_err(void **state)
{
    (void)state;
    static const struct {
        long st;
        vt_err e;
    } t[] = {{200, VT_OK}, {206, VT_OK}, {301, VT_EREDIRECT}, {307, VT_EREDIRECT},
             {400, VT_EHTTP}, {403, VT_EACCESS}, {404, VT_ENOTFOUND},
             {409, VT_EHTTP}, {412, VT_ECHANGED}, {416, VT_ERANGE},
             {429, VT_ETRANSIENT}, {500, VT_ETRANSIENT}, {503, VT_ETRANSIENT},
             {599, VT_ETRANSIENT}, {304, VT_EHTTP}, {0, VT_EHTTP}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        assert_int_equal(vt__s3_status_err(t[i].st), t[i].e);
}

static void test_parse_error(void **state)
{
    (void)state;
    char *code, *msg;
    const char *x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>"
                    "NoSuchKey</Code><Message>The specified key does not exist: "
                    "a&amp;b &lt;c&gt; &#233;&#x4E2D;</Message><Key>k</Key></Error>";
    vt__s3_parse_error(x, strlen(x), &code, &msg);
    assert_string_equal(code, "NoSuchKey");
    assert_string_equal(msg, "The specified key does not exist: a&b <c> \xc3\xa9\xe4\xb8\xad");
    free(code);
    free(msg);
    /* Length-bounded: a body cut inside the message gives no message. */
    vt__s3_parse_error(x, (size_t)(strstr(x, "</Message>") - x) + 3, &code, &msg);
    assert_string_equal(code, "NoSuchKey");
    assert_null(msg);
    free(code);
    /* Look-alike tags are not matched; attributes and empty elements are. */
    const char *y = "<CodeX>no</CodeX><Code a=\"1\">yes</Code><Message/>";
    vt__s3_parse_error(y, strlen(y), &code, &msg);
    assert_string_equal(code, "yes");
    assert_string_equal(msg, "");
    free(code);
    free(msg);
    static const char *bad[] = {"", "<", "<Code", "<Code>", "<Code>abc",
                                "<Code>abc</Cod", "</Code><Code", "&#;<Code>&#xFFFFFFFFF;</Code>",
                                "<Code \xff", "<Message>&#0;</Message>"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        vt__s3_parse_error(bad[i], strlen(bad[i]), &code, &msg);
        assert_true(code == NULL || strlen(code) < 32);
        free(code);
        free(msg);
    }
    vt__s3_parse_error(NULL, 0, &code, &msg);
    assert_null(code);
    assert_null(msg);
    /* Over the cap: refused rather than copied. */
    size_t big = VT_XML_MAX_VALUE + 100;
    char *huge = malloc(big + 32);
    memcpy(huge, "<Code>", 6);
    memset(huge + 6, 'A', big);
    memcpy(huge + 6 + big, "</Code>", 7);
    vt__s3_parse_error(huge, big + 13, &code, &msg);
    assert_null(code);
    free(huge);
}

/* Random and mutated bytes (deterministic generator): no crash, no read out
 * of bounds (the buffers are exactly len long; run under ASan in CI). */
static void test_parse_error_garbage(void **state)
{
    (void)state;
    uint32_t seed = 12345;
    static const char *frags[] = {"<Code>", "</Code>", "<Message>", "</Message>",
                                  "&amp;", "&#x41;", "&", "<", ">", "/", "Code", " a=b"};
    for (int iter = 0; iter < 20000; iter++) {
        size_t len;
        char *buf = fuzz_bytes(&seed, 96, frags, sizeof(frags) / sizeof(frags[0]), &len);
        char *code, *msg;
        vt__s3_parse_error(buf, len, &code, &msg);
        if (code)
            assert_true(strlen(code) <= len);
        if (msg)
            assert_true(strlen(msg) <= len);
        free(code);
        free(msg);
        free(buf);
    }
}

/* S3's judge of its error answers (s3_transient.c): a 400 RequestTimeout
 * is worth asking again; another code, another status, or a code past the
 * scanned start is not. */
static void test_answer_transient(void **state)
{
    static const char rt[] = "<?xml version=\"1.0\"?><Error><Code>"
                             "RequestTimeout</Code><Message>Your socket "
                             "connection ...</Message></Error>";
    static const char bad[] = "<Error><Code>InvalidArgument</Code></Error>";
    char late[5000];
    (void)state;

    assert_true(vt__s3_answer_transient(400, (const unsigned char *)rt,
                                        sizeof(rt) - 1));
    assert_false(vt__s3_answer_transient(400, (const unsigned char *)bad,
                                         sizeof(bad) - 1));
    assert_false(vt__s3_answer_transient(403, (const unsigned char *)rt,
                                         sizeof(rt) - 1));
    assert_false(vt__s3_answer_transient(400, NULL, 0));
    assert_false(vt__s3_answer_transient(400, (const unsigned char *)rt, 10));
    memset(late, ' ', sizeof(late));
    memcpy(late + 4090, "<Code>RequestTimeout</Code>", 27);
    assert_false(vt__s3_answer_transient(400, (const unsigned char *)late,
                                         sizeof(late)));
}

/* Every S3 request carries S3's judge, so the engine retries a 400
 * RequestTimeout as it always did. */
static void test_build_sets_answer_judge(void **state)
{
    vt_s3_request r;
    char err[256];
    (void)state;

    assert_int_equal(vt__s3_build_get("my-bucket", "k.tif", 0, 10, NULL, &r,
                                      err, sizeof(err)),
                     VT_OK);
    assert_ptr_equal(r.req.answer_transient, vt__s3_answer_transient);
    vt__s3_request_clear(&r);
}

static void test_build_virtual_host(void **state)
{
    (void)state;
    vt_s3_request r;
    char err[256];
    assert_int_equal(vt__s3_build_get("my-bucket", "dir/a b+c%#?\xc3\xa9.tif", 100, 10,
                                      NULL, &r, err, sizeof(err)),
                     VT_OK);
    assert_string_equal(r.url, "https://my-bucket.s3.amazonaws.com/dir/"
                               "a%20b%2Bc%25%23%3F%C3%A9.tif");
    assert_string_equal(hdr(&r, "Host"), "my-bucket.s3.amazonaws.com");
    assert_string_equal(hdr(&r, "Range"), "bytes=100-109");
    assert_string_equal(hdr(&r, "x-amz-content-sha256"),
                        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_null(hdr(&r, "x-amz-security-token"));
    assert_ptr_equal(r.req.url, r.url);
    assert_int_equal(r.req.expect_len, 10);
    assert_string_equal(r.req.method, "GET");
    const char *auth = hdr(&r, "Authorization");
    assert_non_null(strstr(auth, "Credential=AKIDTEST/"));
    /* GDAL's set: Range is not signed. */
    assert_non_null(strstr(auth, "/us-east-1/s3/aws4_request,SignedHeaders="
                                 "host;x-amz-content-sha256;x-amz-date,"));
    check_signature(&r, "us-east-1");
    vt__s3_request_clear(&r);
    assert_null(r.url);
}

static void test_build_path_style(void **state)
{
    (void)state;
    vt_s3_request r;
    char err[256];
    /* Dots: path style, like GDAL. */
    assert_int_equal(vt__s3_build_get("my.bucket", "k", 0, 0, NULL, &r, err,
                                      sizeof(err)), VT_OK);
    assert_string_equal(r.url, "https://s3.amazonaws.com/my.bucket/k");
    assert_null(hdr(&r, "Range"));
    assert_int_equal(r.req.expect_len, 0);
    check_signature(&r, "us-east-1");
    vt__s3_request_clear(&r);
    /* Uppercase / underscore: not DNS-compatible. */
    assert_int_equal(vt__s3_build_get("My_Bucket", "k", 0, 1, NULL, &r, err,
                                      sizeof(err)), VT_OK);
    assert_string_equal(r.url, "https://s3.amazonaws.com/My_Bucket/k");
    vt__s3_request_clear(&r);
    /* Explicit option, custom endpoint with scheme and port, region. */
    CPLSetConfigOption("AWS_VIRTUAL_HOSTING", "FALSE");
    CPLSetConfigOption("AWS_S3_ENDPOINT", "http://localhost:9000/");
    CPLSetConfigOption("AWS_REGION", "eu-west-3");
    assert_int_equal(vt__s3_build_get("bucket", "a/b", 5, 5, NULL, &r, err,
                                      sizeof(err)), VT_OK);
    assert_string_equal(r.url, "http://localhost:9000/bucket/a/b");
    assert_string_equal(hdr(&r, "Host"), "localhost:9000");
    assert_non_null(strstr(hdr(&r, "Authorization"), "/eu-west-3/s3/aws4_request"));
    check_signature(&r, "eu-west-3");
    vt__s3_request_clear(&r);
    /* IP literal endpoints are always path style. */
    CPLSetConfigOption("AWS_VIRTUAL_HOSTING", "");
    CPLSetConfigOption("AWS_S3_ENDPOINT", "127.0.0.1:9000");
    CPLSetConfigOption("AWS_HTTPS", "NO");
    assert_int_equal(vt__s3_build_get("bucket", "k", 0, 1, NULL, &r, err,
                                      sizeof(err)), VT_OK);
    assert_string_equal(r.url, "http://127.0.0.1:9000/bucket/k");
    vt__s3_request_clear(&r);
    /* No endpoint, non-default region: regional endpoint. */
    CPLSetConfigOption("AWS_S3_ENDPOINT", "");
    CPLSetConfigOption("AWS_HTTPS", "");
    assert_int_equal(vt__s3_build_get("bucket", "k", 0, 1, NULL, &r, err,
                                      sizeof(err)), VT_OK);
    assert_string_equal(r.url, "https://bucket.s3.eu-west-3.amazonaws.com/k");
    vt__s3_request_clear(&r);
    /* A bad endpoint is a clear error, not a malformed URL. */
    CPLSetConfigOption("AWS_S3_ENDPOINT", "host/with/path");
    assert_int_equal(vt__s3_build_get("bucket", "k", 0, 1, NULL, &r, err,
                                      sizeof(err)), VT_EINVAL);
    assert_non_null(strstr(err, "AWS_S3_ENDPOINT"));
    assert_null(r.url);
}

static void test_build_headers(void **state)
{
    (void)state;
    vt_s3_request r;
    char err[256];
    CPLSetConfigOption("AWS_SESSION_TOKEN", "TOKEN/+=");
    CPLSetConfigOption("AWS_REQUEST_PAYER", "requester");
    assert_int_equal(vt__s3_build_get("bucket", "k", 0, 16384, "\"abc\"", &r, err,
                                      sizeof(err)), VT_OK);
    assert_string_equal(hdr(&r, "x-amz-security-token"), "TOKEN/+=");
    assert_string_equal(hdr(&r, "x-amz-request-payer"), "requester");
    assert_string_equal(hdr(&r, "If-Match"), "\"abc\"");
    assert_string_equal(hdr(&r, "Range"), "bytes=0-16383");
    assert_non_null(strstr(hdr(&r, "Authorization"),
                           "SignedHeaders=host;x-amz-content-sha256;"
                           "x-amz-date;x-amz-request-payer;x-amz-security-token,"));
    check_signature(&r, "us-east-1");
    vt__s3_request_clear(&r);
    /* A header value with a line break is refused. */
    assert_int_equal(vt__s3_build_get("bucket", "k", 0, 1, "\"a\"\r\nX: y", &r, err,
                                      sizeof(err)), VT_EINVAL);
    assert_true(err[0] != '\0');
    /* So is one from the configuration (vt__breq_add): a token or a payer
     * with a line break would add a header of its own. */
    CPLSetConfigOption("AWS_REQUEST_PAYER", "requester\r\nX-Evil: 1");
    assert_int_equal(vt__s3_build_get("bucket", "k", 0, 1, NULL, &r, err,
                                      sizeof(err)), VT_EINVAL);
    CPLSetConfigOption("AWS_REQUEST_PAYER", "requester");
    CPLSetConfigOption("AWS_SESSION_TOKEN", "TOKEN\nX-Evil: 1");
    vt__creds_reset();
    assert_int_equal(vt__s3_build_get("bucket", "k", 0, 1, NULL, &r, err,
                                      sizeof(err)), VT_EINVAL);
    CPLSetConfigOption("AWS_SESSION_TOKEN", "");
    vt__creds_reset();
    /* Anonymous: nothing signed. */
    CPLSetConfigOption("AWS_NO_SIGN_REQUEST", "YES");
    assert_int_equal(vt__s3_build_get("bucket", "k", 0, 1, NULL, &r, err,
                                      sizeof(err)), VT_OK);
    assert_null(hdr(&r, "Authorization"));
    assert_null(hdr(&r, "x-amz-security-token"));
    assert_string_equal(hdr(&r, "x-amz-request-payer"), "requester");
    vt__s3_request_clear(&r);
}

static void test_no_credentials(void **state)
{
    (void)state;
    vt_s3_request r;
    char err[1024], words[1024];
    CPLSetConfigOption("AWS_ACCESS_KEY_ID", "");
    CPLSetConfigOption("AWS_SECRET_ACCESS_KEY", "");
    assert_int_equal(vt__s3_build_get("bucket", "k", 0, 1, NULL, &r, err,
                                      sizeof(err)), VT_ECREDS);
    /* GDAL's words, those of the release built against (up to the file
     * they name) */
    vt__gdal_no_creds_words(words, sizeof(words), "/f");
    assert_true(strlen(err) > 40);
    assert_int_equal(strncmp(err, words, strcspn(words, "/")), 0);
    assert_null(r.url);
    assert_null(r.headers);
}

static void test_region_for(void **state)
{
    (void)state;
    char *r = vt__s3_region_for("b/k");
    assert_string_equal(r, "us-east-1");
    free(r);
    CPLSetConfigOption("AWS_REGION", "eu-north-1");
    r = vt__s3_region_for("b/k");
    assert_string_equal(r, "eu-north-1");
    free(r);
    /* GDAL's order: AWS_DEFAULT_REGION overrides AWS_REGION. */
    CPLSetConfigOption("AWS_DEFAULT_REGION", "ap-south-1");
    r = vt__s3_region_for("b/k");
    assert_string_equal(r, "ap-south-1");
    free(r);
    /* The profile's region in the AWS config file applies when credentials
     * come from the shared files, and then beats AWS_REGION (measured on
     * stock GDAL 3.6.2). */
    char path[] = "/tmp/test_s3_config.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *cfgtext = "[default]\nregion = eu-south-1\n[profile p2]\nregion=ap-east-1\n";
    assert_int_equal(write(fd, cfgtext, strlen(cfgtext)), (ssize_t)strlen(cfgtext));
    close(fd);
    CPLSetConfigOption("AWS_CONFIG_FILE", path);
    CPLSetConfigOption("AWS_DEFAULT_REGION", "");
    r = vt__s3_region_for("b/k");
    assert_string_equal(r, "eu-north-1"); /* env keys: no profile region */
    free(r);
    CPLSetConfigOption("AWS_SECRET_ACCESS_KEY", "");
    r = vt__s3_region_for("b/k");
    assert_string_equal(r, "eu-south-1");
    free(r);
    CPLSetConfigOption("AWS_PROFILE", "p2");
    r = vt__s3_region_for("b/k");
    assert_string_equal(r, "ap-east-1");
    free(r);
    /* Path-specific: per bucket. */
    VSISetPathSpecificOption("/vsis3/other", "AWS_DEFAULT_REGION", "sa-east-1");
    r = vt__s3_region_for("other/k");
    assert_string_equal(r, "sa-east-1");
    free(r);
    VSIClearPathSpecificOptions(NULL);
    unlink(path);
    CPLSetConfigOption("AWS_PROFILE", "");
    CPLSetConfigOption("AWS_SECRET_ACCESS_KEY", "SECRETTEST");
    CPLSetConfigOption("AWS_CONFIG_FILE", "/nonexistent/config");
    vt__creds_reset();

    /* A malformed region is a clear error, not a malformed signature. */
    vt_s3_request rq;
    char err[256];
    CPLSetConfigOption("AWS_REGION", "EU North");
    assert_int_equal(vt__s3_build_get("b", "k", 0, 1, NULL, &rq, err, sizeof(err)),
                     VT_EINVAL);
    assert_non_null(strstr(err, "AWS_REGION 'EU North'"));
    assert_null(rq.url);
}

/* With AWS_TIMESTAMP fixed, the Authorization is GDAL 3.6's to the byte:
 * the signatures below are the ones GDAL's own autotest (gcore/vsis3.py,
 * get_s3_fake_bucket_resource_method and friends) expects from stock GDAL
 * on port 8080. A Range header does not change them: GDAL signs none. */
static void expect_gdal_auth(const char *bucket, const char *key, uint64_t len,
                             const char *signed_hdrs, const char *sig)
{
    vt_s3_request r;
    char err[512], want[512];
    assert_int_equal(vt__s3_build_get(bucket, key, 0, len, NULL, &r, err,
                                      sizeof(err)), VT_OK);
    snprintf(want, sizeof(want),
             "AWS4-HMAC-SHA256 Credential=AWS_ACCESS_KEY_ID/20150101/"
             "us-east-1/s3/aws4_request,SignedHeaders=%s,Signature=%s",
             signed_hdrs, sig);
    assert_string_equal(hdr(&r, "Authorization"), want);
    assert_string_equal(hdr(&r, "x-amz-date"), "20150101T000000Z");
    vt__s3_request_clear(&r);
}

static void test_gdal_signatures(void **state)
{
    (void)state;
    CPLSetConfigOption("AWS_S3_ENDPOINT", "127.0.0.1:8080");
    CPLSetConfigOption("AWS_HTTPS", "NO");
    CPLSetConfigOption("AWS_VIRTUAL_HOSTING", "NO");
    CPLSetConfigOption("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID");
    CPLSetConfigOption("AWS_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY");
    CPLSetConfigOption("AWS_TIMESTAMP", "20150101T000000Z");
    expect_gdal_auth("s3_fake_bucket", "resource", 0,
                     "host;x-amz-content-sha256;x-amz-date",
                     "38901846b865b12ac492bc005bb394ca8d60c098b68db57c084fac686a932f9e");
    expect_gdal_auth("s3_fake_bucket", "resource", 65536,
                     "host;x-amz-content-sha256;x-amz-date",
                     "38901846b865b12ac492bc005bb394ca8d60c098b68db57c084fac686a932f9e");
    /* The same options given as path-specific ones (gdal.SetCredential). */
    CPLSetConfigOption("AWS_TIMESTAMP", "");
    CPLSetConfigOption("AWS_ACCESS_KEY_ID", "");
    CPLSetConfigOption("AWS_SECRET_ACCESS_KEY", "");
    VSISetPathSpecificOption("/vsis3/", "AWS_TIMESTAMP", "20150101T000000Z");
    VSISetPathSpecificOption("/vsis3/", "AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID");
    VSISetPathSpecificOption("/vsis3/", "AWS_SECRET_ACCESS_KEY",
                             "AWS_SECRET_ACCESS_KEY");
    VSISetPathSpecificOption("/vsis3/s3_fake_bucket_with_session_token",
                             "AWS_SESSION_TOKEN", "AWS_SESSION_TOKEN");
    expect_gdal_auth("s3_fake_bucket_with_session_token", "resource", 0,
                     "host;x-amz-content-sha256;x-amz-date;x-amz-security-token",
                     "464a21835038b4f4d292b6463b8a005b9aaa980513aa8c42fc170abb733dce85");
    VSISetPathSpecificOption("/vsis3/s3_fake_bucket_with_requester_pays",
                             "AWS_REQUEST_PAYER", "requester");
    expect_gdal_auth("s3_fake_bucket_with_requester_pays", "resource", 16384,
                     "host;x-amz-content-sha256;x-amz-date;x-amz-request-payer",
                     "cf713a394e1b629ac0e468d60d3d4a12f5236fd72d21b6005c758b0dfc7049cd");
    VSIClearPathSpecificOptions(NULL);
}

/* GDAL_HTTP_HEADER_FILE lines, then GDAL_HTTP_HEADERS ("\r\n" or ','),
 * sent as stock GDAL 3.6.2 sends them (measured), x-amz-* ones signed. */
static void test_user_headers(void **state)
{
    (void)state;
    vt_s3_request r;
    char err[512];
    char path[] = "/tmp/test_s3_hdr.XXXXXX";
    int fd = mkstemp(path);
    const char *text = "X-File: 1\nbogus line\n  X-File2: two  \n";
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    CPLSetConfigOption("GDAL_HTTP_HEADER_FILE", path);
    CPLSetConfigOption("GDAL_HTTP_HEADERS", "X-A: 1\r\nX-Amz-Meta-Foo: bar");
    assert_int_equal(vt__s3_build_get("bucket", "k", 0, 1, NULL, &r, err,
                                      sizeof(err)), VT_OK);
    assert_string_equal(r.headers[0], "X-File: 1");
    assert_string_equal(r.headers[1], "X-File2: two");
    assert_string_equal(r.headers[2], "X-A: 1");
    assert_string_equal(r.headers[3], "X-Amz-Meta-Foo: bar");
    /* The user's x-amz-* headers are signed, as GDAL signs them (each one a
     * header of its own, where GDAL 3.6 signs a "\r\n" list as one). */
    assert_non_null(strstr(hdr(&r, "Authorization"),
                           "SignedHeaders=host;x-amz-content-sha256;x-amz-date;"
                           "x-amz-meta-foo,"));
    check_signature(&r, "us-east-1");
    vt__s3_request_clear(&r);
    unlink(path);
    /* Comma-separated; a header file that cannot be read is GDAL's error
     * (CE_Failure, CPLE_FileIO) and the request goes on without it. */
    CPLSetConfigOption("GDAL_HTTP_HEADERS", "X-A: 1,\"X-B: 2, with comma\"");
    CPLErrorReset();
    CPLPushErrorHandler(CPLQuietErrorHandler);
    assert_int_equal(vt__s3_build_get("bucket", "k", 0, 1, NULL, &r, err,
                                      sizeof(err)), VT_OK);
    CPLPopErrorHandler();
    assert_int_equal(CPLGetLastErrorType(), CE_Failure);
    assert_int_equal(CPLGetLastErrorNo(), CPLE_FileIO);
    assert_non_null(strstr(CPLGetLastErrorMsg(), "Cannot read /tmp/test_s3_hdr."));
    assert_string_equal(r.headers[0], "X-A: 1");
    assert_string_equal(r.headers[1], "X-B: 2, with comma");
    vt__s3_request_clear(&r);
    CPLSetConfigOption("GDAL_HTTP_HEADER_FILE", "");
    /* Per bucket from GDAL 3.7 (CPLHTTPGetOptionsFromEnv(pszFilename));
     * GDAL 3.6 reads the configuration only: not sent. */
    CPLSetConfigOption("GDAL_HTTP_HEADERS", "");
    VSISetPathSpecificOption("/vsis3/withhdr", "GDAL_HTTP_HEADERS", "X-Path: yes");
    vt__gdal_release_set(3060200);
    assert_int_equal(vt__s3_build_get("withhdr", "k", 0, 1, NULL, &r, err,
                                      sizeof(err)), VT_OK);
    assert_null(hdr(&r, "X-Path"));
    vt__s3_request_clear(&r);
    vt__gdal_release_set(3070000);
    assert_int_equal(vt__s3_build_get("withhdr", "k", 0, 1, NULL, &r, err,
                                      sizeof(err)), VT_OK);
    assert_non_null(hdr(&r, "X-Path"));
    assert_string_equal(hdr(&r, "X-Path"), "yes");
    assert_string_equal(r.req.opts_path, "withhdr/k"); /* the engine's too */
    vt__s3_request_clear(&r);
    assert_int_equal(vt__s3_build_get("other", "k", 0, 1, NULL, &r, err,
                                      sizeof(err)), VT_OK);
    assert_null(hdr(&r, "X-Path"));
    vt__s3_request_clear(&r);
    vt__gdal_release_set(0);
    VSIClearPathSpecificOptions(NULL);
}

/* Per-bucket endpoints, and the endpoint base the object identity uses. */
static void test_endpoint_per_path(void **state)
{
    (void)state;
    vt_s3_request r;
    char err[512], *base;
    CPLSetConfigOption("AWS_S3_ENDPOINT", "127.0.0.1:1");
    CPLSetConfigOption("AWS_HTTPS", "NO");
    VSISetPathSpecificOption("/vsis3/b2", "AWS_S3_ENDPOINT", "minio.local:9000");
    VSISetPathSpecificOption("/vsis3/b2", "AWS_VIRTUAL_HOSTING", "NO");
    assert_int_equal(vt__s3_build_get("b1", "k", 0, 1, NULL, &r, err,
                                      sizeof(err)), VT_OK);
    assert_string_equal(r.url, "http://127.0.0.1:1/b1/k");
    vt__s3_request_clear(&r);
    assert_int_equal(vt__s3_build_get("b2", "k", 0, 1, NULL, &r, err,
                                      sizeof(err)), VT_OK);
    assert_string_equal(r.url, "http://minio.local:9000/b2/k");
    vt__s3_request_clear(&r);
    base = vt__s3_endpoint_base("b1/k.tif");
    assert_string_equal(base, "http://127.0.0.1:1/b1");
    free(base);
    base = vt__s3_endpoint_base("b2/k.tif");
    assert_string_equal(base, "http://minio.local:9000/b2");
    free(base);
    CPLSetConfigOption("AWS_S3_ENDPOINT", "");
    CPLSetConfigOption("AWS_HTTPS", "");
    base = vt__s3_endpoint_base("my-bucket/k.tif");
    assert_string_equal(base, "https://my-bucket.s3.amazonaws.com");
    free(base);
    assert_null(vt__s3_endpoint_base(""));
    VSIClearPathSpecificOptions(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_split, setup),
        cmocka_unit_test_setup(test_status_err, setup),
        cmocka_unit_test_setup(test_parse_error, setup),
        cmocka_unit_test_setup(test_parse_error_garbage, setup),
        cmocka_unit_test_setup(test_answer_transient, setup),
        cmocka_unit_test_setup(test_build_sets_answer_judge, setup),
        cmocka_unit_test_setup(test_build_virtual_host, setup),
        cmocka_unit_test_setup(test_build_path_style, setup),
        cmocka_unit_test_setup(test_build_headers, setup),
        cmocka_unit_test_setup(test_no_credentials, setup),
        cmocka_unit_test_setup(test_region_for, setup),
        cmocka_unit_test_setup(test_gdal_signatures, setup),
        cmocka_unit_test_setup(test_user_headers, setup),
        cmocka_unit_test_setup(test_endpoint_per_path, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
