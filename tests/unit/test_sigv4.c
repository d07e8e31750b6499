/* test_sigv4.c: the signer (sigv4.c) against AWS's own expectations.
 *
 * 1. The AWS SigV4 test suite in $VT_TESTDATA_DIR/aws4_testsuite: every case
 *    folder <name>/<name>.req is parsed (request line, headers with folded
 *    continuation lines, body), signed with the suite's credentials, and our
 *    canonical request, string to sign and Authorization value are compared
 *    byte for byte with <name>.creq, .sts and .authz. Skipped (cmocka skip)
 *    when the folder is absent; fails when it holds no case at all.
 *    Cases skipped: none. Notes on two cases:
 *    - get-vanilla-with-session-token: its .req carries no token; the token
 *      is a credential (the suite shows it only inside the .creq), so the
 *      test adds X-Amz-Security-Token as s3.c does. Its .sreq carries a
 *      wrong signature (a known slip in the suite), so .sreq files are not
 *      compared; .authz is.
 *    - post-sts-header-after: signed without the token, which is added after
 *      signing; the .req has no token, so it needs nothing special.
 * 2. The S3 example from the AWS documentation (GET /test.txt with Range).
 * 3. Edge cases: encoding, path handling for S3 vs other services, bad
 *    input rejected with VT_EINVAL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "auth/sigv4.h"
#include "base/sha256.h"

#define SUITE_AK "AKIDEXAMPLE"
#define SUITE_SK "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define SUITE_TOKEN "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"
#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* Read a whole file into a malloc'd NUL-terminated string (caller frees);
 * NULL when it cannot be read. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
        goto out;
    buf = malloc((size_t)n + 1);
    if (!buf)
        goto out;
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
        goto out;
    }
    buf[n] = '\0';
    if (len)
        *len = (size_t)n;
out:
    fclose(f);
    return buf;
}

/* A parsed .req file; every pointer is malloc'd and freed by req_free. */
struct req {
    char *method;
    char *path;
    char *query;
    char *headers[64];
    size_t nheaders;
    char *body;
    size_t body_len;
    char amz_date[17];
};

