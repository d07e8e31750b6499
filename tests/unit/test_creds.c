/* test_creds.c: the credentials chain's offline parts (creds.c,
 * creds_parse.c): environment, shared profile files written to a temp
 * folder, the cache and its invalidation, the "nothing found" message, and
 * the parsers of STS XML, container/IMDS JSON, the IMDS role list, INI files
 * and ISO 8601 times, including random bytes. The network providers (STS,
 * container, IMDSv2) run against local servers in
 * tests/integration/test_creds_providers.py. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_vsi.h>

#include "auth/creds.h"
#include "auth/creds_int.h"
#include "auth/creds_parse.h"

#include "fuzz_bytes.h"
#include "compat/gdal_release.h"

static char tmpdir[256];

static const char *all_opts[] = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_NO_SIGN_REQUEST",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    NULL};

static void write_file(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void set_path_opt(const char *opt, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    CPLSetConfigOption(opt, path);
}

/* A clean slate: every option masked (""), files in an empty temp HOME,
 * IMDS off, cache dropped. */
static int setup(void **state)
{
    (void)state;
    for (int i = 0; all_opts[i]; i++)
        CPLSetConfigOption(all_opts[i], "");
    CPLSetConfigOption("HOME", tmpdir);
    CPLSetConfigOption("AWS_SHARED_CREDENTIALS_FILE", "");
    CPLSetConfigOption("CPL_AWS_CREDENTIALS_FILE", NULL);
    CPLSetConfigOption("AWS_CONFIG_FILE", NULL);
    VSIClearPathSpecificOptions(NULL);
    CPLSetConfigOption("AWS_EC2_METADATA_DISABLED", "true");
    char p[512];
    snprintf(p, sizeof(p), "%s/.aws/credentials", tmpdir);
    unlink(p);
    snprintf(p, sizeof(p), "%s/.aws/config", tmpdir);
    unlink(p);
    vt__creds_reset();
    return 0;
}

static void test_env(void **state)
{
    (void)state;
    vt_creds c;
    char err[512];
    CPLSetConfigOption("AWS_ACCESS_KEY_ID", "AKENV");
    CPLSetConfigOption("AWS_SECRET_ACCESS_KEY", "SKENV");
    CPLSetConfigOption("AWS_SESSION_TOKEN", "TOKENV");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_OK);
    assert_string_equal(c.access_key, "AKENV");
    assert_string_equal(c.secret_key, "SKENV");
    assert_string_equal(c.session_token, "TOKENV");
    assert_string_equal(c.source, "environment");
    assert_int_equal(c.expiration, 0);
    assert_int_equal(c.anonymous, 0);
    vt__creds_clear(&c);
    assert_null(c.access_key);
    /* Read at call time: a change applies at once. */
    CPLSetConfigOption("AWS_ACCESS_KEY_ID", "AKENV2");
    CPLSetConfigOption("AWS_SESSION_TOKEN", "");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_OK);
    assert_string_equal(c.access_key, "AKENV2");
    assert_null(c.session_token);
    vt__creds_clear(&c);
    /* Anonymous wins over everything. */
    CPLSetConfigOption("AWS_NO_SIGN_REQUEST", "YES");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_OK);
    assert_int_equal(c.anonymous, 1);
    assert_null(c.access_key);
    vt__creds_clear(&c);
}

