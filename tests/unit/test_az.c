/* test_az.c: the Azure backend (backends/az/): the requests vt__backend_az
 * builds (stock GDAL 3.6.2's URL, headers and Shared Key signature for the
 * same options, measured on the lab's Azurite with CPL_CURL_VERBOSE and
 * CPL_AZURE_TIMESTAMP), List Blobs answers (Azurite's own), names, and
 * failures worded as GDAL's /vsiaz/ words them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_vsi_error.h>

#include "backends/az/az_int.h"
#include "backends/backend.h"
#include "backends/bfail.h"
#include "compat/gdal_error.h"
#include "compat/gdal_release.h"

#define KEY "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/" \
            "K1SZFPTOtr/KBHBeksoGMGw=="
#define EP "http://127.0.0.1:34559/devstoreaccount1"

static const vt_backend *be = &vt__backend_az;

static void opts(const char *mode)
{
    static const char *const names[] = {
        "AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT",
        "AZURE_STORAGE_ACCESS_KEY", "AZURE_STORAGE_SAS_TOKEN",
        "AZURE_STORAGE_ACCESS_TOKEN", "AZURE_NO_SIGN_REQUEST", NULL};
    for (int i = 0; names[i]; i++)
        CPLSetConfigOption(names[i], NULL);
    CPLSetConfigOption("CPL_AZURE_VM_API_ROOT_URL", "disabled");
    CPLSetConfigOption("AZURE_CONFIG_DIR", "");
    CPLSetConfigOption("CPL_AZURE_ENDPOINT", EP);
    CPLSetConfigOption("CPL_AZURE_USE_HTTPS", "NO");
    CPLSetConfigOption("CPL_AZURE_TIMESTAMP", "Wed, 02 Dec 2026 04:06:15 GMT");
    if (!mode)
        return;
    CPLSetConfigOption("AZURE_STORAGE_ACCOUNT", "devstoreaccount1");
    if (!strcmp(mode, "key"))
        CPLSetConfigOption("AZURE_STORAGE_ACCESS_KEY", KEY);
    else if (!strcmp(mode, "sas"))
        CPLSetConfigOption("AZURE_STORAGE_SAS_TOKEN", "sv=1&sig=a%3D");
    else if (!strcmp(mode, "token"))
        CPLSetConfigOption("AZURE_STORAGE_ACCESS_TOKEN", "tok123");
    else if (!strcmp(mode, "nosign"))
        CPLSetConfigOption("AZURE_NO_SIGN_REQUEST", "YES");
}

static void assert_headers(const vt_backend_req *r, const char *const *want)
{
    size_t i;
    for (i = 0; want[i]; i++) {
        assert_non_null(r->headers[i]);
        assert_string_equal(r->headers[i], want[i]);
    }
    assert_null(r->headers[i]);
}

static void test_get_shared_key(void **state)
{
    vt_backend_req r;
    char err[256];
    const char *want[] = {
        "Range: bytes=98304-114687", "x-ms-date: Wed, 02 Dec 2026 04:06:15 GMT",
        "x-ms-version: 2019-12-12",
        "Authorization: SharedKey devstoreaccount1:"
        "iib1ontnBbn6V5DS9LDpsIpR+BS9oCHB1chcHdbGVDs=", NULL};
    (void)state;
    opts("key");
    assert_int_equal(be->build_get("lab", "d/x.bin", 98304, 16384, NULL, &r,
                                   err, sizeof err), VT_OK);
    assert_string_equal(r.url, EP "/lab/d/x.bin");
    assert_string_equal(r.req.method, "GET");
    assert_int_equal(r.req.expect_len, 16384);
    assert_headers(&r, want);
    be->req_clear(&r);

    /* the key percent-encoded as GDAL's CPLAWSURLEncode, in the URL and in
     * the signed resource; If-Match signed */
    assert_int_equal(be->build_get("lab", "a b/c+d~e.bin", 0, 0, "\"0x1\"", &r,
                                   err, sizeof err), VT_OK);
    assert_string_equal(r.url, EP "/lab/a%20b/c%2Bd~e.bin");
    assert_string_equal(r.headers[0], "If-Match: \"0x1\"");
    assert_int_equal(r.req.expect_len, 0);
    be->req_clear(&r);
}

