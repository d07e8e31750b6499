/* creds_profile.c: the shared credentials and config files, read as GDAL
 * reads them (GetConfigurationFromAWSConfigFiles in cpl_aws.cpp): through
 * VSIFOpenL, the profile from AWS_DEFAULT_PROFILE / AWS_PROFILE / "default",
 * keys from the credentials file first, role settings and region from the
 * config file. Reads files, no network, no lock. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_error.h>

#include "auth/creds_int.h"
#include "auth/creds_parse.h"

void vt__shared_files_read(const struct vt_copts *o, struct vt_shared_files *f)
{
    memset(f, 0, sizeof(*f));
    vt__copts_files(o, f->cred_path, sizeof(f->cred_path), f->config_path,
                    sizeof(f->config_path), &f->explicit_config);
    f->ctext = vt__creds_read_file(f->cred_path, VT_CREDS_SHARED_CAP,
                                   &f->clen);
    f->ftext = vt__creds_read_file(f->config_path, VT_CREDS_SHARED_CAP,
                                   &f->flen);
}

void vt__shared_files_clear(struct vt_shared_files *f)
{
    if (f->ctext)
        memset(f->ctext, 0, f->clen);
    if (f->ftext)
        memset(f->ftext, 0, f->flen);
    free(f->ctext);
    free(f->ftext);
    memset(f, 0, sizeof(*f));
}

void vt__profile_clear(struct vt_profile *p)
{
    free(p->access_key);
    vt__creds_free_secret(p->secret_key);
    vt__creds_free_secret(p->session_token);
    free(p->region);
    free(p->role_arn);
    free(p->source_profile);
    free(p->external_id);
    free(p->mfa_serial);
    free(p->session_name);
    free(p->token_file);
    memset(p, 0, sizeof(*p));
}

const char *vt__profile_name(const struct vt_copts *o)
{
    const char *n = vt__copt(o, CO_DEFAULT_PROFILE); /* GDAL: it wins */
    if (!n)
        n = vt__copt(o, CO_PROFILE);
    return n ? n : "default";
}

/* *dst = the line's value (the last line wins, as in GDAL). */
static void take(char **dst, const struct vt_ini_kv *kv)
{
    char *v = strndup(kv->val, kv->vlen);
    if (!v)
        return;
    vt__creds_free_secret(*dst);
    *dst = v;
}

/* GDAL's UpdateAndWarnIfInconsistent, for each such line of the config
 * file: a value still empty takes it; a different one stays, with GDAL's
 * warning (the key as the file spells it). */
static void merge(char **val, const struct vt_ini_kv *kv,
                  const struct vt_shared_files *f, int warn)
{
    if (!*val || !**val) {
        take(val, kv);
        return;
    }
    if ((strlen(*val) != kv->vlen || memcmp(*val, kv->val, kv->vlen)) && warn)
        CPLError(CE_Warning, CPLE_AppDefined,
                 "%.*s defined in both %s and %s. The one of %s will be used",
                 (int)kv->klen, kv->key, f->cred_path, f->config_path,
                 f->cred_path);
}

/* An empty value reads as absent (GDAL tests values with empty()). */
static void drop_empty(char **v)
{
    if (*v && !**v) {
        free(*v);
        *v = NULL;
    }
}

static void read_credentials(const struct vt_shared_files *f, const char *name,
                             struct vt_profile *p)
{
    struct vt_ini_kv kv;
    size_t off, n, pos = 0;

    if (!f->ctext || !vt__ini_section(f->ctext, f->clen, name, NULL, &off, &n))
        return;
    while (vt__ini_next(f->ctext + off, n, &pos, &kv)) {
        if (vt__ini_key_is(&kv, "aws_access_key_id", 1))
            take(&p->access_key, &kv);
        else if (vt__ini_key_is(&kv, "aws_secret_access_key", 1))
            take(&p->secret_key, &kv);
        else if (vt__ini_key_is(&kv, "aws_session_token", 1))
            take(&p->session_token, &kv);
    }
}

/* GDAL's names: the aws_* keys and region case-insensitively, the role
 * settings byte for byte. */
static void read_config(const struct vt_shared_files *f, const char *name,
                        int warn, struct vt_profile *p)
{
    static const struct {
        const char *key;
        size_t at;
    } roles[] = {
        {"role_arn", offsetof(struct vt_profile, role_arn)},
        {"source_profile", offsetof(struct vt_profile, source_profile)},
        {"external_id", offsetof(struct vt_profile, external_id)},
        {"mfa_serial", offsetof(struct vt_profile, mfa_serial)},
        {"role_session_name", offsetof(struct vt_profile, session_name)},
        {"web_identity_token_file", offsetof(struct vt_profile, token_file)},
    };
    struct vt_ini_kv kv;
    char sect[300];
    size_t off, n, pos = 0, i;

    /* "[profile NAME]" nominally, "[NAME]" too: the first of either. */
    snprintf(sect, sizeof(sect), "profile %s", name);
    if (!vt__ini_section(f->ftext, f->flen, name, sect, &off, &n))
        return;
    while (vt__ini_next(f->ftext + off, n, &pos, &kv)) {
        if (vt__ini_key_is(&kv, "aws_access_key_id", 1))
            merge(&p->access_key, &kv, f, warn);
        else if (vt__ini_key_is(&kv, "aws_secret_access_key", 1))
            merge(&p->secret_key, &kv, f, warn);
        else if (vt__ini_key_is(&kv, "aws_session_token", 1))
            merge(&p->session_token, &kv, f, warn);
        else if (vt__ini_key_is(&kv, "region", 1))
            take(&p->region, &kv);
        else
            for (i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
                if (vt__ini_key_is(&kv, roles[i].key, 0)) {
                    take((char **)((char *)p + roles[i].at), &kv);
                    break;
                }
    }
}

void vt__profile_parse(const struct vt_shared_files *f, const char *name,
                       int warn, struct vt_profile *p)
{
    char **fields[] = {&p->access_key, &p->secret_key,  &p->session_token,
                       &p->region,     &p->role_arn,    &p->source_profile,
                       &p->external_id, &p->mfa_serial, &p->session_name,
                       &p->token_file};

    memset(p, 0, sizeof(*p));
    read_credentials(f, name, p);
    if (f->ftext)
        read_config(f, name, warn, p);
    else if (f->explicit_config && f->config_path[0] && warn)
        CPLError(CE_Warning, CPLE_AppDefined,
                 "%s does not exist or cannot be open", f->config_path);
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        drop_empty(fields[i]);
}

char *vt__creds_profile_region(const char *path)
{
    struct vt_copts o;
    struct vt_shared_files f;
    struct vt_profile p;
    char *r = NULL;

    /* GDAL reads the shared files (and so their region) only when neither
     * AWS_NO_SIGN_REQUEST nor AWS_SECRET_ACCESS_KEY settles credentials:
     * asked first alone, as every open asks this more than once. */
    if (vt__copts_settle_without_files(path))
        return NULL;
    vt__copts_load(path, &o);
    vt__shared_files_read(&o, &f);
    vt__profile_parse(&f, vt__profile_name(&o), 0, &p);
    r = p.region;
    p.region = NULL;
    vt__profile_clear(&p);
    vt__shared_files_clear(&f);
    vt__copts_clear(&o);
    return r;
}
