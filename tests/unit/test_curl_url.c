/* test_curl_url.c: a /vsicurl/ name read as GDAL 3.6's
 * VSICurlGetURLFromFilename reads it (plain URLs, the "?url=...&opt=..."
 * syntax, unescaping, unknown and unapplied options, a missing url), the
 * origin and the redacted form of a URL, and GDAL's test for a server that
 * ignored Range (curl_url.c). Expected values written from GDAL 3.6.2's
 * source and RFC 3986, not from the code under test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "backends/curl/curl_int.h"

static void test_plain_url(void **state)
{
    struct vt_curl_target t;
    char err[128];
    (void)state;
    assert_int_equal(vt__curl_parse_path("https://h.example/a/b.tif?X-Amz-"
                                         "Signature=ab%2Bc&x=1", &t, err,
                                         sizeof err), VT_OK);
    /* a plain URL is taken as it is: no unescaping, the query kept */
    assert_string_equal(t.url, "https://h.example/a/b.tif?X-Amz-Signature="
                               "ab%2Bc&x=1");
    assert_int_equal(t.max_retry, -1);
    assert_int_equal(t.use_head, -1);
    assert_null(t.unapplied);
    assert_null(t.unknown);
    vt__curl_target_clear(&t);
}

static void test_option_syntax(void **state)
{
    struct vt_curl_target t;
    char err[128];
    (void)state;
    /* "/vsicurl?url=..." and "/vsicurl/?url=..." both reach us with or
     * without the '?'; tokens are unescaped before "name=value" is split
     * at the first '=' or ':' */
    assert_int_equal(vt__curl_parse_path(
                         "?max_retry=5&retry_delay=1.5&use_head=no&timeout=3"
                         "&connecttimeout:2&useragent=my+agent&referer=http%3A"
                         "%2F%2Fr&cookie=a%3D1%3B+b%3D2&URL=http%3A%2F%2Fh%3A8"
                         "080%2Fx.tif%3Ftoken%3Dt%2B1",
                         &t, err, sizeof err), VT_OK);
    assert_string_equal(t.url, "http://h:8080/x.tif?token=t+1"); /* %2B */
    assert_int_equal(t.max_retry, 5);
    assert_true(t.retry_delay > 1.49 && t.retry_delay < 1.51);
    assert_int_equal(t.use_head, 0);
    assert_int_equal(t.timeout_ms, 3000);
    assert_int_equal(t.connect_timeout_ms, 2000);
    assert_string_equal(t.useragent, "my agent");
    assert_string_equal(t.referer, "http://r");
    assert_string_equal(t.cookie, "a=1; b=2");
    vt__curl_target_clear(&t);

    assert_int_equal(vt__curl_parse_path("url=https://h/x", &t, err,
                                         sizeof err), VT_OK);
    assert_string_equal(t.url, "https://h/x");
    vt__curl_target_clear(&t);
}

static void test_unknown_and_unapplied(void **state)
{
    struct vt_curl_target t;
    char err[128];
    (void)state;
    assert_int_equal(vt__curl_parse_path("?url=http://h/x&foo=1&list_dir=no&"
                                         "proxy=http://p:3128&bar=2&"
                                         "unsafessl=yes&&",
                                         &t, err, sizeof err), VT_OK);
    assert_string_equal(t.unknown, "foo,bar");   /* GDAL warns of these */
    assert_string_equal(t.unapplied, "proxy");   /* the first one */
    vt__curl_target_clear(&t);
}

static void test_missing_url(void **state)
{
    struct vt_curl_target t;
    char err[128];
    (void)state;
    assert_int_equal(vt__curl_parse_path("?use_head=no&zzz=1", &t, err,
                                         sizeof err), VT_EINVAL);
    assert_string_equal(err, "Missing url parameter");
    assert_null(t.url);
    assert_string_equal(t.unknown, "zzz"); /* still warned of */
    vt__curl_target_clear(&t);
    assert_int_equal(vt__curl_parse_path("ftp://h/x", &t, err, sizeof err),
                     VT_EINVAL);
    assert_int_equal(vt__curl_parse_path("?url=file:///etc/x", &t, err,
                                         sizeof err), VT_EINVAL);
    vt__curl_target_clear(&t);
}

