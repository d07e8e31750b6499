/* test_az_auth.c: Azure Shared Key signing (auth/az_sign.c) and GDAL
 * 3.6's credentials chain for /vsiaz/ (auth/az_creds.c).
 *
 * The signature vectors are stock GDAL 3.6.2's own: its Authorization
 * headers for requests to the lab's Azurite (which accepted them), taken
 * with CPL_CURL_VERBOSE at the x-ms-date they carried, with Azurite's
 * published development key and with a wrong key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <stdio.h>
#include <unistd.h>

#include <cpl_conv.h>
#include <cpl_string.h>
#include <cpl_vsi.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "auth/az_auth.h"
#include "auth/sigv4.h" /* vt__http_date: x-ms-date */
#include "compat/gdal_release.h"

#define KEY "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/" \
            "K1SZFPTOtr/KBHBeksoGMGw=="
#define BADKEY "bm90IHRoZSBrZXk="
#define DATE "x-ms-date: Wed, 02 Dec 2026 04:06:15 GMT"
#define ACCT "devstoreaccount1"

static void check(const char *key, const char *verb, const char *const *h,
                  const char *res, const char *const *params,
                  const char *want)
{
    char sig[64];
    char *sts = vt__az_string_to_sign(verb, h, ACCT, res, params);
    assert_non_null(sts);
    assert_int_equal(vt__az_sign(key, sts, sig, sizeof sig), 0);
    assert_string_equal(sig, want);
    free(sts);
}

static void test_stock_vectors(void **state)
{
    const char *get[] = {"Range: bytes=98304-114687", DATE,
                         "x-ms-version: 2019-12-12", NULL};
    const char *plain[] = {DATE, "x-ms-version: 2019-12-12", NULL};
    const char *list_d[] = {"comp=list", "delimiter=/", "prefix=d/",
                            "restype=container", NULL};
    const char *list_root[] = {"restype=container", "comp=list",
                               "delimiter=/", NULL}; /* sorted here */
    const char *list_max[] = {"comp=list", "delimiter=/", "maxresults=1",
                              "prefix=nothere.tif/", "restype=container",
                              NULL};
    const char *list_space[] = {"comp=list", "delimiter=/", "prefix=a b/",
                                "restype=container", NULL};
    (void)state;
    check(KEY, "GET", get, "/" ACCT "/lab/d/x.bin", NULL,
          "iib1ontnBbn6V5DS9LDpsIpR+BS9oCHB1chcHdbGVDs=");
    check(KEY, "GET", plain, "/" ACCT "/lab", list_d,
          "wunAaVSDEjENqsGHbfC5WV5MenNyn47CqJzphJULiKM=");
    check(KEY, "GET", plain, "/" ACCT "/lab", list_root,
          "wD46NfZnTLgxhufgMQREjmrtVeGSKksoi4KgHqdiOFY=");
    check(KEY, "HEAD", plain, "/" ACCT "/lab/nothere.tif", NULL,
          "6zUerIHirPww8CrahXOwa878dnhMAdPsV+zHGnHyLLc=");
    check(KEY, "GET", plain, "/" ACCT "/lab", list_max,
          "ipk6/exKBK2a0snE/TLTKkdYxPpSdayJ7uvYl8c2r78=");
    /* the blob's path percent-encoded, the listing's prefix decoded */
    check(BADKEY, "HEAD", plain, "/" ACCT "/lab/a%20b/c%2Bd~e.bin", NULL,
          "ueLp9+bwwEQf/2j4U8KRI1P6QE87SiR7s/utCxkWH7Y=");
    check(BADKEY, "GET", plain, "/" ACCT "/lab", list_space,
          "oyZ8z6jZCcBIBKfTLSCoc+y91P7O/UFCkFmAZYVCRMw=");
}