static void test_nothing_found(void **state)
{
    (void)state;
    vt_creds c;
    char err[2048];
    /* Half an environment pair is not a credential: an access key alone is
     * ignored (the chain goes on), a secret alone is GDAL's error. */
    CPLSetConfigOption("AWS_ACCESS_KEY_ID", "AKONLY");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_ECREDS);
    assert_null(c.access_key);
    /* GDAL's words first (those of the running release, which
     * test_gdal_release.c checks word for word), vsitune's detail after. */
    assert_ptr_equal(strstr(err, vt__gdal_release()->no_creds_before), err);
    assert_non_null(strstr(err, "/.aws/credentials"));
    assert_non_null(strstr(err, vt__gdal_release()->no_creds_after));
    assert_non_null(strstr(err, " (vsitune: "));
    assert_non_null(strstr(err, "profile 'default'"));
    assert_non_null(strstr(err, "AWS_ROLE_ARN"));
    assert_non_null(strstr(err, "EC2 instance metadata disabled"));
    CPLSetConfigOption("AWS_ACCESS_KEY_ID", "");
    CPLSetConfigOption("AWS_SECRET_ACCESS_KEY", "SKONLY");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_ECREDS);
    assert_string_equal(err, "AWS_ACCESS_KEY_ID configuration option not defined");
}

static void test_profiles(void **state)
{
    (void)state;
    vt_creds c;
    char err[1024];
    write_file(".aws/credentials",
               "# comment\n[default]\naws_access_key_id = AKDEF\n"
               "aws_secret_access_key=SKDEF\n\n"
               "[other]\n  ; indented comment\nAWS_ACCESS_KEY_ID = AKOTHER \n"
               "aws_secret_access_key = SKOTHER\naws_session_token = TOKOTHER\n"
               "[empty]\n");
    write_file(".aws/config",
               "[default]\nregion = us-west-2\n"
               "[profile third]\naws_access_key_id = AKTHIRD\n"
               "aws_secret_access_key = SKTHIRD\ns3 =\n  aws_access_key_id = NESTED\n");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_OK);
    assert_string_equal(c.access_key, "AKDEF");
    assert_string_equal(c.secret_key, "SKDEF");
    assert_null(c.session_token);
    assert_string_equal(c.source, "profile");
    vt__creds_clear(&c);

    CPLSetConfigOption("AWS_PROFILE", "other");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_OK);
    assert_string_equal(c.access_key, "AKOTHER "); /* GDAL keeps the blank */
    assert_string_equal(c.session_token, "TOKOTHER");
    vt__creds_clear(&c);

    CPLSetConfigOption("AWS_PROFILE", "");
    CPLSetConfigOption("AWS_DEFAULT_PROFILE", "third");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_OK);
    assert_string_equal(c.access_key, "AKTHIRD");
    vt__creds_clear(&c);

    /* GDAL's order: AWS_DEFAULT_PROFILE wins over AWS_PROFILE. */
    CPLSetConfigOption("AWS_PROFILE", "other");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_OK);
    assert_string_equal(c.access_key, "AKTHIRD");
    vt__creds_clear(&c);

    /* A profile that does not exist, or holds no keys, lets the chain go on
     * (GDAL does; here it finds nothing and says what it looked at). */
    CPLSetConfigOption("AWS_DEFAULT_PROFILE", "");
    CPLSetConfigOption("AWS_PROFILE", "nosuch");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_ECREDS);
    assert_non_null(strstr(err, "profile 'nosuch': no keys"));
    CPLSetConfigOption("AWS_PROFILE", "empty");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_ECREDS);
    assert_non_null(strstr(err, "profile 'empty': no keys"));

    /* Explicit file locations. */
    write_file("creds2", "[default]\naws_access_key_id=AKFILE\naws_secret_access_key=SKFILE\n");
    CPLSetConfigOption("AWS_PROFILE", "");
    set_path_opt("AWS_SHARED_CREDENTIALS_FILE", "creds2");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_OK);
    assert_string_equal(c.access_key, "AKFILE");
    vt__creds_clear(&c);
}

