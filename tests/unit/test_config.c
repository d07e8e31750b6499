/* test_config.c: option lookup for a path (config.c) against GDAL's own
 * path-specific option store (VSISetPathSpecificOption), as the GDAL
 * calls gdal.SetCredential and rasterio make; every numeric option against
 * values that are not numbers; the CA-bundle rule of each GDAL release. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_vsi.h>

#include <gdal.h>

#include "base/config.h"
#include "fuzz_bytes.h"
#include "compat/gdal_release.h"
#include "size_forms.h"

static int teardown(void **state)
{
    (void)state;
    VSIClearPathSpecificOptions(NULL);
    CPLSetConfigOption("VT_TEST_OPT", NULL);
    CPLSetConfigOption("VT_TEST_BOOL", NULL);
    CPLSetConfigOption("VT_TEST_SIZE", NULL);
    vt__cfg_set_prefix("/vsis3/");
    vt__gdal_release_set(0);
    for (int i = 0; i < VT_OPT_COUNT; i++)
        CPLSetConfigOption(vt__opts[i].name, NULL);
    for (int i = 0; i < 3; i++)
        CPLSetConfigOption(vt__ca_names[i], NULL);
    return 0;
}

static void assert_opt(const char *path, const char *name, const char *want)
{
    char *v = vt__cfg_dup(path, name);
    if (want == NULL)
        assert_null(v);
    else
        assert_string_equal(v, want);
    free(v);
}

/* A value set for /vsis3/b1 applies to b1's keys only; others fall back to
 * the config option, as VSIGetPathSpecificOption does. */
static void test_path_specific(void **state)
{
    (void)state;
    CPLSetConfigOption("VT_TEST_OPT", "global");
    VSISetPathSpecificOption("/vsis3/b1", "VT_TEST_OPT", "for-b1");
    VSISetPathSpecificOption("/vsis3/b2/sub", "VT_TEST_OPT", "for-b2-sub");
    assert_opt("b1/k.tif", "VT_TEST_OPT", "for-b1");
    assert_opt("b1", "VT_TEST_OPT", "for-b1");
    assert_opt("b2/k.tif", "VT_TEST_OPT", "global");
    assert_opt("b2/sub/k.tif", "VT_TEST_OPT", "for-b2-sub");
    assert_opt(NULL, "VT_TEST_OPT", "global");
    /* Prefix matching is GDAL's (a string prefix): /vsis3/b1 also covers
     * bucket b10, exactly as stock GDAL does. */
    assert_opt("b10/k.tif", "VT_TEST_OPT", "for-b1");
    CPLSetConfigOption("VT_TEST_OPT", NULL);
    assert_opt("b3/k", "VT_TEST_OPT", NULL);
}

/* Set to "": dup says unset, dup_raw gives "" (CPL_AWS_CREDENTIALS_FILE=""
 * means "no file" to GDAL). */
static void test_empty_vs_unset(void **state)
{
    char *v;
    (void)state;
    CPLSetConfigOption("VT_TEST_OPT", "");
    assert_opt("b/k", "VT_TEST_OPT", NULL);
    v = vt__cfg_dup_raw("b/k", "VT_TEST_OPT");
    assert_non_null(v);
    assert_string_equal(v, "");
    free(v);
    CPLSetConfigOption("VT_TEST_OPT", NULL);
    assert_null(vt__cfg_dup_raw("b/k", "VT_TEST_OPT"));
    VSISetPathSpecificOption("/vsis3/b", "VT_TEST_OPT", "");
    CPLSetConfigOption("VT_TEST_OPT", "global");
    v = vt__cfg_dup_raw("b/k", "VT_TEST_OPT");
    assert_string_equal(v, "");
    free(v);
}

static void test_bool_and_size(void **state)
{
    (void)state;
    CPLSetConfigOption("VT_TEST_BOOL", "NO");
    VSISetPathSpecificOption("/vsis3/yes", "VT_TEST_BOOL", "YES");
    assert_int_equal(vt__cfg_bool("yes/k", "VT_TEST_BOOL", 0), 1);
    assert_int_equal(vt__cfg_bool("no/k", "VT_TEST_BOOL", 1), 0);
    assert_int_equal(vt__cfg_bool("no/k", "VT_UNSET_BOOL", 1), 1);
    VSISetPathSpecificOption("/vsis3/big", "VT_TEST_SIZE", "2M");
    assert_int_equal(vt__cfg_size("big/k", "VT_TEST_SIZE", 7, 0, 1u << 30),
                     2u << 20);
    assert_int_equal(vt__cfg_size("small/k", "VT_TEST_SIZE", 7, 0, 1u << 30),
                     7);
}

