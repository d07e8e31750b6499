/* fuzz_aws_profile.c: libFuzzer target for the AWS profile as GDAL reads it
 * from the shared files (creds_profile.c vt__profile_parse): the profile
 * name, ~/.aws/credentials and ~/.aws/config come from the input,
 * "NAME\0CREDENTIALS\0CONFIG" (a missing part: "default", file absent), each
 * file NUL-terminated as vt__creds_read_file gives it. With GDAL's warnings
 * on (a key set differently in both files, a config file named but absent:
 * quiet handler). Every field found is a non-empty copy of part of a file
 * (an empty value reads as absent); role settings and region come only from
 * the config file; everything is freed (ASan's leak check). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_error.h>

#include "auth/creds_int.h"

/* The next part of data[0, size) from *at up to a NUL or the end; NULL
 * when none is left (*at past the end). */
static const char *part(const char *data, size_t size, size_t *at, size_t *len)
{
    const char *s, *z;
    if (*at > size)
        return NULL;
    s = data + *at;
    z = memchr(s, '\0', size - *at);
    *len = z ? (size_t)(z - s) : size - *at;
    *at += *len + 1;
    return s;
}

static char *text_of(const char *s, size_t n)
{
    char *t = malloc(n + 1);
    if (!t)
        abort();
    memcpy(t, s, n);
    t[n] = '\0';
    return t;
}

static void check(const char *v, size_t max)
{
    if (v && (!*v || strlen(v) > max))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    const char *in = (const char *)data, *name, *ctext, *ftext;
    size_t at = 0, nlen = 0, clen = 0, flen = 0, max;
    struct vt_shared_files f;
    struct vt_profile p;
    char *pname;

    if (!quiet) {
        CPLPushErrorHandler(CPLQuietErrorHandler);
        quiet = 1;
    }
    name = part(in, size, &at, &nlen);
    ctext = part(in, size, &at, &clen);
    ftext = part(in, size, &at, &flen);
    memset(&f, 0, sizeof(f));
    strcpy(f.cred_path, "/fuzz/credentials");
    strcpy(f.config_path, "/fuzz/config");
    f.explicit_config = 1;
    if (ctext) {
        f.ctext = text_of(ctext, clen);
        f.clen = clen;
    }
    if (ftext) {
        f.ftext = text_of(ftext, flen);
        f.flen = flen;
    }
    pname = name && nlen ? text_of(name, nlen) : text_of("default", 7);

    vt__profile_parse(&f, pname, 1, &p);
    max = clen > flen ? clen : flen;
    check(p.access_key, max);
    check(p.secret_key, max);
    check(p.session_token, max);
    check(p.region, flen);
    check(p.role_arn, flen);
    check(p.source_profile, flen);
    check(p.external_id, flen);
    check(p.mfa_serial, flen);
    check(p.session_name, flen);
    check(p.token_file, flen);
    if (!ftext && (p.region || p.role_arn || p.source_profile || p.token_file))
        abort();
    if (!ctext && !ftext && (p.access_key || p.secret_key || p.session_token))
        abort();
    vt__profile_clear(&p);
    vt__shared_files_clear(&f);
    free(pname);
    return 0;
}
