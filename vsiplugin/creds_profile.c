/* creds_profile.c: the shared credentials and config files provider
 * (~/.aws/credentials, ~/.aws/config, AWS_SHARED_CREDENTIALS_FILE,
 * AWS_CONFIG_FILE), profile from AWS_PROFILE / AWS_DEFAULT_PROFILE. Keys are
 * returned directly; role settings (role_arn with source_profile or
 * web_identity_token_file) are handed back to creds.c as a hint. Reads files,
 * no network, no lock. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "creds_int.h"
#include "forksafe.h"
#include "creds_parse.h"

/* ---- provider: shared credentials / config files ---------------------- */

void vt__profile_hint_clear(struct vt_profile_hint *h)
{
    free(h->role_arn);
    free(h->token_file);
    free(h->session_name);
    free(h->source_profile);
    vt__creds_clear(&h->source);
    free(h->external_id);
    memset(h, 0, sizeof(*h));
}

/* Keys of profile name: the credentials file's [name], else the config
 * file's [profile name] / [name]. *section_seen tells whether any section of
 * that name exists. Strings malloc'd into *ak, *sk, *tok (caller frees). */
static void profile_keys(const char *ctext, size_t clen, const char *ftext,
                         size_t flen, const char *name, char **ak, char **sk,
                         char **tok, int *section_seen)
{
    char sect[300];
    *ak = *sk = *tok = NULL;
    *section_seen = 0;
    if (ctext) {
        *ak = vt__ini_get(ctext, clen, name, "aws_access_key_id");
        *sk = vt__ini_get(ctext, clen, name, "aws_secret_access_key");
        *tok = vt__ini_get(ctext, clen, name, "aws_session_token");
        *section_seen = vt__ini_has_section(ctext, clen, name);
    }
    if (!ftext || *ak || *sk)
        return;
    snprintf(sect, sizeof(sect), "profile %s", name);
    const char *s = vt__ini_has_section(ftext, flen, sect)   ? sect
                    : vt__ini_has_section(ftext, flen, name) ? name
                                                             : NULL;
    if (!s)
        return;
    *section_seen = 1;
    *ak = vt__ini_get(ftext, flen, s, "aws_access_key_id");
    *sk = vt__ini_get(ftext, flen, s, "aws_secret_access_key");
    free(*tok);
    *tok = vt__ini_get(ftext, flen, s, "aws_session_token");
}

static void home_path(char *buf, size_t len, const char *opt_name,
                      const char *leaf)
{
    const char *o = vt__creds_opt(opt_name), *home = vt__creds_opt("HOME");
    if (o)
        snprintf(buf, len, "%s", o);
    else
        snprintf(buf, len, "%s/.aws/%s", home ? home : "", leaf);
}

/* 1: found (out filled); 0: not there (notes say why, hint may name a role
 * to assume); -1: error (errbuf). */