/* Installed on /vsitune/, the options set for /vsitune/... apply. */
static void test_prefix(void **state)
{
    char buf[64];
    (void)state;
    VSISetPathSpecificOption("/vsitune/b", "VT_TEST_OPT", "tune");
    VSISetPathSpecificOption("/vsis3/b", "VT_TEST_OPT", "s3");
    assert_opt("b/k", "VT_TEST_OPT", "s3");
    vt__cfg_set_prefix("/vsitune/");
    assert_opt("b/k", "VT_TEST_OPT", "tune");
    assert_string_equal(vt__cfg_gdal_path("b/k", buf, sizeof(buf)),
                        "/vsitune/b/k");
    assert_null(vt__cfg_gdal_path("b/k", buf, 10));
    /* "/vsitune/b/k" is 12 bytes: 13 hold it with its terminator, 12 not */
    assert_string_equal(vt__cfg_gdal_path("//b/k", buf, 13), "/vsitune/b/k");
    assert_null(vt__cfg_gdal_path("b/k", buf, 12));
}

/* A key longer than the lookup's stack buffer still finds its options. */
static void test_long_path(void **state)
{
    char path[3000];
    (void)state;
    memset(path, 'a', sizeof(path) - 1);
    path[sizeof(path) - 1] = '\0';
    memcpy(path, "lb/", 3);
    VSISetPathSpecificOption("/vsis3/lb", "VT_TEST_OPT", "long");
    assert_opt(path, "VT_TEST_OPT", "long");
}

/* VSITUNE_CACHE_SIZE, else GDAL's CPL_VSIL_CURL_CACHE_SIZE, else 64 MB. */
static void test_cache_budget(void **state)
{
    (void)state;
    CPLSetConfigOption("VSITUNE_CACHE_SIZE", "");
    CPLSetConfigOption("CPL_VSIL_CURL_CACHE_SIZE", "");
    assert_int_equal(vt__cfg_cache_budget(), VT_DEFAULT_CACHE_SIZE);
    CPLSetConfigOption("CPL_VSIL_CURL_CACHE_SIZE", "16384000");
    assert_int_equal(vt__cfg_cache_budget(), 16384000);
    CPLSetConfigOption("VSITUNE_CACHE_SIZE", "8M");
    assert_int_equal(vt__cfg_cache_budget(), 8u << 20);
    CPLSetConfigOption("VSITUNE_CACHE_SIZE", "0");
    assert_int_equal(vt__cfg_cache_budget(), 0);
    CPLSetConfigOption("VSITUNE_CACHE_SIZE", NULL);
    CPLSetConfigOption("CPL_VSIL_CURL_CACHE_SIZE", NULL);
}

/* ---- numeric options --------------------------------------------------- */

/* The warnings config.c emits, as GDAL hands them to a handler. */
static int g_warnings;
static char g_last[512];

static void CPL_STDCALL record(CPLErr cls, CPLErrorNum no, const char *msg)
{
    (void)no;
    if (cls == CE_Warning) {
        g_warnings++;
        snprintf(g_last, sizeof(g_last), "%s", msg);
    }
}

static double read_opt(const char *path, enum vt_opt id)
{
    return vt__opts[id].kind == VT_OPT_SIZE ? (double)vt__opt_size(path, id)
                                            : vt__opt_num(path, id);
}

/* Values that are not numbers GDAL or a user could mean: every one gives
 * the option's default and one warning that names the option and value. */
static const char *const bad_values[] = {
    "nan", "NaN", "-nan", "nan(0x1)", "inf", "-inf", "INF", "infinity",
    "1e999", "-1e999", "1e-999", "99999999999999999999999",
    "18446744073709551616", "340282366920938463463374607431768211456",
    "12abc", "5 7", "3s", "0x10", "1e", "1e+", ".", "-", "+", "", " ",
    "1,5", "--1", "1..2", "\t9x", "1e5000", "64KK", "1.5.", "NULL",
};