static void test_string_to_sign_shape(void **state)
{
    /* header names any case, values trimmed, Content-Length 0 empty,
     * x-ms-* lowercased and sorted */
    const char *h[] = {"X-MS-Version: 2019-12-12", "content-length: 0",
                       "If-Match:  \"0x1\" ", "x-ms-date: D", NULL};
    const char *p[] = {"restype=container", "comp=list", NULL};
    char *s = vt__az_string_to_sign("GET", h, "acct", "/c", p);
    (void)state;
    assert_string_equal(s, "GET\n\n\n\n\n\n\n\n\"0x1\"\n\n\n\n"
                           "x-ms-date:D\nx-ms-version:2019-12-12\n"
                           "/acct/c\ncomp:list\nrestype:container");
    free(s);
}

static void test_bad_key(void **state)
{
    char sig[64];
    (void)state;
    assert_int_equal(vt__az_sign("", "x", sig, sizeof sig), -1);
    assert_int_equal(vt__az_sign(KEY, "x", sig, 10), -1);
}

/* Keys that are not strict base64 sign as stock GDAL signs with them (its
 * autotest's "MY_ACCOUNT_KEY"; short groups, misplaced '='): the oracle is
 * GDAL's own decoder, the HMAC OpenSSL's. */
static void test_lenient_key(void **state)
{
    static const char *const keys[] = {
        "MY_ACCOUNT_KEY", "not base64!", "QUJD-RA", "Q", "QQ", "QUJ",
        "QUJD=Q==", "a=b=c", "=QUJD", "QU=D", "!!!", KEY, BADKEY, NULL};
    (void)state;
    for (int i = 0; keys[i]; i++) {
        char sig[64], want[64];
        unsigned char md[32];
        unsigned int mdn = 0;
        char *k = CPLStrdup(keys[i]);
        int n = CPLBase64DecodeInPlace((GByte *)k);
        assert_non_null(HMAC(EVP_sha256(), k, n, (const unsigned char *)"sts",
                             3, md, &mdn));
        EVP_EncodeBlock((unsigned char *)want, md, 32);
        CPLFree(k);
        assert_int_equal(vt__az_sign(keys[i], "sts", sig, sizeof sig), 0);
        if (strcmp(sig, want) != 0)
            fail_msg("key \"%s\": %s, GDAL's decoding gives %s", keys[i], sig,
                     want);
    }
}

static void test_x_ms_date(void **state)
{
    char d[VT_HTTP_DATE_LEN];
    (void)state;
    vt__http_date(1796184375LL, d);
    assert_string_equal(d, "Wed, 02 Dec 2026 04:06:15 GMT");
}

static void test_connection_string(void **state)
{
    vt_az_cfg c;
    (void)state;
    memset(&c, 0, sizeof c);
    assert_true(vt__az_parse_connection_string(
        "DefaultEndpointsProtocol=http;AccountName=a1;AccountKey=" KEY
        ";BlobEndpoint=http://127.0.0.1:1/a1/", &c));
    assert_string_equal(c.account, "a1");
    assert_string_equal(c.key, KEY);
    assert_string_equal(c.endpoint, "http://127.0.0.1:1/a1");
    vt__az_config_clear(&c);

    assert_true(vt__az_parse_connection_string(
        "DefaultEndpointsProtocol=http;AccountName=a1;AccountKey=k;"
        "EndpointSuffix=core.chinacloudapi.cn/", &c));
    assert_string_equal(c.endpoint, "http://a1.blob.core.chinacloudapi.cn");
    vt__az_config_clear(&c);

    assert_true(vt__az_parse_connection_string("AccountName=a1;AccountKey=k",
                                               &c));
    assert_string_equal(c.endpoint, "https://a1.blob.core.windows.net");
    vt__az_config_clear(&c);

    /* no key: BlobEndpoint + SharedAccessSignature, else nothing usable */
    assert_true(vt__az_parse_connection_string(
        "BlobEndpoint=https://x.example/;SharedAccessSignature=sv=1&sig=2", &c));
    assert_null(c.account);
    assert_string_equal(c.sas, "sv=1&sig=2");
    assert_string_equal(c.endpoint, "https://x.example");
    vt__az_config_clear(&c);
    assert_false(vt__az_parse_connection_string("AccountName=a1", &c));
    vt__az_config_clear(&c);
}