int vt__creds_from_profile(vt_creds *out, struct vt_profile_hint *hint,
                           char *notes, size_t nlen, char *errbuf,
                           size_t errlen)
{
    char cpath[1024], fpath[1024], sect[300];
    const char *explicit_name = vt__creds_opt("AWS_PROFILE");
    if (!explicit_name)
        explicit_name = vt__creds_opt("AWS_DEFAULT_PROFILE");
    const char *name = explicit_name ? explicit_name : "default";
    char *ctext = NULL, *ftext = NULL;
    size_t clen = 0, flen = 0;
    int found_section = 0, rc = 0;
    char *ak = NULL, *sk = NULL, *tok = NULL;

    home_path(cpath, sizeof(cpath), "AWS_SHARED_CREDENTIALS_FILE",
              "credentials");
    home_path(fpath, sizeof(fpath), "AWS_CONFIG_FILE", "config");
    ctext = vt__creds_read_file(cpath, &clen);
    ftext = vt__creds_read_file(fpath, &flen);

    /* Role settings live in the config file ("[profile NAME]", "[default]"
     * for the default one; "[NAME]" accepted too). Like the AWS CLI, a role
     * wins over keys of the same profile. */
    snprintf(sect, sizeof(sect), "profile %s", name);
    const char *cs = !ftext                                   ? NULL
                     : vt__ini_has_section(ftext, flen, sect) ? sect
                     : vt__ini_has_section(ftext, flen, name) ? name
                                                              : NULL;
    if (cs) {
        hint->role_arn = vt__ini_get(ftext, flen, cs, "role_arn");
        hint->token_file =
            vt__ini_get(ftext, flen, cs, "web_identity_token_file");
        hint->session_name = vt__ini_get(ftext, flen, cs, "role_session_name");
        hint->source_profile = vt__ini_get(ftext, flen, cs, "source_profile");
        hint->external_id = vt__ini_get(ftext, flen, cs, "external_id");
        char *mfa = vt__ini_get(ftext, flen, cs, "mfa_serial");
        char *csrc = vt__ini_get(ftext, flen, cs, "credential_source");
        hint->unsupported = mfa    ? "mfa_serial"
                            : csrc ? "credential_source"
                                   : NULL;
        free(mfa);
        free(csrc);
    }
    if (hint->role_arn &&
        (hint->token_file || hint->source_profile || hint->unsupported)) {
        if (hint->source_profile && !hint->token_file && !hint->unsupported) {
            int seen = 0;
            profile_keys(ctext, clen, ftext, flen, hint->source_profile, &ak,
                         &sk, &tok, &seen);
            if (!ak || !sk || !*ak || !*sk) {
                vt__creds_put(
                    errbuf, errlen,
                    "AWS profile '%s': source_profile '%s' has "
                    "no aws_access_key_id/aws_secret_access_key (%s, %s)",
                    name, hint->source_profile, cpath, fpath);
                rc = -1;
                goto out;
            }
            hint->source.access_key = ak;
            hint->source.secret_key = sk;
            hint->source.session_token = (tok && *tok) ? tok : NULL;
            if (!hint->source.session_token)
                free(tok);
            ak = sk = tok = NULL;
        }
        goto out; /* rc 0: run_chain assumes the role */
    }

    profile_keys(ctext, clen, ftext, flen, name, &ak, &sk, &tok,
                 &found_section);
    found_section |= (cs != NULL);
    if (ak && sk && *ak && *sk) {
        vt_creds c = {.access_key = ak,
                      .secret_key = sk,
                      .session_token = (tok && *tok) ? tok : NULL,
                      .source = "profile"};
        rc = vt__creds_copy(out, &c) == VT_OK ? 1 : -1;
        if (rc < 0)
            vt__creds_put(errbuf, errlen, "out of memory");
        goto out;
    }
    if (ak || sk) {
        vt__creds_put(errbuf, errlen,
                      "AWS profile '%s' has only one of aws_access_key_id and "
                      "aws_secret_access_key (%s, %s)",
                      name, cpath, fpath);
        rc = -1;
        goto out;
    }
    if (explicit_name && !found_section) {
        vt__creds_put(errbuf, errlen,
                      "AWS profile '%s' (AWS_PROFILE) not found in %s or %s",
                      name, cpath, fpath);
        rc = -1;
        goto out;
    }
    vt__creds_note(notes, nlen, "no keys for profile '%s' in %s%s or %s%s",
                   name, cpath, ctext ? "" : " (absent)", fpath,
                   ftext ? "" : " (absent)");
out:
    free(ak);
    vt__creds_free_secret(sk);
    free(tok);
    free(ctext);
    free(ftext);
    return rc;
}

/* ---- the profile's region ------------------------------------------- */

/* Last answer of vt__creds_profile_region, under region_lock (a leaf lock,
 * never held across the file read). */
static pthread_mutex_t region_lock = PTHREAD_MUTEX_INITIALIZER;
static char *region_key; /* "profile\x1fconfig path", malloc'd */
static char *region_val; /* malloc'd, NULL: the profile sets no region */

/* Register region_lock with forksafe.c once (first use). */
static pthread_once_t region_once = PTHREAD_ONCE_INIT;

static void region_forksafe(void)
{
    vt__forksafe_register(&region_lock);
}

static const char *profile_name(void)
{
    const char *n = vt__creds_opt("AWS_PROFILE");
    if (!n)
        n = vt__creds_opt("AWS_DEFAULT_PROFILE");
    return n ? n : "default";
}

char *vt__creds_profile_region(void)
{
    char fpath[1024], sect[300], *key, *val = NULL, *out = NULL;
    size_t flen = 0;
    const char *name = profile_name();
    int hit = 0;

    home_path(fpath, sizeof(fpath), "AWS_CONFIG_FILE", "config");
    size_t klen = strlen(name) + strlen(fpath) + 2;
    key = malloc(klen);
    if (!key)
        return NULL;
    snprintf(key, klen, "%s\x1f%s", name, fpath);

    pthread_once(&region_once, region_forksafe);
    pthread_mutex_lock(&region_lock);
    if (region_key && !strcmp(region_key, key)) {
        hit = 1;
        out = region_val ? strdup(region_val) : NULL;
    }
    pthread_mutex_unlock(&region_lock);
    if (hit) {
        free(key);
        return out;
    }

    char *ftext = vt__creds_read_file(fpath, &flen);
    if (ftext) {
        snprintf(sect, sizeof(sect), "profile %s", name);
        val = vt__ini_get(ftext, flen, sect, "region");
        if (!val)
            val = vt__ini_get(ftext, flen, name, "region");
        if (val && !*val) {
            free(val);
            val = NULL;
        }
        free(ftext);
    }
    out = val ? strdup(val) : NULL;
    pthread_mutex_lock(&region_lock);
    free(region_key);
    free(region_val);
    region_key = key;
    region_val = val;
    pthread_mutex_unlock(&region_lock);
    return out;
}

void vt__creds_profile_region_reset(void)
{
    pthread_mutex_lock(&region_lock);
    free(region_key);
    free(region_val);
    region_key = region_val = NULL;
    pthread_mutex_unlock(&region_lock);
}