static void test_every_numeric_option_rejects_non_numbers(void **state)
{
    char path_opt[64];
    (void)state;
    CPLPushErrorHandler(record);
    for (int id = 0; id < VT_OPT_COUNT; id++) {
        const struct vt_opt_def *d = &vt__opts[id];

        if (d->kind != VT_OPT_SIZE && d->kind != VT_OPT_NUMBER)
            continue;
        /* The default is within the row's own range. */
        assert_true(d->def >= d->min && d->def <= d->max);
        assert_true(read_opt("b/k", id) == d->def);
        for (size_t j = 0; j < sizeof(bad_values) / sizeof(*bad_values); j++) {
            const char *v = bad_values[j];
            int before = g_warnings, empty = !*v;

            CPLSetConfigOption(d->name, v);
            if (read_opt("b/k", id) != d->def) {
                print_error("%s=\"%s\" gave %g, not the default %g\n", d->name,
                            v, read_opt("b/k", id), d->def);
                fail();
            }
            /* "" is unset (as for every option): no warning. */
            assert_int_equal(g_warnings - before, empty ? 0 : 1);
            if (!empty) {
                assert_non_null(strstr(g_last, d->name));
                assert_non_null(strstr(g_last, v));
                /* said once per value, not on every read */
                (void)read_opt("b/k", id);
                assert_int_equal(g_warnings - before, 1);
            }
        }
        CPLSetConfigOption(d->name, NULL);
        if (d->per_path) {
            /* A path-specific bad value: the same, for that path only. */
            snprintf(path_opt, sizeof(path_opt), "/vsis3/pb");
            VSISetPathSpecificOption(path_opt, d->name, "nan");
            assert_true(read_opt("pb/k", id) == d->def);
            VSIClearPathSpecificOptions(NULL);
        }
    }
    CPLPopErrorHandler();
}

/* Good values still read as before: sizes with suffixes, numbers with
 * fractions and exponents, blanks around; out of range is refused. */
static void test_numeric_options_accept_numbers(void **state)
{
    double x;
    uint64_t n;
    (void)state;
    static const struct {
        enum vt_opt id;
        const char *value;
        double want;
    } nums[] = {
        {VT_OPT_MAX_STREAMS, " 12 ", 12},
        {VT_OPT_RETRY_DELAY, "2.5e-1", 0.25},
        {VT_OPT_TIMEOUT, "+7.", 7},
        {VT_OPT_CONNECT_TIMEOUT, ".5", 0.5},
        {VT_OPT_MAX_RETRY, "101", 3},   /* out of range: the default */
        {VT_OPT_MAX_RETRY, "-1", 3},
    };
    CPLPushErrorHandler(record);
    for (size_t i = 0; i < sizeof(nums) / sizeof(*nums); i++) {
        CPLSetConfigOption(vt__opts[nums[i].id].name, nums[i].value);
        assert_true(vt__opt_num(NULL, nums[i].id) == nums[i].want);
    }
    CPLSetConfigOption("VSITUNE_HEADER_SIZE", "128K");
    assert_int_equal(vt__opt_size("b/k", VT_OPT_HEADER_SIZE), 128u << 10);
    CPLSetConfigOption("VSITUNE_HEADER_SIZE", "1.5K");
    assert_int_equal(vt__opt_size("b/k", VT_OPT_HEADER_SIZE),
                     VT_DEFAULT_HEADER_SIZE);
    /* a raised lower bound: a request is at least one block */
    CPLSetConfigOption("VSITUNE_MAX_REQUEST_SIZE", "64K");
    assert_int_equal(vt__opt_size_min("b/k", VT_OPT_MAX_REQUEST_SIZE, 1u << 20),
                     VT_DEFAULT_MAX_REQUEST);
    assert_int_equal(vt__opt_size_min("b/k", VT_OPT_MAX_REQUEST_SIZE, 4096),
                     64u << 10);
    /* the parsers themselves */
    assert_int_equal(vt__parse_num("1e308", &x), 0);
    assert_int_equal(vt__parse_num("1e309", &x), -1);
    assert_int_equal(vt__parse_num("4e-320", &x), -1); /* subnormal */
    assert_int_equal(vt__parse_num("0e-999", &x), 0);
    assert_true(x == 0);
    assert_int_equal(vt__parse_num("-0.000", &x), 0);
    assert_int_equal(vt__parse_size("18446744073709551615", &n), 0);
    assert_int_equal(vt__parse_size("16777216T", &n), -1);
    assert_int_equal(vt__parse_size("17179869184G", &n), -1); /* 2^64 */
    CPLPopErrorHandler();
}

/* The plugin reads VSITUNE_CACHE_SIZE as size_forms.h says (tunerd's
 * test_tunerd_sizing.c holds a kept value to the same list): a form it
 * takes is its value, with no warning; one it refuses is the default, with
 * a warning. */
