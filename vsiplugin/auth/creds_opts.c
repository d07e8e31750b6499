/* creds_opts.c: the options the credentials chain reads, read once per
 * vt__creds_get call for the request's path (config.h), so one call sees one
 * consistent set, and the set is the key of its cache entry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_string.h>

#include "base/config.h"
#include "auth/creds_int.h"

static const char *const names[CO_COUNT] = {
    [CO_NO_SIGN] = "AWS_NO_SIGN_REQUEST",
    [CO_ACCESS_KEY] = "AWS_ACCESS_KEY_ID",
    [CO_SECRET_KEY] = "AWS_SECRET_ACCESS_KEY",
    [CO_SESSION_TOKEN] = "AWS_SESSION_TOKEN",
    [CO_DEFAULT_PROFILE] = "AWS_DEFAULT_PROFILE",
    [CO_PROFILE] = "AWS_PROFILE",
    [CO_CREDS_FILE] = "CPL_AWS_CREDENTIALS_FILE",
    [CO_SHARED_CREDS_FILE] = "AWS_SHARED_CREDENTIALS_FILE",
    [CO_CONFIG_FILE] = "AWS_CONFIG_FILE",
    [CO_HOME] = "HOME",
    [CO_ROLE_ARN] = "AWS_ROLE_ARN",
    [CO_TOKEN_FILE] = "AWS_WEB_IDENTITY_TOKEN_FILE",
    [CO_SESSION_NAME] = "AWS_ROLE_SESSION_NAME",
    [CO_WEB_IDENTITY] = "CPL_AWS_WEB_IDENTITY_ENABLE",
    [CO_STS_ENDPOINT] = "AWS_STS_ENDPOINT",
    [CO_STS_REGION] = "AWS_STS_REGION",
    [CO_STS_ROOT_URL] = "CPL_AWS_STS_ROOT_URL",
    [CO_STS_REGIONAL] = "AWS_STS_REGIONAL_ENDPOINTS",
    [CO_REGION] = "AWS_REGION",
    [CO_DEFAULT_REGION] = "AWS_DEFAULT_REGION",
    [CO_HTTPS] = "AWS_HTTPS",
    [CO_TIMESTAMP] = "AWS_TIMESTAMP",
    [CO_CONTAINER_REL] = "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    [CO_CONTAINER_FULL] = "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    [CO_CONTAINER_TOKEN] = "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    [CO_CONTAINER_TOKEN_FILE] = "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    [CO_IMDS_ENDPOINT] = "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    [CO_EC2_ROOT_URL] = "CPL_AWS_EC2_API_ROOT_URL",
    [CO_IMDS_DISABLED] = "AWS_EC2_METADATA_DISABLED",
    [CO_EC2_AUTODETECT] = "CPL_AWS_AUTODETECT_EC2",
    [CO_EC2_CHECK_UUID] = "CPL_AWS_CHECK_HYPERVISOR_UUID",
};

int vt__copts_load(const char *path, struct vt_copts *o)
{
    memset(o, 0, sizeof(*o));
    for (int i = 0; i < CO_COUNT; i++)
        o->v[i] = vt__cfg_dup_raw(path, names[i]); /* NULL: unset (or OOM) */
    return 0;
}

int vt__copts_settle_without_files(const char *path)
{
    char *v = vt__cfg_dup(path, names[CO_NO_SIGN]);
    int settled = v && CPLTestBool(v);

    free(v);
    if (settled)
        return 1;
    v = vt__cfg_dup(path, names[CO_SECRET_KEY]);
    if (v) {
        memset(v, 0, strlen(v));
        free(v);
        return 1;
    }
    return 0;
}

void vt__copts_clear(struct vt_copts *o)
{
    for (int i = 0; i < CO_COUNT; i++) {
        if (o->v[i] && (i == CO_SECRET_KEY || i == CO_SESSION_TOKEN ||
                        i == CO_CONTAINER_TOKEN))
            memset(o->v[i], 0, strlen(o->v[i]));
        free(o->v[i]);
    }
    memset(o, 0, sizeof(*o));
}

const char *vt__copt(const struct vt_copts *o, enum vt_copt k)
{
    const char *v = o->v[k];
    return (v && *v) ? v : NULL;
}

const char *vt__copt_raw(const struct vt_copts *o, enum vt_copt k)
{
    return o->v[k];
}

int vt__copt_bool(const struct vt_copts *o, enum vt_copt k, int def)
{
    const char *v = vt__copt(o, k);
    return v ? (CPLTestBool(v) ? 1 : 0) : def;
}

char *vt__copts_fingerprint(const struct vt_copts *o)
{
    size_t n = 1;
    char *fp, *p;
    for (int i = 0; i < CO_COUNT; i++)
        n += (o->v[i] ? strlen(o->v[i]) + 1 : 1) + 1;
    fp = p = malloc(n);
    if (!fp)
        return NULL;
    for (int i = 0; i < CO_COUNT; i++) {
        /* "\x1e" marks unset, so "" and unset differ (GDAL tells them
         * apart for the file options). */
        if (o->v[i]) {
            size_t l = strlen(o->v[i]);
            memcpy(p, o->v[i], l);
            p += l;
            *p++ = '\x1d';
        } else {
            *p++ = '\x1e';
        }
        *p++ = '\x1f';
    }
    *p = '\0';
    return fp;
}

void vt__copts_files(const struct vt_copts *o, char *cred, size_t clen,
                     char *config, size_t flen, int *explicit_config)
{
    const char *home = vt__copt(o, CO_HOME);
    const char *c = vt__copt_raw(o, CO_CREDS_FILE);
    const char *f = vt__copt_raw(o, CO_CONFIG_FILE);

    if (!c)
        c = vt__copt(o, CO_SHARED_CREDS_FILE);
    if (c)
        snprintf(cred, clen, "%s", c);
    else
        snprintf(cred, clen, "%s/.aws/credentials", home ? home : "");
    if (f)
        snprintf(config, flen, "%s", f);
    else
        snprintf(config, flen, "%s/.aws/config", home ? home : "");
    if (explicit_config)
        *explicit_config = f != NULL;
}
