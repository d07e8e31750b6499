/* test_gdal_error.c: a failed open reported as stock GDAL 3.6 reports it
 * (gdal_error.c). Each case is an answer stock GDAL 3.6.2 was given, on the
 * lab or a fake server, and what it said (gdalinfo's "ERROR n: ..." line and
 * its warning): the report must carry the same class and begin with the
 * same words. Where GDAL 3.10 or 3.13 words a case otherwise, that release's
 * rules are set (vt__gdal_release_set) and checked on any host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <cpl_error.h>
#include <cpl_vsi_error.h>

#include "compat/gdal_error.h"
#include "compat/gdal_release.h"

#define URL "http://127.0.0.1:9000/b/k.tif"

static void check(long status, const char *body, vt_err err,
                  const char *transport, int want_vsie, int want_cple,
                  const char *want_start, int want_warn)
{
    vt_gdal_fail f = {.err = err, .status = status, .body = body,
                      .body_len = body ? strlen(body) : 0,
                      .transport = transport, .where = "s3://b/k.tif",
                      .url = URL};
    vt_gdal_report r;
    vt__gdal_error_for_open(&f, &r);
    assert_int_equal(r.vsie, want_vsie);
    assert_int_equal(r.cple, want_cple);
    if (strncmp(r.message, want_start, strlen(want_start)) != 0)
        fail_msg("message '%s' does not start with '%s'", r.message, want_start);
    /* vsitune's detail follows GDAL's words when S3 sent a body or there
     * was no answer at all; else GDAL's words stay exact. Always in
     * r.detail. */
    if ((body && *body) || status <= 0)
        assert_non_null(strstr(r.message, " (vsitune: s3://b/k.tif: "));
    else
        assert_null(strstr(r.message, "vsitune"));
    assert_non_null(strstr(r.detail, "s3://b/k.tif: "));
    assert_int_equal(r.warn, want_warn);
    if (want_warn) {
        char w[256];
        snprintf(w, sizeof(w), "HTTP response code on " URL ": %ld", status);
        assert_string_equal(r.warning, w);
    }
}

#define XML(code, msg) "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>" code \
                       "</Code><Message>" msg "</Message></Error>"

/* The lab's answers (S3's XML errors). */
static void test_s3_errors(void **state)
{
    (void)state;
    check(404, XML("NoSuchKey", "The specified key does not exist."), VT_ENOTFOUND,
          NULL, VSIE_AWSObjectNotFound, CPLE_AWSObjectNotFound,
          "The specified key does not exist.", 0);
    check(404, XML("NoSuchBucket", "The specified bucket does not exist"), VT_ENOTFOUND,
          NULL, VSIE_AWSBucketNotFound, CPLE_AWSBucketNotFound,
          "The specified bucket does not exist", 0);
    check(403, XML("AccessDenied", "Access Denied"), VT_EACCESS, NULL,
          VSIE_AWSAccessDenied, CPLE_AWSAccessDenied, "Access Denied", 1);
    check(403, XML("SignatureDoesNotMatch", "The request signature we calculated does "
                   "not match the signature you provided."), VT_EACCESS, NULL,
          VSIE_AWSSignatureDoesNotMatch, CPLE_AWSSignatureDoesNotMatch,
          "The request signature we calculated does not match", 1);
    /* Not one of GDAL's four codes: CPLE_AWSError (17), whatever the status. */
    check(403, XML("InvalidAccessKeyId", "The AWS Access Key Id you provided does not "
                   "exist in our records."), VT_EACCESS, NULL, VSIE_AWSError,
          CPLE_AWSError, "The AWS Access Key Id you provided does not exist", 1);
    check(503, XML("SlowDown", "Please reduce your request rate."), VT_ETRANSIENT, NULL,
          VSIE_AWSError, CPLE_AWSError, "Please reduce your request rate.", 1);
    check(403, XML("AllAccessDisabled", "All access to this object has been disabled"),
          VT_EACCESS, NULL, VSIE_AWSError, CPLE_AWSError,
          "All access to this object has been disabled", 1);
    check(400, XML("ExpiredToken", "The provided token has expired."), VT_EHTTP, NULL,
          VSIE_AWSError, CPLE_AWSError, "The provided token has expired.", 0);
}