static void test_size_forms_as_tunerd(void **state)
{
    (void)state;
    CPLPushErrorHandler(record);
    for (size_t i = 0; i < N_SIZE_FORMS; i++) {
        int before = g_warnings;
        uint64_t v;

        CPLSetConfigOption("VSITUNE_CACHE_SIZE", size_forms[i].text);
        v = vt__opt_size(NULL, VT_OPT_CACHE_SIZE);
        if (v != (size_forms[i].ok ? size_forms[i].value : VT_DEFAULT_CACHE_SIZE) ||
            (g_warnings > before) == size_forms[i].ok) {
            print_error("\"%s\": the plugin read %llu\n", size_forms[i].text,
                        (unsigned long long)v);
            fail();
        }
    }
    CPLPopErrorHandler();
}

/* ---- booleans and enums ------------------------------------------------ */

/* vsitune's own booleans and enums: their words in any case, the boolean
 * words for an enum's YES and NO; anything else (where CPLTestBool said
 * YES) gives the default and one warning naming the option, the value and
 * the accepted values; "" is unset. */
static void test_choice_options(void **state)
{
    static const struct {
        enum vt_opt id;
        const char *value;
        int want, warns;
    } cases[] = {
        {VT_OPT_SIDECARS, "auto", VT_SIDECARS_AUTO, 0},
        {VT_OPT_SIDECARS, "YES", VT_SIDECARS_YES, 0},
        {VT_OPT_SIDECARS, "on", VT_SIDECARS_YES, 0},
        {VT_OPT_SIDECARS, "1", VT_SIDECARS_YES, 0},
        {VT_OPT_SIDECARS, "No", VT_SIDECARS_NO, 0},
        {VT_OPT_SIDECARS, "FALSE", VT_SIDECARS_NO, 0},
        {VT_OPT_SIDECARS, "off", VT_SIDECARS_NO, 0},
        {VT_OPT_SIDECARS, "0", VT_SIDECARS_NO, 0},
        {VT_OPT_SIDECARS, "", VT_SIDECARS_AUTO, 0},
        {VT_OPT_SIDECARS, "maybe", VT_SIDECARS_AUTO, 1},
        {VT_OPT_SIDECARS, "Y", VT_SIDECARS_AUTO, 1},
        {VT_OPT_SIDECARS, "AUTO ", VT_SIDECARS_AUTO, 1},
        {VT_OPT_TAKEOVER, "no", 0, 0},
        {VT_OPT_TAKEOVER, "maybe", 1, 1},
        {VT_OPT_SHARED_CACHE, "true", 1, 0},
        {VT_OPT_SHARED_CACHE, "maybe", 0, 1},
        {VT_OPT_SHARED_CACHE, "2", 0, 1},
        {VT_OPT_ACROSS_CREDENTIALS, "ON", 1, 0},
        {VT_OPT_ACROSS_CREDENTIALS, "enabled", 0, 1},
        {VT_OPT_ACROSS_CREDENTIALS, "auto", 0, 1},
    };
    (void)state;
    CPLPushErrorHandler(record);
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        const struct vt_opt_def *d = &vt__opts[cases[i].id];
        int before = g_warnings, set = -1;

        CPLSetConfigOption(d->name, cases[i].value);
        if (vt__opt_choice("b/k", cases[i].id, &set) != cases[i].want) {
            print_error("%s=\"%s\"\n", d->name, cases[i].value);
            fail();
        }
        assert_int_equal(set, *cases[i].value != '\0');
        assert_int_equal(g_warnings - before, cases[i].warns);
        if (cases[i].warns) {
            char want[256];
            snprintf(want, sizeof want, "vsitune: %s=%s is not one of ",
                     d->name, cases[i].value);
            assert_non_null(strstr(g_last, want));
            assert_non_null(strstr(g_last, "YES"));
            /* said once per value, not on every read */
            (void)vt__opt_choice("b/k", cases[i].id, NULL);
            assert_int_equal(g_warnings - before, 1);
        }
        CPLSetConfigOption(d->name, NULL);
    }
    CPLSetConfigOption("VSITUNE_SIDECARS", "maybe!");
    (void)vt__opt_choice("b/k", VT_OPT_SIDECARS, NULL);
    assert_string_equal(g_last, "vsitune: VSITUNE_SIDECARS=maybe! is not one "
                        "of AUTO, YES, NO (or TRUE, ON, 1, FALSE, OFF, 0); "
                        "using AUTO");
    /* path-specific: for that path only */
    VSISetPathSpecificOption("/vsis3/pb", "VSITUNE_SIDECARS", "NO");
    assert_int_equal(vt__opt_choice("pb/k", VT_OPT_SIDECARS, NULL),
                     VT_SIDECARS_NO);
    CPLSetConfigOption("VSITUNE_SIDECARS", NULL);
    assert_int_equal(vt__opt_choice("b/k", VT_OPT_SIDECARS, NULL),
                     VT_SIDECARS_AUTO);
    /* unset: the defaults */
    assert_int_equal(vt__opt_choice(NULL, VT_OPT_TAKEOVER, NULL), 1);
    assert_int_equal(vt__opt_choice(NULL, VT_OPT_SHARED_CACHE, NULL), 0);
    CPLPopErrorHandler();
}