static void clear_opts(void)
{
    static const char *const names[] = {
        "AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT",
        "AZURE_STORAGE_ACCESS_KEY", "AZURE_STORAGE_SAS_TOKEN",
        "AZURE_STORAGE_ACCESS_TOKEN", "AZURE_NO_SIGN_REQUEST", "AZURE_SAS",
        "CPL_AZURE_ENDPOINT", "CPL_AZURE_USE_HTTPS",
        "CPL_AZURE_VM_API_ROOT_URL", "AZURE_CONFIG_DIR", NULL};
    for (int i = 0; names[i]; i++)
        CPLSetConfigOption(names[i], NULL);
    CPLSetConfigOption("CPL_AZURE_VM_API_ROOT_URL", "disabled");
    CPLSetConfigOption("AZURE_CONFIG_DIR", "");
}

static void test_chain(void **state)
{
    vt_az_cfg c;
    char err[512];
    (void)state;
    clear_opts();
    vt__gdal_release_set(3060200);
    /* nothing at all: GDAL 3.6.2's words (measured) */
    assert_int_equal(vt__az_config("lab/k", &c, err, sizeof err), VT_ECREDS);
    assert_string_equal(err,
        "Missing AZURE_STORAGE_ACCOUNT+(AZURE_STORAGE_ACCESS_KEY or "
        "AZURE_STORAGE_SAS_TOKEN or AZURE_NO_SIGN_REQUEST) or "
        "AZURE_STORAGE_CONNECTION_STRING configuration options or Azure CLI "
        "configuration file");
    /* an account alone, managed identity disabled */
    CPLSetConfigOption("AZURE_STORAGE_ACCOUNT", "acct");
    assert_int_equal(vt__az_config("lab/k", &c, err, sizeof err), VT_ECREDS);
    assert_string_equal(err, "AZURE_STORAGE_ACCESS_KEY or "
                             "AZURE_STORAGE_SAS_TOKEN or AZURE_NO_SIGN_REQUEST "
                             "configuration option not defined");
    /* SAS; the default endpoint with CPL_AZURE_USE_HTTPS */
    CPLSetConfigOption("AZURE_STORAGE_SAS_TOKEN", "sv=1&sig=x");
    CPLSetConfigOption("CPL_AZURE_USE_HTTPS", "NO");
    assert_int_equal(vt__az_config("lab/k", &c, err, sizeof err), VT_OK);
    assert_string_equal(c.endpoint, "http://acct.blob.core.windows.net");
    assert_string_equal(c.sas, "sv=1&sig=x");
    vt__az_config_clear(&c);
    /* the key before the SAS, the token before both */
    CPLSetConfigOption("AZURE_STORAGE_ACCESS_KEY", KEY);
    CPLSetConfigOption("CPL_AZURE_ENDPOINT", "http://h:1/acct/");
    assert_int_equal(vt__az_config("lab/k", &c, err, sizeof err), VT_OK);
    assert_string_equal(c.key, KEY);
    assert_null(c.sas);
    assert_string_equal(c.endpoint, "http://h:1/acct");
    vt__az_config_clear(&c);
    CPLSetConfigOption("AZURE_STORAGE_ACCESS_TOKEN", "tok");
    assert_int_equal(vt__az_config("lab/k", &c, err, sizeof err), VT_OK);
    assert_string_equal(c.token, "tok");
    assert_null(c.key);
    vt__az_config_clear(&c);
    /* no signing wins over everything */
    CPLSetConfigOption("AZURE_NO_SIGN_REQUEST", "YES");
    assert_int_equal(vt__az_config("lab/k", &c, err, sizeof err), VT_OK);
    assert_true(c.nosign);
    assert_null(c.token);
    vt__az_config_clear(&c);
    /* path-specific options first, under /vsiaz/ */
    clear_opts();
    VSISetPathSpecificOption("/vsiaz/other", "AZURE_STORAGE_ACCOUNT", "o");
    VSISetPathSpecificOption("/vsiaz/other", "AZURE_NO_SIGN_REQUEST", "YES");
    assert_int_equal(vt__az_config("other/k", &c, err, sizeof err), VT_OK);
    assert_string_equal(c.account, "o");
    assert_true(c.nosign);
    vt__az_config_clear(&c);
    assert_int_equal(vt__az_config("lab/k", &c, err, sizeof err), VT_ECREDS);
    VSIClearPathSpecificOptions("/vsiaz/other");
    /* GDAL 3.13's words (measured on sid's 3.13.3) */
    vt__gdal_release_set(3130300);
    assert_int_equal(vt__az_config("lab/k", &c, err, sizeof err), VT_ECREDS);
    assert_true(strncmp(err, "InvalidCredentials: No valid Azure credentials "
                             "found. ", 47) == 0);
    vt__gdal_release_set(vt__gdal_release_running());
    clear_opts();
}