static void test_cache(void **state)
{
    (void)state;
    vt_creds c;
    char err[512];
    write_file("c3", "[default]\naws_access_key_id=AK1\naws_secret_access_key=SK1\n");
    set_path_opt("AWS_SHARED_CREDENTIALS_FILE", "c3");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_OK);
    assert_string_equal(c.access_key, "AK1");
    vt__creds_clear(&c);
    /* The files are read on every call (as GDAL reads them on every open):
     * an edit applies at once. */
    write_file("c3", "[default]\naws_access_key_id=AK2\naws_secret_access_key=SK2\n");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_OK);
    assert_string_equal(c.access_key, "AK2");
    vt__creds_clear(&c);
    vt__creds_reset();
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_OK);
    assert_string_equal(c.access_key, "AK2");
    vt__creds_clear(&c);
    /* Environment keys take precedence over a cached profile. */
    CPLSetConfigOption("AWS_ACCESS_KEY_ID", "AKE");
    CPLSetConfigOption("AWS_SECRET_ACCESS_KEY", "SKE");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_OK);
    assert_string_equal(c.access_key, "AKE");
    vt__creds_clear(&c);
}

static void test_web_identity_token_missing(void **state)
{
    (void)state;
    vt_creds c;
    char err[2048];
    /* Configured web identity that cannot work: GDAL goes on down the
     * chain; the final message says why web identity did not answer. */
    CPLSetConfigOption("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/r");
    set_path_opt("AWS_WEB_IDENTITY_TOKEN_FILE", "no-such-token");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_ECREDS);
    assert_non_null(strstr(err, "web identity"));
    assert_non_null(strstr(err, "no-such-token"));
    /* CPL_AWS_WEB_IDENTITY_ENABLE=NO skips it. */
    CPLSetConfigOption("CPL_AWS_WEB_IDENTITY_ENABLE", "NO");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_ECREDS);
    assert_null(strstr(err, "no-such-token"));
    CPLSetConfigOption("CPL_AWS_WEB_IDENTITY_ENABLE", NULL);
    /* A FULL_URI to a foreign host over http is refused. */
    CPLSetConfigOption("AWS_ROLE_ARN", "");
    CPLSetConfigOption("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://example.com/creds");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_ECREDS);
    assert_non_null(strstr(err, "FULL_URI"));
}

/* GDAL's file options: CPL_AWS_CREDENTIALS_FILE (GDAL's name) wins over
 * AWS_SHARED_CREDENTIALS_FILE; /vsimem/ paths are read through VSIFOpenL;
 * "" names no file. */
static void test_file_options(void **state)
{
    (void)state;
    vt_creds c;
    char err[2048];
    VSILFILE *f = VSIFileFromMemBuffer(
        "/vsimem/vt_creds", (GByte *)CPLStrdup("[default]\naws_access_key_id=AKMEM\n"
                                          "aws_secret_access_key=SKMEM\n"),
        strlen("[default]\naws_access_key_id=AKMEM\naws_secret_access_key=SKMEM\n"),
        TRUE);
    VSIFCloseL(f);
    write_file("c5", "[default]\naws_access_key_id=AKAWS\naws_secret_access_key=SKAWS\n");
    set_path_opt("AWS_SHARED_CREDENTIALS_FILE", "c5");
    CPLSetConfigOption("CPL_AWS_CREDENTIALS_FILE", "/vsimem/vt_creds");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_OK);
    assert_string_equal(c.access_key, "AKMEM");
    vt__creds_clear(&c);
    CPLSetConfigOption("CPL_AWS_CREDENTIALS_FILE", "");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_ECREDS);
    CPLSetConfigOption("CPL_AWS_CREDENTIALS_FILE", NULL);
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_OK);
    assert_string_equal(c.access_key, "AKAWS");
    vt__creds_clear(&c);
    /* A network path is never read (it would need these credentials). */
    CPLSetConfigOption("CPL_AWS_CREDENTIALS_FILE", "/vsis3/b/credentials");
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_ECREDS);
    CPLSetConfigOption("CPL_AWS_CREDENTIALS_FILE", NULL);
    VSIUnlink("/vsimem/vt_creds");
}