static void test_get_other_modes(void **state)
{
    vt_backend_req r;
    char err[256];
    const char *sas[] = {"Range: bytes=0-9",
                         "x-ms-date: Wed, 02 Dec 2026 04:06:15 GMT", NULL};
    const char *tok[] = {"Range: bytes=0-9", "Authorization: Bearer tok123",
                         "x-ms-version: 2019-12-12", NULL};
    const char *sas313[] = {"Range: bytes=0-9",
                            "x-ms-date: Wed, 02 Dec 2026 04:06:15 GMT",
                            "x-ms-version: 2019-12-12", NULL};
    (void)state;
    vt__gdal_release_set(3060200);
    opts("sas");
    assert_int_equal(be->build_get("lab", "k", 0, 10, NULL, &r, err,
                                   sizeof err), VT_OK);
    assert_string_equal(r.url, EP "/lab/k?sv=1&sig=a%3D");
    assert_headers(&r, sas);
    be->req_clear(&r);
    /* GDAL 3.13 sends x-ms-version unsigned too (measured on sid) */
    vt__gdal_release_set(3130300);
    assert_int_equal(be->build_get("lab", "k", 0, 10, NULL, &r, err,
                                   sizeof err), VT_OK);
    assert_headers(&r, sas313);
    be->req_clear(&r);
    vt__gdal_release_set(3060200);
    opts("nosign");
    assert_int_equal(be->build_get("lab", "k", 0, 10, NULL, &r, err,
                                   sizeof err), VT_OK);
    assert_string_equal(r.url, EP "/lab/k");
    assert_headers(&r, sas);
    be->req_clear(&r);
    opts("token");
    assert_int_equal(be->build_get("lab", "k", 0, 10, NULL, &r, err,
                                   sizeof err), VT_OK);
    assert_headers(&r, tok);
    be->req_clear(&r);
    /* no credentials: GDAL's words, nothing built */
    opts(NULL);
    assert_int_equal(be->build_get("lab", "k", 0, 10, NULL, &r, err,
                                   sizeof err), VT_ECREDS);
    assert_non_null(strstr(err, "Missing AZURE_STORAGE_ACCOUNT"));
    assert_null(r.url);
    vt__gdal_release_set(vt__gdal_release_running());
}

static void test_split(void **state)
{
    char *c, *k;
    (void)state;
    assert_int_equal(be->split("lab/a/b.tif", &c, &k), VT_OK);
    assert_string_equal(c, "lab");
    assert_string_equal(k, "a/b.tif");
    free(c);
    free(k);
    assert_int_equal(be->split("lab", &c, &k), VT_OK);
    assert_string_equal(k, "");
    free(c);
    free(k);
    assert_int_equal(be->split("", &c, &k), VT_EINVAL);
    assert_int_equal(be->split("/x", &c, &k), VT_OK);
    free(c);
    free(k);
    assert_string_equal(be->gdal_prefix, "/vsiaz/");
}

/* Azurite's answer to restype=container&comp=list&delimiter=/&prefix=d/
 * &maxresults=3 (the folder marker d/ itself, a folder, a blob, more). */