/* A fake server's odd answers (what stock GDAL printed for each). */
static void test_odd_answers(void **state)
{
    (void)state;
    check(404, NULL, VT_ENOTFOUND, NULL, VSIE_HttpError, CPLE_HttpResponse,
          "HTTP response code: 404", 0);
    check(403, "", VT_EACCESS, NULL, VSIE_HttpError, CPLE_HttpResponse,
          "HTTP response code: 403", 0);
    check(500, "<html><body>oops</body></html>", VT_ETRANSIENT, NULL, VSIE_AWSError,
          CPLE_AWSError, "Invalid AWS response: <html><body>oops</body></html>", 1);
    check(400, "bla", VT_EHTTP, NULL, VSIE_AWSError, CPLE_AWSError,
          "Invalid AWS response: bla", 0);
    check(404, "<?xml version='1.0'?><Error><Code>NoSuchKey</Code></Error>",
          VT_ENOTFOUND, NULL, VSIE_AWSError, CPLE_AWSError,
          "<?xml version='1.0'?><Error><Code>NoSuchKey</Code></Error>", 0);
    check(400, "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error/>", VT_EHTTP, NULL,
          VSIE_AWSError, CPLE_AWSError, "Malformed AWS XML response: <?xml", 0);
    check(400, "<?xml version=\"1.0\"?><oops>", VT_EHTTP, NULL, VSIE_AWSError,
          CPLE_AWSError, "Malformed AWS XML response: <?xml version=\"1.0\"?><oops>", 0);
    /* Redirect codes that do not say where to go (GDAL's autotest cases). */
    check(400, "<?xml version=\"1.0\"?><Error><Code>AuthorizationHeaderMalformed</Code>"
          "</Error>", VT_EHTTP, NULL, VSIE_AWSError, CPLE_AWSError,
          "Malformed AWS XML response:", 0);
    check(301, "<?xml version=\"1.0\"?><Error><Code>PermanentRedirect</Code></Error>",
          VT_EREDIRECT, NULL, VSIE_AWSError, CPLE_AWSError, "Malformed AWS XML response:", 1);
    /* A truncated body after a 206, as curl words it. */
    check(206, NULL, VT_EPROTO, "transfer closed with 10 bytes remaining to read",
          VSIE_HttpError, CPLE_HttpResponse,
          "HTTP response code: 206 - transfer closed with 10 bytes remaining to read", 0);
}

/* No answer at all: GDAL's CPLE_HttpResponse (11) "CURL error: ...", then
 * what failed and whether it was retried (docs/credentials.md). */
static void test_transport(void **state)
{
    (void)state;
    vt_gdal_fail f = {.err = VT_ENETWORK, .transport =
                      "Could not resolve host: nosuchhost.invalid",
                      .cause = "network error, not retried: the host name "
                               "does not resolve",
                      .where = "s3://b/k.tif", .url = URL};
    vt_gdal_report r;
    vt__gdal_error_for_open(&f, &r);
    assert_int_equal(r.cple, CPLE_HttpResponse);
    assert_string_equal(r.message, "CURL error: Could not resolve host: "
                        "nosuchhost.invalid (vsitune: s3://b/k.tif: network "
                        "error, not retried: the host name does not resolve)");
    check(0, NULL, VT_ENETWORK,
          "Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn't connect to server",
          VSIE_HttpError, CPLE_HttpResponse,
          "CURL error: Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn't connect "
          "to server", 0);
    check(0, NULL, VT_ETIMEDOUT, NULL, VSIE_HttpError, CPLE_HttpResponse,
          "CURL error: timed out, retries exhausted", 0);
}

/* No credentials: CPLE_AWSInvalidCredentials with the chain's message as is. */
static void test_credentials(void **state)
{
    (void)state;
    const char *msg = "AWS_SECRET_ACCESS_KEY and AWS_NO_SIGN_REQUEST configuration "
                      "options not defined, and /home/u/.aws/credentials not filled "
                      "(vsitune: ...)";
    vt_gdal_fail f = {.err = VT_ECREDS, .message = msg, .where = "s3://b/k"};
    vt_gdal_report r;
    vt__gdal_error_for_open(&f, &r);
    assert_int_equal(r.vsie, VSIE_AWSInvalidCredentials);
    assert_int_equal(r.cple, CPLE_AWSInvalidCredentials);
    assert_string_equal(r.message, msg);
    assert_int_equal(r.warn, 0);
}

/* The releases whose rules differ here, each run on any host
 * (vt__gdal_release_set): GDAL 3.6.2 (Debian 12), 3.10.3 (trixie), 3.13.3
 * (sid). */
#define GDAL_36 3060200
#define GDAL_310 3100300
#define GDAL_313 3130300