static void req_free(struct req *r)
{
    free(r->method);
    free(r->path);
    free(r->query);
    for (size_t i = 0; i < r->nheaders; i++)
        free(r->headers[i]);
    free(r->body);
    memset(r, 0, sizeof(*r));
}

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    assert_non_null(d);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* Parse the suite's raw HTTP request format. Lines end with '\n'; a line
 * starting with a space continues the previous header (kept with its
 * newline: folding is the signer's job). An empty line starts the body. */
static int parse_req(const char *text, size_t len, struct req *r)
{
    memset(r, 0, sizeof(*r));
    const char *end = text + len;
    const char *nl = memchr(text, '\n', len);
    const char *line_end = nl ? nl : end;
    /* Request line: METHOD SP URI SP HTTP/1.1; the URI may hold spaces. */
    const char *sp = memchr(text, ' ', (size_t)(line_end - text));
    const char *ver = NULL;
    for (const char *p = line_end - 1; p > text; p--)
        if (*p == ' ') {
            ver = p;
            break;
        }
    if (!sp || !ver || ver <= sp)
        return -1;
    r->method = dupn(text, (size_t)(sp - text));
    const char *uri = sp + 1;
    const char *q = memchr(uri, '?', (size_t)(ver - uri));
    if (q) {
        r->path = dupn(uri, (size_t)(q - uri));
        r->query = dupn(q + 1, (size_t)(ver - q - 1));
    } else {
        r->path = dupn(uri, (size_t)(ver - uri));
    }
    const char *p = nl ? nl + 1 : end;
    while (p < end) {
        nl = memchr(p, '\n', (size_t)(end - p));
        line_end = nl ? nl : end;
        if (line_end == p) { /* empty line: body follows */
            p = line_end + 1;
            break;
        }
        if ((*p == ' ' || *p == '\t') && r->nheaders > 0) {
            char *prev = r->headers[r->nheaders - 1];
            size_t a = strlen(prev), b = (size_t)(line_end - p);
            prev = realloc(prev, a + b + 2);
            assert_non_null(prev);
            prev[a] = '\n';
            memcpy(prev + a + 1, p, b);
            prev[a + 1 + b] = '\0';
            r->headers[r->nheaders - 1] = prev;
        } else {
            if (r->nheaders + 2 >= sizeof(r->headers) / sizeof(r->headers[0]))
                return -1;
            r->headers[r->nheaders++] = dupn(p, (size_t)(line_end - p));
            if (!strncasecmp(p, "X-Amz-Date:", 11) && line_end - p >= 27)
                memcpy(r->amz_date, p + 11, 16);
        }
        p = nl ? nl + 1 : end;
    }
    if (p < end) {
        r->body = dupn(p, (size_t)(end - p));
        r->body_len = (size_t)(end - p);
    }
    return r->amz_date[0] ? 0 : -1;
}

/* Compare a produced text with an expectation file; prints both on failure. */
static int same_as_file(const char *dir, const char *name, const char *ext,
                        const char *got)
{
    char path[1024];
    char *want = NULL;
    if ((size_t)snprintf(path, sizeof(path), "%s/%s.%s", dir, name, ext) < sizeof(path))
        want = slurp(path, NULL);
    if (!want) {
        print_error("%s: missing %s\n", name, path);
        return 0;
    }
    int ok = !strcmp(want, got);
    if (!ok)
        print_error("%s.%s differs:\n--- want\n%s\n--- got\n%s\n", name, ext,
                    want, got);
    free(want);
    return ok;
}

struct suite_stats {
    int run, passed;
};

/* Run the case in dir (named name) when dir/name.req exists. */
static void run_case(const char *dir, const char *name, struct suite_stats *st)
{
    char path[1024];
    size_t len = 0;
    if ((size_t)snprintf(path, sizeof(path), "%s/%s.req", dir, name) >= sizeof(path))
        return;
    char *text = slurp(path, &len);
    if (!text)
        return;
    struct req r;
    st->run++;
    if (parse_req(text, len, &r)) {
        print_error("%s: cannot parse %s\n", name, path);
        free(text);
        req_free(&r);
        return;
    }
    if (!strcmp(name, "get-vanilla-with-session-token"))
        r.headers[r.nheaders++] = strdup("X-Amz-Security-Token:" SUITE_TOKEN);
    r.headers[r.nheaders] = NULL;

    char body_hash[65];
    vt__sha256_hex(r.body ? r.body : "", r.body_len, body_hash);
    vt_sigv4_input in = {
        .method = r.method,
        .path = r.path,
        .query = r.query,
        .headers = (const char *const *)r.headers,
        .payload_hash = body_hash,
        .amz_date = r.amz_date,
        .region = "us-east-1",
        .service = "service",
        .access_key = SUITE_AK,
        .secret_key = SUITE_SK,
        .normalize_path = 1,
    };
    vt_sigv4_output out;
    vt_err err = vt__sigv4_sign(&in, &out);
    if (err) {
        print_error("%s: sign failed: %s\n", name, vt_strerror(err));
    } else {
        int ok = same_as_file(dir, name, "creq", out.canonical_request);
        ok &= same_as_file(dir, name, "sts", out.string_to_sign);
        /* The suite spells the Authorization with ", " between its parts;
         * vsitune spells it as GDAL does, without spaces (S3 and STS accept
         * both). Compare in the suite's spelling. */
        char authz[1024];
        const char *sh = strstr(out.authorization, ",SignedHeaders=");
        const char *sg = strstr(out.authorization, ",Signature=");
        if (sh && sg && sg > sh)
            snprintf(authz, sizeof(authz), "%.*s, %.*s, %s",
                     (int)(sh - out.authorization), out.authorization,
                     (int)(sg - sh - 1), sh + 1, sg + 1);
        else
            snprintf(authz, sizeof(authz), "%s", out.authorization);
        ok &= same_as_file(dir, name, "authz", authz);
        if (ok)
            st->passed++;
    }
    vt__sigv4_output_clear(&out);
    req_free(&r);
    free(text);
}

/* Walk dir recursively: each subfolder is a case (when it holds name.req)
 * and may hold nested cases (post-sts-token/, normalize-path/). */
static void walk(const char *dir, struct suite_stats *st, int depth)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d || depth > 4) {
        if (d)
            closedir(d);
        return;
    }
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char sub[1024];
        struct stat sb;
        if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name) >= sizeof(sub) ||
            stat(sub, &sb) || !S_ISDIR(sb.st_mode))
            continue;
        run_case(sub, e->d_name, st);
        walk(sub, st, depth + 1);
    }
    closedir(d);
}

/* RFC 4231's HMAC-SHA-256 vectors: case 1 (a short key), case 6 (a key
 * longer than the block, hashed first), case 2 (key "Jefe"). */