static const char page[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>"
    "<EnumerationResults ServiceEndpoint=\"http://127.0.0.1:42795/"
    "devstoreaccount1\" ContainerName=\"lab\"><Prefix>d/</Prefix><Marker/>"
    "<MaxResults>3</MaxResults><Delimiter>/</Delimiter><Blobs><BlobPrefix>"
    "<Name>d/sub/</Name></BlobPrefix><Blob><Name>d/</Name><Properties>"
    "<Creation-Time>Wed, 02 Dec 2026 04:11:09 GMT</Creation-Time>"
    "<Last-Modified>Wed, 02 Dec 2026 04:11:09 GMT</Last-Modified>"
    "<Etag>0x25A62809845B5E0</Etag><Content-Length>0</Content-Length>"
    "<BlobType>BlockBlob</BlobType></Properties></Blob><Blob>"
    "<Name>d/x.bin</Name><Properties><Creation-Time>Wed, 02 Dec 2026 "
    "04:11:09 GMT</Creation-Time><Last-Modified>Wed, 02 Dec 2026 04:11:09 "
    "GMT</Last-Modified><Etag>0x21BE130AA8351E0</Etag><Content-Length>300000"
    "</Content-Length><Content-Type>application/octet-stream</Content-Type>"
    "</Properties></Blob><Blob><Name>d/a&amp;b</Name><Properties>"
    "<Content-Length>7</Content-Length></Properties></Blob><Blob><Name>"
    "d/sub/deep</Name><Properties><Content-Length>1</Content-Length>"
    "</Properties></Blob></Blobs><NextMarker>d/x.bin</NextMarker>"
    "</EnumerationResults>";

static void test_parse_list(void **state)
{
    vt_list_page p;
    (void)state;
    assert_int_equal(vt__az_parse_list(page, strlen(page), "d/", &p), VT_OK);
    assert_true(p.truncated);
    assert_true(p.marker);
    assert_int_equal(p.n, 3);
    assert_string_equal(p.e[0].name, "sub");
    assert_true(p.e[0].is_dir);
    assert_string_equal(p.e[1].name, "x.bin");
    assert_int_equal(p.e[1].size, 300000);
    assert_int_equal(p.e[1].mtime, 1796184669LL);
    assert_string_equal(p.e[1].etag, "\"0x21BE130AA8351E0\"");
    assert_false(p.e[1].is_dir);
    assert_string_equal(p.e[2].name, "a&b");
    assert_null(p.e[2].etag);
    vt__list_page_clear(&p);

    const char last[] = "<EnumerationResults><Blobs/><NextMarker/>"
                        "</EnumerationResults>";
    assert_int_equal(vt__az_parse_list(last, strlen(last), "", &p), VT_OK);
    assert_false(p.truncated);
    assert_int_equal(p.n, 0);
    vt__list_page_clear(&p);
    assert_int_equal(vt__az_parse_list("<ListBucketResult/>", 19, "", &p),
                     VT_EPROTO);
    assert_int_equal(vt__az_parse_list(page, 40, "", &p), VT_EPROTO);
    for (size_t n = 0; n < sizeof(page); n += 7) { /* every cut is safe */
        if (vt__az_parse_list(page, n, "d/", &p) == VT_OK)
            vt__list_page_clear(&p);
    }
    assert_int_equal(vt__az_parse_http_date("Wed, 02 Dec 2026 04:11:09 GMT"),
                     1796184669LL);
    assert_int_equal(vt__az_parse_http_date("yesterday"), 0);
    assert_int_equal(vt__az_parse_http_date("Wed, 02 Xyz 2026 04:11:09 GMT"),
                     0);
}

static void test_status_and_describe(void **state)
{
    vt_http_resp r;
    char buf[512];
    const char body[] = "<?xml version=\"1.0\"?>\n<Error>\n  <Code>BlobNotFound"
                        "</Code>\n  <Message>The specified blob does not "
                        "exist.\nRequestId:x\nTime:y</Message>\n</Error>";
    (void)state;
    assert_int_equal(be->status_err(206), VT_OK);
    assert_int_equal(be->status_err(403), VT_EACCESS);
    assert_int_equal(be->status_err(404), VT_ENOTFOUND);
    assert_int_equal(be->status_err(412), VT_ECHANGED);
    assert_int_equal(be->status_err(503), VT_ETRANSIENT);
    memset(&r, 0, sizeof r);
    r.status = 404;
    r.body = (unsigned char *)body;
    r.body_len = strlen(body);
    be->describe(buf, sizeof buf, "lab", "k", &r, VT_ENOTFOUND);
    assert_string_equal(buf, "az://lab/k: HTTP 404 BlobNotFound: The "
                             "specified blob does not exist.");
}

/* A failed open's words by release (stock measured on Azurite): 3.6 to 3.10
 * "HTTP response code: <n>" (the body unread), 3.13 Azure's code and message
 * after the warning naming the URL, a 404 "ObjectNotFound: Not Found". The
 * record is another backend's when its scheme differs. */
static void test_failure_words_by_release(void **state)
{
    const char body[] = "<?xml version=\"1.0\"?><Error><Code>AuthorizationFailure"
                        "</Code><Message>Server failed.\nRequestId:r\nTime:t"
                        "</Message></Error>";
    const char *url = EP "/lab/k";
    vt_http_resp r;
    vt_gdal_fail f;
    vt_gdal_report rep;
    (void)state;
    memset(&r, 0, sizeof r);
    r.status = 403;
    r.body = (unsigned char *)body;
    r.body_len = strlen(body);
    vt__bfail_note("az://", "lab", "k", VT_EACCESS, &r, url, NULL, 0);
    assert_int_equal(vt__backend_s3.last_failure("lab", "k", &f), 0);
    vt__gdal_release_set(3100300);
    assert_int_equal(be->last_failure("lab", "k", &f), 1);
    assert_null(f.said);
    vt__gdal_error_for_open(&f, &rep);
    assert_string_equal(rep.message, "HTTP response code: 403");
    assert_int_equal(rep.cple, CPLE_HttpResponse);
    assert_int_equal(rep.warn, 0);
    vt__gdal_release_set(3130300);
    assert_int_equal(be->last_failure("lab", "k", &f), 1);
    vt__gdal_error_for_open(&f, &rep);
    assert_string_equal(rep.message, "AuthorizationFailure: Server failed.\n"
                                     "RequestId:r\nTime:t");
    assert_int_equal(rep.vsie, VSIE_AWSError);
    assert_int_equal(rep.warn, 1);
    assert_string_equal(rep.warning, "HTTP response code on " EP "/lab/k: 403");
    r.status = 404;
    vt__bfail_note("az://", "lab", "k", VT_ENOTFOUND, &r, url, NULL, 0);
    assert_int_equal(be->last_failure("lab", "k", &f), 1);
    vt__gdal_error_for_open(&f, &rep);
    assert_string_equal(rep.message, "Not Found"); /* GDAL prefixes it */
    assert_int_equal(rep.vsie, VSIE_AWSObjectNotFound);
    assert_int_equal(rep.warn, 0);
    vt__gdal_release_set(vt__gdal_release_running());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_shared_key),
        cmocka_unit_test(test_get_other_modes),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_parse_list),
        cmocka_unit_test(test_status_and_describe),
        cmocka_unit_test(test_failure_words_by_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