static int teardown(void **state)
{
    (void)state;
    vt__gdal_release_set(0);
    return 0;
}

/* A failure GDAL already met (its cache of file properties; 3.13: a network
 * failure it meets again): what its Stat / Open of that name says, per GDAL
 * release (cpl_vsil_curl.cpp, VSICurlHandle::Exists and GetFileSizeOrHeaders
 * of each release). */
static void test_known_failure(void **state)
{
    int version = *(const int *)*state;
    vt_gdal_fail nf = {.err = VT_ENOTFOUND, .status = 404, .where = "s3://b/k.tif",
                       .url = URL};
    vt_gdal_fail net = {.err = VT_ENETWORK, .status = 0, .where = "s3://b/k.tif",
                        .url = URL, .transport = "Failed to connect"};
    vt_gdal_fail cr = {.err = VT_ECREDS, .where = "s3://b/k.tif"};
    vt_gdal_report r;

    vt__gdal_release_set(version);
    /* never without being asked for an HTTP status, never over an earlier
     * error, never for missing credentials */
    assert_int_equal(vt__gdal_error_for_known(&nf, 0, 0, 0, &r), 0);
    assert_int_equal(vt__gdal_error_for_known(&nf, 1, 0, 1, &r), 0);
    assert_int_equal(vt__gdal_error_for_known(&cr, 1, 0, 0, &r), 0);
    assert_int_equal(vt__gdal_error_for_known(&nf, 0, 1, 0, &r), 0);
    if (version == GDAL_36) { /* 3.6: nothing, ever */
        assert_int_equal(vt__gdal_error_for_known(&nf, 1, 0, 0, &r), 0);
        assert_int_equal(r.vsie, VSIE_None);
        assert_int_equal(r.warn, 0);
    } else { /* 3.10+: the kept status */
        assert_int_equal(vt__gdal_error_for_known(&nf, 1, 0, 0, &r), 1);
        assert_int_equal(r.vsie, VSIE_HttpError);
        assert_int_equal(r.cple, CPLE_HttpResponse);
        assert_string_equal(r.message, "HTTP response code: 404");
        assert_int_equal(r.warn, 0);
    }
    if (version != GDAL_313) { /* a network failure is kept: no words */
        assert_int_equal(vt__gdal_error_for_known(&net, 1, 0, 0, &r), 0);
        assert_int_equal(vt__gdal_error_for_known(&net, 0, 0, 0, &r), 0);
        assert_int_equal(vt__gdal_error_for_known(&net, 0, 1, 0, &r), 0);
        return;
    }
    /* 3.13: asked again, curl's words or the warning */
    assert_int_equal(vt__gdal_error_for_known(&net, 1, 0, 0, &r), 1);
    assert_int_equal(r.vsie, VSIE_HttpError);
    assert_int_equal(r.cple, CPLE_HttpResponse);
    assert_string_equal(r.message, "CURL error: Failed to connect");
    assert_int_equal(vt__gdal_error_for_known(&net, 0, 0, 0, &r), 1);
    assert_int_equal(r.vsie, VSIE_None);
    assert_int_equal(r.cple, CPLE_None);
    assert_int_equal(r.warn, 1);
    assert_string_equal(r.warning, "HTTP response code on " URL ": 0");
    assert_int_equal(vt__gdal_error_for_known(&net, 1, 0, 1, &r), 1);
    assert_int_equal(r.vsie, VSIE_None);
    assert_int_equal(r.warn, 1);
    /* a stat asking the size asks with errors on */
    assert_int_equal(vt__gdal_error_for_known(&net, 0, 1, 0, &r), 1);
    assert_int_equal(r.vsie, VSIE_HttpError);
}

/* An open failing again as the name's last failure: the words of GDAL's
 * open meeting the failure it keeps (VSICurlHandle::Exists), vsitune's
 * detail after them where S3 sent a body; which failures GDAL keeps. */