/* A redirect's Location, resolved against the URL that answered it. */
static void check_resolve(const char *base, const char *loc, const char *want)
{
    char *got = vt__curl_resolve(base, loc);
    if (!want) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void test_resolve(void **state)
{
    (void)state;
    check_resolve("http://h:8/a/b.tif?t=1", "https://s3.x/k?X-Amz-Signature=s",
                  "https://s3.x/k?X-Amz-Signature=s");
    check_resolve("http://h:8/a/b.tif?t=1", "/lab/k?s=1", "http://h:8/lab/k?s=1");
    check_resolve("https://h/a/b.tif", "//cdn.y/k", "https://cdn.y/k");
    check_resolve("http://h/a/b.tif?q=/x/y", "c.tif", "http://h/a/c.tif");
    check_resolve("http://h", "c.tif", "http://h/c.tif");
    check_resolve("http://h?x=/y", "c.tif", "http://h/c.tif");
    check_resolve("http://h/a", "ftp://f/x", NULL);
    check_resolve("http://h/a", "", NULL);
    check_resolve("http://h/a", "/x\r\nX-Evil: 1", NULL);
}

static void test_origin(void **state)
{
    char *o;
    (void)state;
    o = vt__curl_origin("https://User:pw@Host.Example:8443/a?b#c");
    assert_string_equal(o, "https://host.example:8443");
    free(o);
    o = vt__curl_origin("http://h?x=1");
    assert_string_equal(o, "http://h");
    free(o);
    assert_null(vt__curl_origin("http:///x"));
    assert_null(vt__curl_origin("ftp://h/x"));
    /* GDAL: "http://" and "https://" as written, case and all */
    assert_null(vt__curl_origin("HTTPS://h/x"));
}

static void test_redact(void **state)
{
    char b[256];
    (void)state;
    vt__curl_redact("https://u:pw@h/a/b.tif?X-Amz-Credential=AKIA%2F1&"
                    "X-Amz-Signature=deadbeef&flag#frag", b, sizeof b);
    assert_string_equal(b, "https://h/a/b.tif?X-Amz-Credential=***&"
                           "X-Amz-Signature=***&flag#***");
    vt__curl_redact("http://h/x", b, sizeof b);
    assert_string_equal(b, "http://h/x");
    /* cut, never overrun */
    vt__curl_redact("http://h/x?token=secret", b, 12);
    assert_string_equal(b, "http://h/x?");
    assert_null(strstr(b, "secret"));
}

static void test_range_ignored(void **state)
{
    vt_http_resp r;
    (void)state;
    memset(&r, 0, sizeof r);
    r.status = 200;
    r.has_total = 1;
    r.total_size = 5000000;
    /* GDAL: a 200 without Content-Range to a range starting past 0 ... */
    assert_int_equal(vt__curl_range_ignored(16384, 16384, &r), 1);
    /* ... or from 0 with more than ten times the range */
    assert_int_equal(vt__curl_range_ignored(0, 16384, &r), 1);
    r.total_size = 10 * 16384;
    assert_int_equal(vt__curl_range_ignored(0, 16384, &r), 0);
    r.total_size = 10 * 16384 + 1;
    assert_int_equal(vt__curl_range_ignored(0, 16384, &r), 1);
    r.has_total = 0; /* no Content-Length: GDAL sees 0 */
    assert_int_equal(vt__curl_range_ignored(0, 16384, &r), 0);
    r.has_content_range = 1;
    assert_int_equal(vt__curl_range_ignored(16384, 16384, &r), 0);
    r.has_content_range = 0;
    r.status = 206;
    assert_int_equal(vt__curl_range_ignored(16384, 16384, &r), 0);
    r.status = 200;
    assert_int_equal(vt__curl_range_ignored(16384, 0, &r), 0); /* no Range */
}

static void test_netrc(void **state)
{
    static const char t1[] =
        "# comment machine 127.0.0.1\n"
        "machine urs.earthdata.nasa.gov login u password p\n"
        "macdef init\nmachine 10.0.0.1\n\n"
        "machine Other.Example\tlogin x password y\n";
    static const char t2[] = "machine a login b\ndefault login anon password x\n";
    (void)state;
    assert_true(vt__curl_netrc_has(t1, strlen(t1), "urs.earthdata.nasa.gov"));
    assert_true(vt__curl_netrc_has(t1, strlen(t1), "other.example"));
    assert_false(vt__curl_netrc_has(t1, strlen(t1), "127.0.0.1"));  /* a comment */
    assert_false(vt__curl_netrc_has(t1, strlen(t1), "10.0.0.1"));   /* a macro */
    assert_false(vt__curl_netrc_has(t1, strlen(t1), "login"));
    assert_true(vt__curl_netrc_has(t2, strlen(t2), "anything"));    /* default */
    assert_false(vt__curl_netrc_has(t2, 10, "anything"));           /* cut */
    assert_false(vt__curl_netrc_has("", 0, "h"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_url),
        cmocka_unit_test(test_resolve),
        cmocka_unit_test(test_option_syntax),
        cmocka_unit_test(test_unknown_and_unapplied),
        cmocka_unit_test(test_missing_url),
        cmocka_unit_test(test_origin),
        cmocka_unit_test(test_redact),
        cmocka_unit_test(test_range_ignored),
        cmocka_unit_test(test_netrc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