/* Random bytes around number fragments: never a crash, and a value that
 * parses is finite (libFuzzer runs the same: tests/fuzz/fuzz_options.c). */
static void test_number_parsers_on_garbage(void **state)
{
    static const char *const frags[] = {"nan", "inf", "e", "E", "+", "-",
                                        ".", "0", "9", "1e999", " ", "K",
                                        "x", "\xff", "e-", "00000000000"};
    uint32_t seed = 18;
    (void)state;
    for (int i = 0; i < 20000; i++) {
        size_t len;
        double x;
        uint64_t n;
        char *b = fuzz_bytes(&seed, 40, frags, sizeof(frags) / sizeof(*frags),
                             &len);
        char *z = malloc(len + 1);
        memcpy(z, b, len);
        z[len] = '\0';
        if (vt__parse_num(z, &x) == 0)
            assert_true(isfinite(x));
        (void)vt__parse_size(z, &n);
        free(z);
        free(b);
    }
}

/* ---- CA bundle ------------------------------------------------------------ */

#define SSL_CERT "/ssl.pem"
#define CURL_CA "/curl.pem"
#define GDAL_CA "/gdal.pem"

static const char *pick(int version, enum vt_ca_use use, const char *gdal,
                        const char *curl, const char *ssl)
{
    const char *vals[3] = {gdal, curl, ssl};
    int i = vt__ca_pick(version, use, vals);
    return i < 0 ? NULL : vals[i];
}

/* Each release's rule, read in its cpl_http.cpp (config.h): 3.6's reads
 * take the last set of the three (CSLSetNameValue overwrites), 3.6's
 * listings and credential fetches and everything from 3.7 the first. */
static void test_ca_pick_per_release(void **state)
{
    static const struct {
        int version;
        enum vt_ca_use use;
        const char *gdal, *curl, *ssl, *want;
    } rows[] = {
        /* rasterio's case: GDAL_CURL_CA_BUNDLE the system's, SSL_CERT_FILE
         * a private CA */
        {3060200, VT_CA_READ, GDAL_CA, NULL, SSL_CERT, SSL_CERT},
        {3060200, VT_CA_LIST, GDAL_CA, NULL, SSL_CERT, GDAL_CA},
        {3060200, VT_CA_FETCH, GDAL_CA, NULL, SSL_CERT, GDAL_CA},
        {3060200, VT_CA_READ, GDAL_CA, CURL_CA, NULL, CURL_CA},
        {3060200, VT_CA_READ, NULL, CURL_CA, SSL_CERT, SSL_CERT},
        {3060200, VT_CA_LIST, NULL, CURL_CA, SSL_CERT, CURL_CA},
        {3060200, VT_CA_READ, GDAL_CA, NULL, NULL, GDAL_CA},
        {3069900, VT_CA_READ, GDAL_CA, CURL_CA, SSL_CERT, SSL_CERT},
        {3060200, VT_CA_READ, NULL, NULL, NULL, NULL},
        {3060200, VT_CA_READ, GDAL_CA, NULL, "", ""}, /* "" is set */
    };
    static const int later[] = {3070000, 3100300, 3130300, 3990000};
    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
        const char *got = pick(rows[i].version, rows[i].use, rows[i].gdal,
                               rows[i].curl, rows[i].ssl);
        if (rows[i].want == NULL ? got != NULL
                                 : !got || strcmp(got, rows[i].want) != 0) {
            print_error("row %zu: got %s\n", i, got ? got : "(none)");
            fail();
        }
    }
    /* 3.7 and later: the first set, for every use */
    for (size_t v = 0; v < sizeof(later) / sizeof(*later); v++) {
        for (int use = VT_CA_FETCH; use <= VT_CA_READ; use++) {
            const char *vals[4][3] = {{GDAL_CA, CURL_CA, SSL_CERT},
                                      {NULL, CURL_CA, SSL_CERT},
                                      {NULL, NULL, SSL_CERT},
                                      {"", NULL, SSL_CERT}};
            for (int k = 0; k < 4; k++)
                assert_int_equal(vt__ca_pick(later[v], use, vals[k]), k < 3 ? k : 0);
            assert_null(pick(later[v], use, NULL, NULL, NULL));
        }
    }
}