static void test_open_again(void **state)
{
    int version = *(const int *)*state;
    const char *denied = XML("AccessDenied", "Access Denied");
    vt_gdal_fail f = {.err = VT_EACCESS, .status = 403, .body = denied,
                      .body_len = strlen(denied), .where = "s3://b/k.tif",
                      .url = URL, .again = 1};
    vt_gdal_fail net = {.err = VT_ENETWORK, .status = 0, .where = "s3://b/k.tif",
                        .url = URL, .transport = "Failed to connect"};
    vt_gdal_fail cr = {.err = VT_ECREDS, .where = "s3://b/k.tif"};
    vt_gdal_report r;

    vt__gdal_release_set(version);
    assert_int_equal(vt__gdal_keeps_failure(&f), 1);
    assert_int_equal(vt__gdal_keeps_failure(&cr), 0); /* no request made */
    /* never a warning, never over an error already set, never unasked */
    assert_int_equal(vt__gdal_error_for_open_again(&f, 0, 0, &r), 0);
    assert_int_equal(vt__gdal_error_for_open_again(&f, 1, 1, &r), 0);
    if (version == GDAL_36) {
        assert_int_equal(vt__gdal_error_for_open_again(&f, 1, 0, &r), 0);
    } else {
        assert_int_equal(vt__gdal_error_for_open_again(&f, 1, 0, &r), 1);
        assert_int_equal(r.vsie, VSIE_HttpError);
        assert_int_equal(r.cple, CPLE_HttpResponse);
        assert_string_equal(r.message, "HTTP response code: 403 (vsitune: "
                                       "s3://b/k.tif: HTTP 403 AccessDenied)");
        assert_int_equal(r.warn, 0);
    }
    if (version == GDAL_313) {
        assert_int_equal(vt__gdal_keeps_failure(&net), 0); /* asked again */
    } else {
        assert_int_equal(vt__gdal_keeps_failure(&net), 1);
        assert_int_equal(vt__gdal_error_for_open_again(&net, 1, 0, &r), 0);
    }
}

/* Whether the first read of a name opened unchecked sets S3's error. */
static void test_read_of_missing(void **state)
{
    (void)state;
    vt__gdal_release_set(GDAL_36);
    assert_int_equal(vt__gdal_read_of_missing_says(), 0);
    vt__gdal_release_set(GDAL_310);
    assert_int_equal(vt__gdal_read_of_missing_says(), 0);
    vt__gdal_release_set(GDAL_313);
    assert_int_equal(vt__gdal_read_of_missing_says(), 1);
}

/* An open that asks for no error, or meets one already set: GDAL's
 * GetFileSizeOrHeaders (the same from 3.6 to 3.13) sets its VSI error only
 * when asked and none is set, but for S3's body, which sets it whenever
 * asked; it warns whenever it sets none itself (but for 400 and 404). */
static void test_in_context(void **state)
{
    (void)state;
    const char *denied = XML("AccessDenied", "Access Denied");
    vt_gdal_fail net = {.err = VT_ENETWORK, .status = 0, .where = "s3://b/k.tif",
                        .url = URL, .transport = "Failed to connect"};
    vt_gdal_fail body = {.err = VT_EACCESS, .status = 403, .body = denied,
                         .body_len = strlen(denied), .where = "s3://b/k.tif",
                         .url = URL};
    vt_gdal_fail nf = {.err = VT_ENOTFOUND, .status = 404, .where = "s3://b/k.tif",
                       .url = URL};
    vt_gdal_fail cr = {.err = VT_ECREDS, .where = "s3://b/k.tif"};
    vt_gdal_report r;

    /* asked, nothing set before: as vt__gdal_error_for_open */
    vt__gdal_error_for_open(&net, &r);
    vt__gdal_error_in_context(&net, 1, 0, &r);
    assert_int_equal(r.vsie, VSIE_HttpError);
    assert_int_equal(r.warn, 0);
    /* not asked: no error, the warning with status 0 */
    vt__gdal_error_for_open(&net, &r);
    vt__gdal_error_in_context(&net, 0, 0, &r);
    assert_int_equal(r.vsie, VSIE_None);
    assert_int_equal(r.cple, CPLE_None);
    assert_int_equal(r.warn, 1);
    assert_string_equal(r.warning, "HTTP response code on " URL ": 0");
    /* asked over an earlier error: the same */
    vt__gdal_error_for_open(&net, &r);
    vt__gdal_error_in_context(&net, 1, 1, &r);
    assert_int_equal(r.vsie, VSIE_None);
    assert_int_equal(r.warn, 1);
    /* S3's body: sets it over an earlier one, warns either way */
    vt__gdal_error_for_open(&body, &r);
    vt__gdal_error_in_context(&body, 1, 1, &r);
    assert_int_equal(r.vsie, VSIE_AWSAccessDenied);
    assert_int_equal(r.warn, 1);
    vt__gdal_error_for_open(&body, &r);
    vt__gdal_error_in_context(&body, 0, 0, &r);
    assert_int_equal(r.vsie, VSIE_None);
    assert_int_equal(r.warn, 1);
    assert_string_equal(r.warning, "HTTP response code on " URL ": 403");
    /* a 404 is never warned of */
    vt__gdal_error_for_open(&nf, &r);
    vt__gdal_error_in_context(&nf, 0, 0, &r);
    assert_int_equal(r.vsie, VSIE_None);
    assert_int_equal(r.warn, 0);
    /* no credentials: no request, unchanged */
    vt__gdal_error_for_open(&cr, &r);
    vt__gdal_error_in_context(&cr, 0, 1, &r);
    assert_int_equal(r.vsie, VSIE_AWSInvalidCredentials);
    assert_int_equal(r.warn, 0);
}