/* Keys in both files that differ: the credentials file wins and GDAL's
 * warning is emitted; a named AWS_CONFIG_FILE that cannot be read is
 * warned about too. */
static void test_inconsistent_files(void **state)
{
    (void)state;
    vt_creds c;
    char err[2048];
    write_file("c6", "[default]\naws_access_key_id=AKC\naws_secret_access_key=SKC\n");
    write_file("f6", "[default]\naws_access_key_id=AKF\naws_secret_access_key=SKF\n");
    set_path_opt("AWS_SHARED_CREDENTIALS_FILE", "c6");
    set_path_opt("AWS_CONFIG_FILE", "f6");
    CPLErrorReset();
    CPLPushErrorHandler(CPLQuietErrorHandler);
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_OK);
    CPLPopErrorHandler();
    assert_string_equal(c.access_key, "AKC");
    vt__creds_clear(&c);
    assert_int_equal(CPLGetLastErrorType(), CE_Warning);
    assert_non_null(strstr(CPLGetLastErrorMsg(), "defined in both"));
    set_path_opt("AWS_CONFIG_FILE", "no-such-config");
    CPLErrorReset();
    CPLPushErrorHandler(CPLQuietErrorHandler);
    assert_int_equal(vt__creds_get(NULL, &c, err, sizeof(err)), VT_OK);
    CPLPopErrorHandler();
    vt__creds_clear(&c);
    assert_non_null(strstr(CPLGetLastErrorMsg(), "does not exist or cannot be open"));
}

/* Path-specific credentials (gdal.SetCredential): per bucket. A profile's
 * keys win over its role settings, as in GDAL. */
static void test_path_specific(void **state)
{
    (void)state;
    vt_creds c;
    char err[2048];
    CPLSetConfigOption("AWS_ACCESS_KEY_ID", "AKGLOBAL");
    CPLSetConfigOption("AWS_SECRET_ACCESS_KEY", "SKGLOBAL");
    VSISetPathSpecificOption("/vsis3/b1", "AWS_ACCESS_KEY_ID", "AKB1");
    VSISetPathSpecificOption("/vsis3/b1", "AWS_SECRET_ACCESS_KEY", "SKB1");
    VSISetPathSpecificOption("/vsis3/b2", "AWS_NO_SIGN_REQUEST", "YES");
    assert_int_equal(vt__creds_get("b1/k.tif", &c, err, sizeof(err)), VT_OK);
    assert_string_equal(c.access_key, "AKB1");
    vt__creds_clear(&c);
    assert_int_equal(vt__creds_get("b2/k.tif", &c, err, sizeof(err)), VT_OK);
    assert_int_equal(c.anonymous, 1);
    vt__creds_clear(&c);
    assert_int_equal(vt__creds_get("b3/k.tif", &c, err, sizeof(err)), VT_OK);
    assert_string_equal(c.access_key, "AKGLOBAL");
    vt__creds_clear(&c);
    /* Per-bucket profiles: two cache entries, neither evicts the other. */
    CPLSetConfigOption("AWS_ACCESS_KEY_ID", "");
    CPLSetConfigOption("AWS_SECRET_ACCESS_KEY", "");
    write_file("c7", "[p1]\naws_access_key_id=AKP1\naws_secret_access_key=SKP1\n"
                     "[p2]\naws_access_key_id=AKP2\naws_secret_access_key=SKP2\n");
    write_file("f7", "[profile p1]\nrole_arn = arn:aws:iam::1:role/r\n"
                     "source_profile = p2\n");
    set_path_opt("AWS_SHARED_CREDENTIALS_FILE", "c7");
    set_path_opt("AWS_CONFIG_FILE", "f7");
    VSISetPathSpecificOption("/vsis3/b4", "AWS_PROFILE", "p1");
    VSISetPathSpecificOption("/vsis3/b5", "AWS_PROFILE", "p2");
    for (int i = 0; i < 3; i++) {
        assert_int_equal(vt__creds_get("b4/k", &c, err, sizeof(err)), VT_OK);
        assert_string_equal(c.access_key, "AKP1"); /* keys beat the role */
        vt__creds_clear(&c);
        assert_int_equal(vt__creds_get("b5/k", &c, err, sizeof(err)), VT_OK);
        assert_string_equal(c.access_key, "AKP2");
        vt__creds_clear(&c);
    }
    VSIClearPathSpecificOptions(NULL);
}