static void test_hmac_sha256_rfc4231(void **state)
{
    unsigned char key[131], out[32];
    char hex[65];
    static const char *const want[] = {
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"};
    static const char six[] =
        "Test Using Larger Than Block-Size Key - Hash Key First";

    (void)state;
    memset(key, 0x0b, 20);
    assert_int_equal(vt__hmac_sha256(key, 20, "Hi There", 8, out), 0);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", out[i]);
    assert_string_equal(hex, want[0]);
    memset(key, 0xaa, sizeof(key));
    assert_int_equal(vt__hmac_sha256(key, sizeof(key), six, strlen(six), out), 0);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", out[i]);
    assert_string_equal(hex, want[1]);
    assert_int_equal(vt__hmac_sha256("Jefe", 4, "what do ya want for nothing?",
                                     28, out), 0);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", out[i]);
    assert_string_equal(hex, want[2]);
}

static void test_aws_suite(void **state)
{
    (void)state;
    const char *td = getenv("VT_TESTDATA_DIR");
    char dir[1024];
    struct stat sb;
    snprintf(dir, sizeof(dir), "%s/aws4_testsuite", td ? td : ".");
    if (!td || stat(dir, &sb) || !S_ISDIR(sb.st_mode)) {
        print_message("aws4_testsuite not found (VT_TESTDATA_DIR=%s): skipped\n",
                      td ? td : "(unset)");
        skip();
    }
    struct suite_stats st = {0};
    walk(dir, &st, 0);
    print_message("aws4_testsuite: %d cases run, %d passed, 0 skipped\n", st.run,
                  st.passed);
    assert_true(st.run > 0);
    assert_int_equal(st.passed, st.run);
}

static void test_s3_doc_example(void **state)
{
    (void)state;
    const char *headers[] = {
        "Host: examplebucket.s3.amazonaws.com",
        "Range: bytes=0-9",
        "x-amz-content-sha256: " EMPTY_SHA,
        "x-amz-date: 20130524T000000Z",
        NULL,
    };
    vt_sigv4_input in = {
        .method = "GET",
        .path = "/test.txt",
        .headers = headers,
        .payload_hash = EMPTY_SHA,
        .amz_date = "20130524T000000Z",
        .region = "us-east-1",
        .service = "s3",
        .access_key = "AKIAIOSFODNN7EXAMPLE",
        .secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    };
    vt_sigv4_output out;
    assert_int_equal(vt__sigv4_sign(&in, &out), VT_OK);
    assert_string_equal(out.canonical_request,
                        "GET\n/test.txt\n\n"
                        "host:examplebucket.s3.amazonaws.com\n"
                        "range:bytes=0-9\n"
                        "x-amz-content-sha256:" EMPTY_SHA "\n"
                        "x-amz-date:20130524T000000Z\n\n"
                        "host;range;x-amz-content-sha256;x-amz-date\n" EMPTY_SHA);
    assert_string_equal(out.signature,
                        "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    assert_string_equal(out.authorization,
                        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/"
                        "us-east-1/s3/aws4_request,SignedHeaders=host;range;"
                        "x-amz-content-sha256;x-amz-date,Signature="
                        "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    vt__sigv4_output_clear(&out);
    assert_null(out.authorization);
}

static void test_uri_encode(void **state)
{
    (void)state;
    char *s = vt__uri_encode("dir/a b+c%d#e?f~g_h-i.j\xc3\xa9", 1);
    assert_string_equal(s, "dir/a%20b%2Bc%25d%23e%3Ff~g_h-i.j%C3%A9");
    free(s);
    s = vt__uri_encode("a/b=c", 0);
    assert_string_equal(s, "a%2Fb%3Dc");
    free(s);
    assert_null(vt__uri_encode(NULL, 0));
}

static void test_amz_date(void **state)
{
    (void)state;
    char d[17];
    vt__amz_date(1369353600LL, d); /* 2013-05-24 00:00:00 UTC */
    assert_string_equal(d, "20130524T000000Z");
    vt__amz_date(1440938160LL, d);
    assert_string_equal(d, "20150830T123600Z");
}

static void test_sha256(void **state)
{
    (void)state;
    char h[65];
    vt__sha256_hex("", 0, h);
    assert_string_equal(h, EMPTY_SHA);
    vt__sha256_hex("abc", 3, h);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* Sign a minimal GET and return the canonical request (caller frees). */
static char *creq_of(const char *path, const char *query, int normalize)
{
    const char *headers[] = {"Host: h", "X-Amz-Date: 20150830T123600Z", NULL};
    vt_sigv4_input in = {
        .method = "GET", .path = path, .query = query, .headers = headers,
        .payload_hash = "UNSIGNED-PAYLOAD", .amz_date = "20150830T123600Z",
        .region = "us-east-1", .service = normalize ? "service" : "s3",
        .access_key = "AK", .secret_key = "SK", .normalize_path = normalize,
    };
    vt_sigv4_output out;
    assert_int_equal(vt__sigv4_sign(&in, &out), VT_OK);
    char *c = strdup(out.canonical_request);
    vt__sigv4_output_clear(&out);
    return c;
}

static void test_paths_and_queries(void **state)
{
    (void)state;
    /* S3: the path as sent, slashes and dots included, no double encoding. */
    char *c = creq_of("/my-object//example//./photo%20x.user", NULL, 0);
    assert_string_equal(strchr(c, '\n') + 1,
                        "/my-object//example//./photo%20x.user\n\n"
                        "host:h\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
                        "UNSIGNED-PAYLOAD");
    free(c);
    /* Other services: normalised and encoded again (%20 -> %2520). */
    c = creq_of("/a/./b/../c%20d/", NULL, 1);
    assert_memory_equal(strchr(c, '\n') + 1, "/a/c%2520d/\n", 12);
    free(c);
    /* Query: sorted by name then value, empty value "name=", re-encoded. */
    c = creq_of("/", "b=2&a=z&a=y&empty&c=%41+b&d=a%2Fb/c", 0);
    assert_memory_equal(strchr(c, '\n') + 1,
                        "/\na=y&a=z&b=2&c=A%2Bb&d=a%2Fb%2Fc&empty=\n", 40);
    free(c);
}

static void test_bad_input(void **state)
{
    (void)state;
    const char *no_host[] = {"X-Amz-Date: 20150830T123600Z", NULL};
    const char *bad_line[] = {"Host h", "X-Amz-Date: 20150830T123600Z", NULL};
    const char *ok[] = {"Host: h", "X-Amz-Date: 20150830T123600Z", NULL};
    vt_sigv4_input in = {
        .method = "GET", .path = "/", .headers = no_host,
        .payload_hash = EMPTY_SHA, .amz_date = "20150830T123600Z",
        .region = "us-east-1", .service = "s3", .access_key = "AK",
        .secret_key = "SK",
    };
    vt_sigv4_output out;
    assert_int_equal(vt__sigv4_sign(&in, &out), VT_EINVAL);
    assert_null(out.authorization);
    in.headers = bad_line;
    assert_int_equal(vt__sigv4_sign(&in, &out), VT_EINVAL);
    in.headers = ok;
    in.amz_date = "2015-08-30";
    assert_int_equal(vt__sigv4_sign(&in, &out), VT_EINVAL);
    in.amz_date = "20150830T123600Z";
    in.region = "us east";
    assert_int_equal(vt__sigv4_sign(&in, &out), VT_EINVAL);
    in.region = "us-east-1";
    in.headers = NULL;
    assert_int_equal(vt__sigv4_sign(&in, &out), VT_EINVAL);
    in.headers = ok;
    assert_int_equal(vt__sigv4_sign(&in, &out), VT_OK);
    vt__sigv4_output_clear(&out);
    /* A key id as a shared file may hold it (GDAL signs with it; the server
     * refuses it): signed; a line break in it: refused. */
    in.access_key = "AK # note";
    assert_int_equal(vt__sigv4_sign(&in, &out), VT_OK);
    assert_non_null(strstr(out.authorization, "Credential=AK # note/20150830/"));
    vt__sigv4_output_clear(&out);
    in.access_key = "AK\r\nX-Evil: 1";
    assert_int_equal(vt__sigv4_sign(&in, &out), VT_EINVAL);
    in.access_key = "AK";
    /* Too many headers: refused, not a huge allocation. */
    static char lines[300][32];
    static const char *many[303];
    many[0] = "Host: h";
    many[1] = "X-Amz-Date: 20150830T123600Z";
    for (int i = 0; i < 300; i++) {
        snprintf(lines[i], sizeof(lines[i]), "x-h%d: v", i);
        many[i + 2] = lines[i];
    }
    in.headers = many;
    assert_int_equal(vt__sigv4_sign(&in, &out), VT_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aws_suite),
        cmocka_unit_test(test_s3_doc_example),
        cmocka_unit_test(test_uri_encode),
        cmocka_unit_test(test_amz_date),
        cmocka_unit_test(test_sha256),
        cmocka_unit_test(test_hmac_sha256_rfc4231),
        cmocka_unit_test(test_paths_and_queries),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