/* Each release's words for "no credentials" (cpl_aws.cpp of 3.6.2,
 * 3.10.3, 3.13.3). */
static void test_no_creds_words(void **state)
{
    (void)state;
    char buf[1024];
    static const char w36[] =
        "AWS_SECRET_ACCESS_KEY and AWS_NO_SIGN_REQUEST configuration options "
        "not defined, and /home/u/.aws/credentials not filled";

    vt__gdal_release_set(GDAL_36);
    vt__gdal_no_creds_words(buf, sizeof(buf), "/home/u/.aws/credentials");
    assert_string_equal(buf, w36);
    vt__gdal_release_set(GDAL_310);
    vt__gdal_no_creds_words(buf, sizeof(buf), "/home/u/.aws/credentials");
    assert_string_equal(buf, w36);
    vt__gdal_release_set(GDAL_313);
    vt__gdal_no_creds_words(buf, sizeof(buf), "/home/u/.aws/credentials");
    assert_string_equal(buf,
        "No valid AWS credentials found. For authenticated requests, you need "
        "to set AWS_SECRET_ACCESS_KEY, AWS_ACCESS_KEY_ID or other "
        "configuration options, or create a /home/u/.aws/credentials file. "
        "Consult https://gdal.org/en/stable/user/virtual_file_systems.html"
        "#vsis3-aws-s3-files for more details. For unauthenticated requests "
        "on public resources, set the AWS_NO_SIGN_REQUEST configuration "
        "option to YES.");
    /* cut, never overflowing */
    vt__gdal_no_creds_words(buf, 20, "/home/u/.aws/credentials");
    assert_int_equal(strlen(buf), 19);
}

static void test_vsie_to_cple(void **state)
{
    (void)state;
    assert_int_equal(vt__gdal_cple_for_vsie(VSIE_FileError, CPLE_OpenFailed),
                     CPLE_OpenFailed);
    assert_int_equal(vt__gdal_cple_for_vsie(VSIE_HttpError, CPLE_OpenFailed),
                     CPLE_HttpResponse);
    assert_int_equal(vt__gdal_cple_for_vsie(VSIE_AWSObjectNotFound, 0),
                     CPLE_AWSObjectNotFound);
}

/* Long bodies and messages are cut, never overflow. */
static void test_bounds(void **state)
{
    (void)state;
    static char body[10000];
    memset(body, 'x', sizeof(body) - 1);
    vt_gdal_fail f = {.err = VT_EHTTP, .status = 502, .body = body,
                      .body_len = sizeof(body) - 1, .where = "s3://b/k"};
    vt_gdal_report r;
    vt__gdal_error_for_open(&f, &r);
    assert_true(strlen(r.message) < VT_GDAL_MSG_CAP);
    assert_int_equal(strncmp(r.message, "Invalid AWS response: xxx", 25), 0);
}

/* A test run under one release's rules (its state: the version). */
#define RELEASE_TEST(f, v)                                                  \
    {#f "_" #v, f, NULL, teardown, &release_##v}

static int release_36 = GDAL_36, release_310 = GDAL_310,
           release_313 = GDAL_313;

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_s3_errors),
        cmocka_unit_test(test_odd_answers),
        cmocka_unit_test(test_transport),
        cmocka_unit_test(test_credentials),
        RELEASE_TEST(test_known_failure, 36),
        RELEASE_TEST(test_known_failure, 310),
        RELEASE_TEST(test_known_failure, 313),
        RELEASE_TEST(test_open_again, 36),
        RELEASE_TEST(test_open_again, 310),
        RELEASE_TEST(test_open_again, 313),
        cmocka_unit_test_teardown(test_read_of_missing, teardown),
        cmocka_unit_test_teardown(test_no_creds_words, teardown),
        cmocka_unit_test(test_in_context),
        cmocka_unit_test(test_vsie_to_cple),
        cmocka_unit_test(test_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
