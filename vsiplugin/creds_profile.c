/* creds_profile.c: the shared credentials and config files, read as GDAL
 * reads them (GetConfigurationFromAWSConfigFiles in cpl_aws.cpp): through
 * VSIFOpenL, the profile from AWS_DEFAULT_PROFILE / AWS_PROFILE / "default",
 * keys from the credentials file first, role settings and region from the
 * config file. Reads files, no network, no lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_error.h>

#include "creds_int.h"
#include "creds_parse.h"

void vt__shared_files_read(const struct vt_copts *o, struct vt_shared_files *f)
{
    memset(f, 0, sizeof(*f));
    vt__copts_files(o, f->cred_path, sizeof(f->cred_path), f->config_path,
                    sizeof(f->config_path), &f->explicit_config);
    f->ctext = vt__creds_read_file(f->cred_path, &f->clen);
    f->ftext = vt__creds_read_file(f->config_path, &f->flen);
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

/* An empty value reads as absent (GDAL tests values with empty()). */
static char *ini_value(const char *text, size_t len, const char *section,
                       const char *key)
{
    char *v = vt__ini_get(text, len, section, key);
    if (v && !*v) {
        free(v);
        v = NULL;
    }
    return v;
}

/* GDAL's UpdateAndWarnIfInconsistent: the credentials file's value stays;
 * the config file's fills it in when absent; a different one is warned
 * about. Takes ownership of from_config. */
static void merge_key(char **val, char *from_config, const char *key,
                      const struct vt_shared_files *f, int warn)
{
    if (!from_config)
        return;
    if (!*val) {
        *val = from_config;
        return;
    }
    if (strcmp(*val, from_config) != 0 && warn)
        CPLError(CE_Warning, CPLE_AppDefined,
                 "%s defined in both %s and %s. The one of %s will be used",
                 key, f->cred_path, f->config_path, f->cred_path);
    vt__creds_free_secret(from_config);
}

void vt__profile_parse(const struct vt_shared_files *f, const char *name,
                       int warn, struct vt_profile *p)
{
    char sect[300];
    const char *cs = NULL;

    memset(p, 0, sizeof(*p));
    if (f->ctext) {
        p->access_key = ini_value(f->ctext, f->clen, name, "aws_access_key_id");
        p->secret_key =
            ini_value(f->ctext, f->clen, name, "aws_secret_access_key");
        p->session_token =
            ini_value(f->ctext, f->clen, name, "aws_session_token");
    }
    if (!f->ftext) {
        if (f->explicit_config && f->config_path[0] && warn)
            CPLError(CE_Warning, CPLE_AppDefined,
                     "%s does not exist or cannot be open", f->config_path);
        return;
    }
    /* "[profile NAME]" nominally, "[NAME]" accepted (and for default). */
    snprintf(sect, sizeof(sect), "profile %s", name);
    cs = vt__ini_has_section(f->ftext, f->flen, sect)   ? sect
         : vt__ini_has_section(f->ftext, f->flen, name) ? name
                                                        : NULL;
    if (!cs)
        return;
    merge_key(&p->access_key,
              ini_value(f->ftext, f->flen, cs, "aws_access_key_id"),
              "aws_access_key_id", f, warn);
    merge_key(&p->secret_key,
              ini_value(f->ftext, f->flen, cs, "aws_secret_access_key"),
              "aws_secret_access_key", f, warn);
    merge_key(&p->session_token,
              ini_value(f->ftext, f->flen, cs, "aws_session_token"),
              "aws_session_token", f, warn);
    p->region = ini_value(f->ftext, f->flen, cs, "region");
    p->role_arn = ini_value(f->ftext, f->flen, cs, "role_arn");
    p->source_profile = ini_value(f->ftext, f->flen, cs, "source_profile");
    p->external_id = ini_value(f->ftext, f->flen, cs, "external_id");
    p->mfa_serial = ini_value(f->ftext, f->flen, cs, "mfa_serial");
    p->session_name = ini_value(f->ftext, f->flen, cs, "role_session_name");
    p->token_file =
        ini_value(f->ftext, f->flen, cs, "web_identity_token_file");
}

char *vt__creds_profile_region(const char *path)
{
    struct vt_copts o;
    struct vt_shared_files f;
    struct vt_profile p;
    char *r = NULL;

    vt__copts_load(path, &o);
    /* GDAL reads the shared files (and so their region) only when neither
     * AWS_NO_SIGN_REQUEST nor AWS_SECRET_ACCESS_KEY settles credentials. */
    if (!vt__copt_bool(&o, CO_NO_SIGN, 0) && !vt__copt(&o, CO_SECRET_KEY)) {
        vt__shared_files_read(&o, &f);
        vt__profile_parse(&f, vt__profile_name(&o), 0, &p);
        r = p.region;
        p.region = NULL;
        vt__profile_clear(&p);
        vt__shared_files_clear(&f);
    }
    vt__copts_clear(&o);
    return r;
}