static void assert_ca(const char *path, enum vt_ca_use use, const char *want)
{
    char *v = vt__cfg_ca_bundle(path, use);
    if (!want)
        assert_null(v);
    else
        assert_non_null(v);
    if (want)
        assert_string_equal(v, want);
    free(v);
}

/* Through the option store: 3.6 reads no path-specific CA option (its
 * HTTP options were global); 3.7+ looks each name up for the path of a
 * read or a listing, not for a credentials fetch. */
static void test_ca_bundle_from_options(void **state)
{
    (void)state;
    CPLSetConfigOption("GDAL_CURL_CA_BUNDLE", GDAL_CA);
    CPLSetConfigOption("SSL_CERT_FILE", SSL_CERT);
    VSISetPathSpecificOption("/vsis3/pb", "CURL_CA_BUNDLE", CURL_CA);
    vt__gdal_release_set(3060200);
    assert_ca("b/k", VT_CA_READ, SSL_CERT);
    assert_ca("pb/k", VT_CA_READ, SSL_CERT);
    assert_ca("b/", VT_CA_LIST, GDAL_CA);
    assert_ca(NULL, VT_CA_FETCH, GDAL_CA);
    CPLSetConfigOption("SSL_CERT_FILE", NULL);
    assert_ca("pb/k", VT_CA_READ, GDAL_CA);
    vt__gdal_release_set(3100300);
    assert_ca("b/k", VT_CA_READ, GDAL_CA);
    assert_ca(NULL, VT_CA_FETCH, GDAL_CA);
    CPLSetConfigOption("GDAL_CURL_CA_BUNDLE", NULL);
    assert_ca("pb/k", VT_CA_READ, CURL_CA);
    assert_ca("pb/", VT_CA_LIST, CURL_CA);
    assert_ca("b/k", VT_CA_READ, NULL);
    assert_ca(NULL, VT_CA_FETCH, NULL);
    vt__gdal_release_set(3130300);
    CPLSetConfigOption("SSL_CERT_FILE", SSL_CERT);
    assert_ca("pb/k", VT_CA_READ, CURL_CA);
    assert_ca("b/k", VT_CA_READ, SSL_CERT);
    CPLSetConfigOption("GDAL_CURL_CA_BUNDLE", "");
    assert_ca("pb/k", VT_CA_READ, "");
    /* the real version of this process: 3.6 on Debian 12 */
    vt__gdal_release_set(0);
    if (atoi(GDALVersionInfo("VERSION_NUM")) < 3070000)
        assert_ca("b/k", VT_CA_READ, SSL_CERT);
    else
        assert_ca("b/k", VT_CA_READ, "");
}

int main(void)
{
    /* The CA tests decide what is set: not the machine's environment. */
    for (int i = 0; i < 3; i++)
        unsetenv(vt__ca_names[i]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_path_specific, teardown),
        cmocka_unit_test_teardown(test_empty_vs_unset, teardown),
        cmocka_unit_test_teardown(test_bool_and_size, teardown),
        cmocka_unit_test_teardown(test_prefix, teardown),
        cmocka_unit_test_teardown(test_long_path, teardown),
        cmocka_unit_test_teardown(test_cache_budget, teardown),
        cmocka_unit_test_teardown(test_every_numeric_option_rejects_non_numbers,
                                  teardown),
        cmocka_unit_test_teardown(test_numeric_options_accept_numbers, teardown),
        cmocka_unit_test_teardown(test_number_parsers_on_garbage, teardown),
        cmocka_unit_test_teardown(test_choice_options, teardown),
        cmocka_unit_test_teardown(test_size_forms_as_tunerd, teardown),
        cmocka_unit_test_teardown(test_ca_pick_per_release, teardown),
        cmocka_unit_test_teardown(test_ca_bundle_from_options, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