static void test_cli_file(void **state)
{
    vt_az_cfg c;
    char err[512], dir[] = "/tmp/vt_az_cliXXXXXX", fn[600];
    FILE *f;
    (void)state;
    clear_opts();
    assert_non_null(mkdtemp(dir));
    snprintf(fn, sizeof fn, "%s/config", dir);
    f = fopen(fn, "w");
    assert_non_null(f);
    fputs("[cloud]\nname = x\n[storage]\naccount = cli\n"
          "sas_token = sv=1&sig=a%%3D\n", f);
    fclose(f);
    CPLSetConfigOption("AZURE_CONFIG_DIR", dir);
    assert_int_equal(vt__az_config("lab/k", &c, err, sizeof err), VT_OK);
    assert_string_equal(c.account, "cli");
    assert_string_equal(c.sas, "sv=1&sig=a%3D");
    assert_string_equal(c.endpoint, "https://cli.blob.core.windows.net");
    vt__az_config_clear(&c);
    remove(fn);
    rmdir(dir);
    clear_opts();
}

static void test_identity(void **state)
{
    vt_az_cfg a = {0}, b = {0};
    char ia[128], ib[128];
    (void)state;
    a.account = b.account = "acct";
    a.endpoint = b.endpoint = "https://acct.blob.core.windows.net";
    a.key = KEY;
    b.key = BADKEY;
    assert_int_equal(vt__az_identity(&a, ia, sizeof ia), 0);
    assert_int_equal(vt__az_identity(&b, ib, sizeof ib), 0);
    assert_true(strncmp(ia, "signed:", 7) == 0);
    assert_string_not_equal(ia, ib);
    assert_null(strstr(ia, KEY));
    /* a SAS is the key material too, never in clear */
    b.key = NULL;
    b.sas = "sv=1&sig=secret";
    assert_int_equal(vt__az_identity(&b, ib, sizeof ib), 0);
    assert_null(strstr(ib, "secret"));
    assert_string_not_equal(ia, ib);
    b.sas = NULL;
    assert_int_equal(vt__az_identity(&b, ib, sizeof ib), 0);
    assert_string_equal(ib, "anonymous");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stock_vectors),
        cmocka_unit_test(test_string_to_sign_shape),
        cmocka_unit_test(test_lenient_key),
        cmocka_unit_test(test_bad_key),
        cmocka_unit_test(test_x_ms_date),
        cmocka_unit_test(test_connection_string),
        cmocka_unit_test(test_chain),
        cmocka_unit_test(test_cli_file),
        cmocka_unit_test(test_identity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