/* Many threads reading while another resets the cache: every answer is the
 * profile's keys, never a torn or freed copy (ASan/TSan builds check the
 * memory side). */
static int hammer_bad;

static void *hammer(void *arg)
{
    (void)arg;
    for (int i = 0; i < 300; i++) {
        vt_creds c;
        char err[512];
        if (vt__creds_get(NULL, &c, err, sizeof(err)) != VT_OK ||
            strcmp(c.access_key, "AKT") || strcmp(c.secret_key, "SKT") ||
            strcmp(c.session_token, "TT"))
            __atomic_store_n(&hammer_bad, 1, __ATOMIC_SEQ_CST);
        vt__creds_clear(&c);
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    pthread_t t[6];
    write_file("c4", "[default]\naws_access_key_id=AKT\naws_secret_access_key=SKT\n"
                     "aws_session_token=TT\n");
    set_path_opt("AWS_SHARED_CREDENTIALS_FILE", "c4");
    hammer_bad = 0;
    for (int i = 0; i < 6; i++)
        assert_int_equal(pthread_create(&t[i], NULL, hammer, NULL), 0);
    for (int i = 0; i < 100; i++)
        vt__creds_reset();
    for (int i = 0; i < 6; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(hammer_bad, 0);
}

/* value of key in section of t, compared with want (NULL: absent) */
static void ini_is(const char *t, size_t n, const char *section,
                   const char *key, const char *want)
{
    char *v = vt__ini_get(t, n, section, key);
    if (want)
        assert_string_equal(v ? v : "(absent)", want);
    else
        assert_null(v);
    free(v);
}

/* GDAL's rules (cpl_aws.cpp ReadAWSCredentials): see creds_parse.h. */
static void test_ini(void **state)
{
    (void)state;
    const char *t = "[a]\nk = 1\n[b]\nk=2\nK = 3\n  k = nested\n[ c ]\nx=\n";
    ini_is(t, strlen(t), "a", "k", "1");
    ini_is(t, strlen(t), "b", "k", "3"); /* last wins, keys case-insensitive */
    ini_is(t, strlen(t), "c", "x", NULL); /* "[ c ]" is no "[c]" */
    ini_is(t, strlen(t), "d", "k", NULL);
    ini_is(t, strlen(t), "a", "x", NULL);
    /* Bounded by length: the part after len is not seen. */
    ini_is(t, 8, "b", "k", NULL);
    /* The first section of a name is the profile. */
    t = "[default]\nk = first\n[other]\nk = o\n[default]\nk = second\n";
    ini_is(t, strlen(t), "default", "k", "first");
    /* No comments: an inline one is part of the value, as are trailing
     * blanks; ':' splits too, at the first separator. */
    t = "[d]\nk = v # note\nj:  a=b  \n# k = c\n;k = c\n";
    ini_is(t, strlen(t), "d", "k", "v # note");
    ini_is(t, strlen(t), "d", "j", "a=b  ");
    /* A header is a whole line from the first column. */
    t = "[d] \nk = 1\n [d]\nk = 2\n[d]\r\nk = 3\r\n";
    ini_is(t, strlen(t), "d", "k", "3");
    /* \r alone ends a line; a NUL ends a line's text. */
    t = "[d]\rk = 4\rj = x\0y\n";
    ini_is(t, 18, "d", "k", "4");
    ini_is(t, 18, "d", "j", "x");
    /* The config file: "[profile NAME]" or "[NAME]", the first of either. */
    size_t off, n;
    t = "[x]\nk = 1\n[profile x]\nk = 2\n";
    assert_int_equal(vt__ini_section(t, strlen(t), "x", "profile x", &off, &n), 1);
    assert_int_equal(off, 4);
    assert_int_equal(n, 6);
    assert_int_equal(vt__ini_section(t, strlen(t), "y", "profile y", &off, &n), 0);
}

/* A file read whole through a buffer that grows (it starts at 64 KiB):
 * every byte up to the cap, EFBIG over it. */
static void test_read_file_cap(void **state)
{
    (void)state;
    size_t big = 200 * 1024 + 7, len = 0;
    char *data = malloc(big), *got;
    assert_non_null(data);
    for (size_t i = 0; i < big; i++)
        data[i] = (char)('a' + i % 26);
    VSILFILE *f = VSIFileFromMemBuffer("/vsimem/test_creds_big", (GByte *)data,
                                       big, FALSE);
    assert_non_null(f);
    VSIFCloseL(f);
    got = vt__creds_read_file("/vsimem/test_creds_big", VT_CREDS_SHARED_CAP, &len);
    assert_non_null(got);
    assert_int_equal(len, big);
    assert_memory_equal(got, data, big);
    assert_int_equal(got[len], '\0');
    free(got);
    got = vt__creds_read_file("/vsimem/test_creds_big", big, &len); /* exactly */
    assert_non_null(got);
    assert_int_equal(len, big);
    free(got);
    errno = 0;
    assert_null(vt__creds_read_file("/vsimem/test_creds_big", big - 1, &len));
    assert_int_equal(errno, EFBIG);
    assert_int_equal(len, 0);
    VSIUnlink("/vsimem/test_creds_big");
    free(data);
}

static void test_iso8601(void **state)
{
    (void)state;
    time_t t;
    assert_int_equal(vt__parse_iso8601("2013-05-24T00:00:00Z", &t), 0);
    assert_int_equal((long long)t, 1369353600LL);
    assert_int_equal(vt__parse_iso8601("2013-05-24T00:00:00.123Z", &t), 0);
    assert_int_equal((long long)t, 1369353600LL);
    assert_int_equal(vt__parse_iso8601("2013-05-24T02:00:00+02:00", &t), 0);
    assert_int_equal((long long)t, 1369353600LL);
    static const char *bad[] = {"", "2013-05-24", "2013-05-24T00:00:00",
                                "2013-13-24T00:00:00Z", "2013-05-24T00:00:00Zx",
                                "2013/05/24T00:00:00Z", "2013-05-24T00:00:00+0200"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(vt__parse_iso8601(bad[i], &t), -1);
}

static void test_sts_xml(void **state)
{
    (void)state;
    vt_creds c = {0};
    const char *x =
        "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n"
        "  <AssumeRoleWithWebIdentityResult>\n"
        "    <SubjectFromWebIdentityToken>sub</SubjectFromWebIdentityToken>\n"
        "    <Credentials>\n"
        "      <SessionToken>FQoG&amp;token</SessionToken>\n"
        "      <SecretAccessKey>wJalr/secret</SecretAccessKey>\n"
        "      <Expiration>2014-10-24T23:00:23Z</Expiration>\n"
        "      <AccessKeyId>ASgeIAIOSFODNN7EXAMPLE</AccessKeyId>\n"
        "    </Credentials>\n"
        "  </AssumeRoleWithWebIdentityResult>\n"
        "</AssumeRoleWithWebIdentityResponse>\n";
    assert_int_equal(vt__creds_parse_sts_xml(x, strlen(x), &c), VT_OK);
    assert_string_equal(c.access_key, "ASgeIAIOSFODNN7EXAMPLE");
    assert_string_equal(c.secret_key, "wJalr/secret");
    assert_string_equal(c.session_token, "FQoG&token");
    assert_int_equal((long long)c.expiration, 1414191623LL);
    vt__creds_clear(&c);
    const char *e = "<ErrorResponse><Error><Code>InvalidIdentityToken</Code>"
                    "</Error></ErrorResponse>";
    assert_int_equal(vt__creds_parse_sts_xml(e, strlen(e), &c), VT_EPROTO);
    assert_null(c.access_key);
    const char *badexp = "<AccessKeyId>A</AccessKeyId><SecretAccessKey>S"
                         "</SecretAccessKey><Expiration>soon</Expiration>";
    assert_int_equal(vt__creds_parse_sts_xml(badexp, strlen(badexp), &c), VT_EPROTO);
    assert_null(c.access_key);
}

static void test_json(void **state)
{
    (void)state;
    vt_creds c = {0};
    const char *ecs = "{\"AccessKeyId\":\"ASIAECS\",\"Expiration\":\"2026-11-30T20:00:00Z\","
                      "\"RoleArn\":\"arn:aws:iam::1:role/r\",\"SecretAccessKey\":"
                      "\"s\\/e\\\"c\\u00e9\",\"Token\":\"T\\nO\"}";
    assert_int_equal(vt__creds_parse_json(ecs, strlen(ecs), &c), VT_OK);
    assert_string_equal(c.access_key, "ASIAECS");
    assert_string_equal(c.secret_key, "s/e\"c\xc3\xa9");
    assert_string_equal(c.session_token, "T\nO");
    assert_true(c.expiration > 0);
    vt__creds_clear(&c);
    const char *imds = "{\n  \"Code\" : \"Success\",\n  \"LastUpdated\" : \"2026-11-30T13:00:00Z\",\n"
                       "  \"Type\" : \"AWS-HMAC\",\n  \"AccessKeyId\" : \"ASIAIMDS\",\n"
                       "  \"SecretAccessKey\" : \"sk\",\n  \"Token\" : \"tok\",\n"
                       "  \"Expiration\" : \"2026-11-30T19:00:00Z\"\n}";
    assert_int_equal(vt__creds_parse_json(imds, strlen(imds), &c), VT_OK);
    assert_string_equal(c.access_key, "ASIAIMDS");
    vt__creds_clear(&c);
    const char *fail = "{\"Code\":\"AssumeRoleUnauthorizedAccess\",\"AccessKeyId\":\"A\","
                       "\"SecretAccessKey\":\"S\"}";
    assert_int_equal(vt__creds_parse_json(fail, strlen(fail), &c), VT_EPROTO);
    /* A key name inside a value is not a key. */
    const char *trick = "{\"Note\":\"\\\"AccessKeyId\\\":\\\"EVIL\\\"\",\"AccessKeyId\":\"GOOD\","
                        "\"SecretAccessKey\":\"S\"}";
    assert_int_equal(vt__creds_parse_json(trick, strlen(trick), &c), VT_OK);
    assert_string_equal(c.access_key, "GOOD");
    vt__creds_clear(&c);
    static const char *bad[] = {"", "{", "{\"AccessKeyId\":", "{\"AccessKeyId\":\"A",
                                "{\"AccessKeyId\":\"A\\u12\"}", "[1,2,3]",
                                "{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"\"}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(vt__creds_parse_json(bad[i], strlen(bad[i]), &c), VT_EPROTO);
        assert_null(c.access_key);
    }
}

static void test_role_list_and_urls(void **state)
{
    (void)state;
    char *r = vt__imds_first_role("\n  my-role_1@x\nsecond\n", 22);
    assert_string_equal(r, "my-role_1@x");
    free(r);
    assert_null(vt__imds_first_role("", 0));
    assert_null(vt__imds_first_role("bad role\n", 9));
    assert_null(vt__imds_first_role("../etc\n", 7));

    int refused;
    char *u = vt__container_url("/v2/credentials/abc", NULL, &refused);
    assert_string_equal(u, "http://169.254.170.2/v2/credentials/abc");
    assert_int_equal(refused, 0);
    free(u);
    u = vt__container_url(NULL, "http://127.0.0.1:8080/creds", &refused);
    assert_string_equal(u, "http://127.0.0.1:8080/creds");
    free(u);
    u = vt__container_url(NULL, "http://169.254.170.23/v1/credentials", &refused);
    assert_non_null(u);
    free(u);
    u = vt__container_url(NULL, "https://creds.example.com/x", &refused);
    assert_non_null(u);
    free(u);
    assert_null(vt__container_url(NULL, "http://127.0.0.1.evil.com/x", &refused));
    assert_int_equal(refused, 1);
    assert_null(vt__container_url(NULL, "ftp://127.0.0.1/x", &refused));
    assert_int_equal(refused, 1);
    assert_null(vt__container_url(NULL, NULL, &refused));
    assert_int_equal(refused, 0);

    assert_int_equal(vt__ec2_guess("ec2e1916-9099-7caf-fd21-012345abcdef\n", NULL), 1);
    assert_int_equal(vt__ec2_guess("EC2E1916", "Xen"), 1);
    assert_int_equal(vt__ec2_guess("4b2ab3c0-0000", "Amazon EC2"), 0);
    assert_int_equal(vt__ec2_guess(NULL, "Amazon EC2\n"), 1);
    assert_int_equal(vt__ec2_guess(NULL, "QEMU\n"), 0);
    assert_int_equal(vt__ec2_guess(NULL, NULL), -1);
}

/* Random bytes with JSON/XML/INI fragments: the parsers never crash or read
 * past len (buffers are exactly len bytes; ASan builds catch overreads). */
static void test_garbage(void **state)
{
    (void)state;
    uint32_t seed = 777;
    static const char *frags[] = {"\"AccessKeyId\"", ":", "\"", "\\", "\\u00", "{", "}",
                                  "<AccessKeyId>", "</AccessKeyId>", "[default]", "=",
                                  "\n", "<SecretAccessKey>", "\"Token\":\""};
    for (int iter = 0; iter < 20000; iter++) {
        size_t len;
        char *buf = fuzz_bytes(&seed, 128, frags, sizeof(frags) / sizeof(frags[0]), &len);
        vt_creds c = {0};
        if (vt__creds_parse_json(buf, len, &c) == VT_OK)
            vt__creds_clear(&c);
        if (vt__creds_parse_sts_xml(buf, len, &c) == VT_OK)
            vt__creds_clear(&c);
        free(vt__ini_get(buf, len, "default", "aws_access_key_id"));
        free(vt__imds_first_role(buf, len));
        free(buf);
    }
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_creds.XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    char p[512];
    snprintf(p, sizeof(p), "%s/.aws", tmpdir);
    return mkdir(p, 0700);
}

static int group_teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_env, setup),
        cmocka_unit_test_setup(test_nothing_found, setup),
        cmocka_unit_test_setup(test_profiles, setup),
        cmocka_unit_test_setup(test_cache, setup),
        cmocka_unit_test_setup(test_web_identity_token_missing, setup),
        cmocka_unit_test_setup(test_file_options, setup),
        cmocka_unit_test_setup(test_inconsistent_files, setup),
        cmocka_unit_test_setup(test_path_specific, setup),
        cmocka_unit_test_setup(test_threads, setup),
        cmocka_unit_test_setup(test_ini, setup),
        cmocka_unit_test_setup(test_read_file_cap, setup),
        cmocka_unit_test_setup(test_iso8601, setup),
        cmocka_unit_test_setup(test_sts_xml, setup),
        cmocka_unit_test_setup(test_json, setup),
        cmocka_unit_test_setup(test_role_list_and_urls, setup),
        cmocka_unit_test_setup(test_garbage, setup),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
