/* gs_creds.c: GDAL 3.6's /vsigs/ credentials chain (gs_auth.h). The
 * chain reads every option for the request's path under "/vsigs/"
 * (VSIGetPathSpecificOption, as GDAL's GetConfiguration); the bearer
 * tokens of its OAuth2 grants are gs_token.c's. The chain also runs "dry"
 * (vt__gs_creds_peek): the same decisions, no token fetched, no CPLError
 * raised, for a name's identity and for whether vsitune can make its
 * requests as GDAL would at all. No lock. */
#include "auth/gs_auth.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>
#include <cpl_vsi.h>

#include <openssl/crypto.h>

#include "auth/credkey.h"
#include "auth/creds_int.h"
#include "auth/creds_parse.h"
#include "auth/sigv4.h"
#include "base/forksafe.h"

#define GS_PREFIX "/vsigs/"
#define TOKEN_URL_DEFAULT "https://accounts.google.com/o/oauth2/token"
#define JWT_AUD_DEFAULT "https://www.googleapis.com/oauth2/v4/token"
#define GCE_URL_DEFAULT                                                      \
    "http://metadata.google.internal/computeMetadata/v1/instance/"         \
    "service-accounts/default/token"
#define SCOPE_DEFAULT "https://www.googleapis.com/auth/devstorage.read_write"
#define KEY_FILE_CAP 32768 /* GDAL reads GS_OAUTH2_PRIVATE_KEY_FILE's first 32 KB */

/* ---- options ---------------------------------------------------------- */

char *vt__gs_opt(const char *path, const char *name)
{
    size_t l = strlen(GS_PREFIX) + strlen(path ? path : "") + 1;
    char *full = malloc(l), *out = NULL;
    const char *v;

    if (!full)
        return NULL;
    while (path && *path == '/')
        path++;
    snprintf(full, l, "%s%s", GS_PREFIX, path ? path : "");
    v = VSIGetPathSpecificOption(full, name, NULL);
    if (v && *v)
        out = strdup(v);
    free(full);
    return out;
}

static int opt_bool(const char *path, const char *name)
{
    char *v = vt__gs_opt(path, name);
    int r = v && CPLTestBool(v);
    free(v);
    return r;
}

/* Set while the chain runs dry (this thread): no fetch, no CPLError. */
static _Thread_local int t_dry;
/* Set by a dry run whose grant would be GDAL's own OAuth2 application. */
static _Thread_local int t_gdal_app;

static vt_err get_bearer(const struct vt_gs_grant *g, const char *source,
                         vt_gs_creds *out, char *errbuf, size_t errlen)
{
    if (!t_dry)
        return vt__gs_bearer(g, source, out, errbuf, errlen);
    out->mode = VT_GS_BEARER;
    out->source = source;
    return vt__ident_signer(g->who, g->secret, NULL, g->url, out->identity,
                            sizeof(out->identity))
               ? VT_ENOMEM
               : VT_OK;
}

/* ---- the chain -------------------------------------------------------- */

static char *cfg(const char *name, const char *def)
{
    const char *v = CPLGetConfigOption(name, def);
    return v ? strdup(v) : NULL;
}

/* GDAL's rule for a private key's text. */
static void fix_pem(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] == 'n') {
            *w++ = '\n';
            r++;
        } else if (*r != '\r') {
            *w++ = *r;
        }
    }
    *w = '\0';
    w = s;
    for (char *r = s; *r; r++)
        if (!(r[0] == '\n' && r[1] == '\n'))
            *w++ = *r;
    *w = '\0';
}

static vt_err jwt_grant(const char *path, char *pem, char *email,
                        const char *source, vt_gs_creds *out, char *errbuf,
                        size_t errlen)
{
    struct vt_gs_grant g = {.kind = VT_GS_G_JWT};
    char *scope = vt__gs_opt(path, "GS_OAUTH2_SCOPE");
    vt_err e;

    fix_pem(pem);
    g.url = cfg("GO2A_AUD", JWT_AUD_DEFAULT);
    g.secret = pem;
    g.who = email;
    g.extra = scope ? scope : strdup(SCOPE_DEFAULT);
    if (!g.url || !g.extra) {
        vt__gs_grant_clear(&g);
        return VT_ENOMEM;
    }
    e = get_bearer(&g, source, out, errbuf, errlen);
    vt__gs_grant_clear(&g);
    return e;
}

static vt_err refresh_grant(char *rt, char *id, char *sec, const char *source,
                            vt_gs_creds *out, char *errbuf, size_t errlen)
{
    struct vt_gs_grant g = {.kind = VT_GS_G_REFRESH, .secret = rt, .who = id, .extra = sec};
    vt_err e;

    /* GDAL falls back to GOA2_CLIENT_ID / GOA2_CLIENT_SECRET, then to its
     * own application's pair, which vsitune does not carry: such names are
     * left to GDAL's handler (vt__gs_creds_peek's gdal_app). */
    if (!g.who || !*g.who) {
        free(g.who);
        g.who = cfg("GOA2_CLIENT_ID", "");
    }
    if (!g.extra || !*g.extra) {
        vt__creds_free_secret(g.extra);
        g.extra = cfg("GOA2_CLIENT_SECRET", "");
    }
    g.url = cfg("GOA2_AUTH_URL_TOKEN", TOKEN_URL_DEFAULT);
    if (!g.url || !g.who || !g.extra) {
        vt__gs_grant_clear(&g);
        return VT_ENOMEM;
    }
    if (!*g.who || !*g.extra) {
        t_gdal_app = t_dry;
        snprintf(errbuf, errlen, "%s without a client id and secret: GDAL's "
                 "own OAuth2 application, which vsitune does not carry",
                 source);
        vt__gs_grant_clear(&g);
        return VT_ECREDS;
    }
    e = get_bearer(&g, source, out, errbuf, errlen);
    vt__gs_grant_clear(&g);
    return e;
}

/* GOOGLE_APPLICATION_CREDENTIALS's JSON. */
static vt_err from_json_file(const char *path, const char *file,
                             vt_gs_creds *out, char *errbuf, size_t errlen)
{
    size_t n = 0;
    char *txt = vt__creds_read_file(file, VT_CREDS_FILE_CAP, &n), *type = NULL;
    vt_err e = VT_ECREDS;

    if (!txt) {
        snprintf(errbuf, errlen, "Cannot open %s (%s)", file, strerror(errno));
        return VT_ECREDS;
    }
    type = vt__json_get_string(txt, n, "type");
    if (type && !strcmp(type, "service_account")) {
        char *pem = vt__json_get_string(txt, n, "private_key");
        char *email = vt__json_get_string(txt, n, "client_email");
        if (!pem || !*pem || !email || !*email) {
            snprintf(errbuf, errlen, "%s",
                     !pem || !*pem ? "Private key should be set"
                                   : "Client email should be set");
            vt__creds_free_secret(pem);
            free(email);
        } else {
            e = jwt_grant(path, pem, email, "GOOGLE_APPLICATION_CREDENTIALS",
                          out, errbuf, errlen);
        }
    } else if (type && !strcmp(type, "authorized_user")) {
        char *rt = vt__json_get_string(txt, n, "refresh_token");
        if (!rt || !*rt) {
            snprintf(errbuf, errlen, "Refresh token should be set");
            free(rt);
        } else {
            e = refresh_grant(rt, vt__json_get_string(txt, n, "client_id"),
                              vt__json_get_string(txt, n, "client_secret"),
                              "GOOGLE_APPLICATION_CREDENTIALS", out, errbuf,
                              errlen);
        }
    } else {
        snprintf(errbuf, errlen,
                 "%s: type is neither service_account nor authorized_user",
                 file);
    }
    free(type);
    vt__creds_free_secret(txt);
    return e;
}

static vt_err hmac(char *key, char *secret, const char *source,
                   vt_gs_creds *out)
{
    out->mode = VT_GS_HMAC;
    out->access_key = key;
    out->secret = secret;
    out->source = source;
    return vt__ident_signer(key, secret, NULL, "gs-goog1", out->identity,
                            sizeof(out->identity))
               ? VT_ENOMEM
               : VT_OK;
}

/* Both or none of two options; 0 when fine. */
static int both_or_none(const char *a, const char *b)
{
    return (a && *a) != (b && *b);
}

/* 1 when the boto file gave credentials (out filled or err set). */
static int from_boto(const char *file, vt_gs_creds *out, vt_err *err,
                     char *errbuf, size_t errlen)
{
    size_t n = 0;
    char *txt = vt__creds_read_file(file, VT_CREDS_SHARED_CAP, &n);
    struct vt_gs_boto b;
    int found = 0;

    if (!txt)
        return 0;
    vt__gs_boto_parse(txt, n, &b);
    vt__creds_free_secret(txt);
    if (b.refresh_token && *b.refresh_token) {
        char *id = cfg("GS_OAUTH2_CLIENT_ID", ""), *sec = cfg("GS_OAUTH2_CLIENT_SECRET", "");
        found = 1;
        if (both_or_none(id, sec)) {
            snprintf(errbuf, errlen, "Either both or none of GS_OAUTH2_CLIENT_ID "
                     "and GS_OAUTH2_CLIENT_SECRET must be set");
            *err = VT_ECREDS;
        } else if (!*id && both_or_none(b.client_id, b.client_secret)) {
            snprintf(errbuf, errlen, "Either both or none of client_id and "
                     "client_secret from %s must be set", file);
            *err = VT_ECREDS;
        } else {
            if (!*id) {
                free(id);
                vt__creds_free_secret(sec);
                id = b.client_id;
                sec = b.client_secret;
                b.client_id = b.client_secret = NULL;
            }
            *err = refresh_grant(b.refresh_token, id, sec, "boto", out, errbuf,
                                 errlen);
            b.refresh_token = id = sec = NULL;
        }
        free(id);
        vt__creds_free_secret(sec);
    } else if (b.access_key && *b.access_key && b.secret && *b.secret) {
        found = 1;
        *err = hmac(b.access_key, b.secret, "boto", out);
        b.access_key = b.secret = NULL;
    }
    vt__gs_boto_clear(&b);
    return found;
}

/* CPLIsMachinePotentiallyGCEInstance. */
static int maybe_gce(void)
{
    char line[64] = "";
    FILE *f;
    if (CPLTestBool(CPLGetConfigOption("CPL_MACHINE_IS_GCE", "NO")))
        return 1;
    if (!CPLTestBool(CPLGetConfigOption("CPL_GCE_CHECK_LOCAL_FILES", "YES")))
        return 1;
    f = fopen("/sys/class/dmi/id/product_name", "rb");
    if (!f)
        return 0;
    if (!fgets(line, sizeof(line), f))
        line[0] = '\0';
    fclose(f);
    return !strncasecmp(line, "Google Compute Engine", 21);
}

/* GDAL_HTTP_HEADER_FILE naming a readable file with an "Authorization:"
 * line (case-insensitive, at a line's start): 1 and out filled (the line
 * keys the identity). GDAL refuses names of network file systems there. */
static int header_file(const char *path, vt_gs_creds *out)
{
    static const char *const net[] = {"/vsicurl/", "/vsicurl?", "/vsis3/",
                                      "/vsigs/",   "/vsiaz/",   "/vsioss/",
                                      "/vsiswift/", NULL};
    char *f = vt__gs_opt(path, "GDAL_HTTP_HEADER_FILE"), *txt = NULL;
    size_t n = 0;
    int found = 0;

    if (!f)
        return 0;
    for (size_t i = 0; net[i]; i++)
        if (strstr(f, net[i]))
            goto out;
    txt = vt__creds_read_file(f, VT_CREDS_SHARED_CAP, &n);
    if (!txt) {
        if (!t_dry)
            CPLError(CE_Failure, CPLE_FileIO, "Cannot read %s", f);
        goto out;
    }
    for (const char *l = txt; l && l < txt + n;) {
        const char *e = l + strcspn(l, "\r\n");
        if (!strncasecmp(l, "Authorization:", 14)) {
            char *line = strndup(l, (size_t)(e - l));
            found = 1;
            out->mode = VT_GS_HEADER_FILE;
            out->source = "GDAL_HTTP_HEADER_FILE";
            if (!line || vt__ident_signer(f, line, NULL, "gs-header-file",
                                          out->identity,
                                          sizeof(out->identity)))
                out->identity[0] = '\0';
            vt__creds_free_secret(line);
            break;
        }
        l = *e ? e + 1 : NULL;
    }
out:
    vt__creds_free_secret(txt);
    free(f);
    return found;
}

static vt_err chain(const char *path, vt_gs_creds *out, char *errbuf,
                    size_t errlen)
{
    char *v = NULL, *w = NULL, *file = NULL;
    vt_err e;

    if (opt_bool(path, "GS_NO_SIGN_REQUEST")) {
        out->mode = VT_GS_NOSIGN;
        out->source = "GS_NO_SIGN_REQUEST";
        snprintf(out->identity, sizeof(out->identity), "anonymous");
        return VT_OK;
    }
    if ((v = vt__gs_opt(path, "GS_SECRET_ACCESS_KEY"))) {
        w = vt__gs_opt(path, "GS_ACCESS_KEY_ID");
        if (!w) {
            vt__creds_free_secret(v);
            snprintf(errbuf, errlen,
                     "GS_ACCESS_KEY_ID configuration option not defined");
            return VT_ECREDS;
        }
        return hmac(w, v, "GS_SECRET_ACCESS_KEY", out);
    }
    if (header_file(path, out))
        return out->identity[0] ? VT_OK : VT_ENOMEM;
    if ((v = vt__gs_opt(path, "GS_OAUTH2_REFRESH_TOKEN"))) {
        char *id = vt__gs_opt(path, "GS_OAUTH2_CLIENT_ID");
        char *sec = vt__gs_opt(path, "GS_OAUTH2_CLIENT_SECRET");
        if (both_or_none(id, sec)) {
            vt__creds_free_secret(v);
            free(id);
            vt__creds_free_secret(sec);
            snprintf(errbuf, errlen, "Either both or none of GS_OAUTH2_CLIENT_ID "
                     "and GS_OAUTH2_CLIENT_SECRET must be set");
            return VT_ECREDS;
        }
        return refresh_grant(v, id, sec, "GS_OAUTH2_REFRESH_TOKEN", out,
                             errbuf, errlen);
    }
    if ((v = vt__gs_opt(path, "GOOGLE_APPLICATION_CREDENTIALS"))) {
        e = from_json_file(path, v, out, errbuf, errlen);
        free(v);
        return e;
    }
    v = vt__gs_opt(path, "GS_OAUTH2_PRIVATE_KEY");
    w = vt__gs_opt(path, "GS_OAUTH2_PRIVATE_KEY_FILE");
    if (v || w) {
        char *email = vt__gs_opt(path, "GS_OAUTH2_CLIENT_EMAIL");
        if (w) {
            size_t n = 0;
            char *pem = vt__creds_read_file(w, 64 * 1024 * 1024, &n);
            vt__creds_free_secret(v);
            v = NULL;
            if (!pem) {
                snprintf(errbuf, errlen, "Cannot open %s", w);
            } else {
                if (n > KEY_FILE_CAP)
                    pem[KEY_FILE_CAP] = '\0';
                v = pem;
            }
        }
        free(w);
        if (!v) {
            free(email);
            return VT_ECREDS;
        }
        if (!email) {
            vt__creds_free_secret(v);
            snprintf(errbuf, errlen, "GS_OAUTH2_CLIENT_EMAIL not defined");
            return VT_ECREDS;
        }
        return jwt_grant(path, v, email, "GS_OAUTH2_PRIVATE_KEY", out, errbuf,
                         errlen);
    }
    /* GDAL reads the boto file's name as a plain config option. */
    file = cfg("CPL_GS_CREDENTIALS_FILE", NULL);
    if (!file) {
        const char *home = CPLGetConfigOption("HOME", NULL);
        size_t l = strlen(home ? home : "") + 8;
        file = malloc(l);
        if (file)
            snprintf(file, l, "%s/.boto", home ? home : "");
    }
    if (!file)
        return VT_ENOMEM;
    if (from_boto(file, out, &e, errbuf, errlen)) {
        free(file);
        return e;
    }
    /* GDAL keeps using a GCE token once it used one (gs_token.c) */
    if (vt__gs_gce_kept() ||
        (!CPLTestBool(CPLGetConfigOption("CPL_GCE_SKIP", "NO")) && maybe_gce())) {
        struct vt_gs_grant g = {.kind = VT_GS_G_GCE};
        g.url = cfg("CPL_GCE_CREDENTIALS_URL", GCE_URL_DEFAULT);
        g.secret = strdup("");
        g.who = strdup("gce");
        if (g.url && g.secret && g.who &&
            get_bearer(&g, "GCE", out, errbuf, errlen) == VT_OK) {
            vt__gs_grant_clear(&g);
            free(file);
            return VT_OK;
        }
        vt__gs_grant_clear(&g);
        vt__gs_creds_clear(out);
    }
    snprintf(errbuf, errlen,
             "GS_SECRET_ACCESS_KEY+GS_ACCESS_KEY_ID, GS_OAUTH2_REFRESH_TOKEN or "
             "GOOGLE_APPLICATION_CREDENTIALS or "
             "GS_OAUTH2_PRIVATE_KEY+GS_OAUTH2_CLIENT_EMAIL and %s, or "
             "GS_NO_SIGN_REQUEST=YES configuration options not defined",
             file);
    free(file);
    return VT_ECREDS;
}

vt_err vt__gs_creds_get(const char *path, vt_gs_creds *out, char *errbuf,
                        size_t errlen)
{
    vt_err e;
    memset(out, 0, sizeof(*out));
    if (errlen)
        errbuf[0] = '\0';
    e = chain(path, out, errbuf, errlen);
    if (e != VT_OK) {
        vt__gs_creds_clear(out);
        if (errlen && !errbuf[0])
            snprintf(errbuf, errlen, "GCS credentials: %s", vt_strerror(e));
    } else {
        CPLDebug("VSITUNE", "gs: credentials for %s from %s", path,
                 out->source);
    }
    return e;
}

vt_err vt__gs_creds_peek(const char *path, vt_gs_creds *out, int *gdal_app)
{
    char err[512];
    vt_err e;
    memset(out, 0, sizeof(*out));
    t_dry = 1;
    t_gdal_app = 0;
    e = chain(path, out, err, sizeof(err));
    *gdal_app = t_gdal_app;
    t_dry = 0;
    t_gdal_app = 0;
    if (e != VT_OK)
        vt__gs_creds_clear(out);
    return e;
}

void vt__gs_creds_clear(vt_gs_creds *c)
{
    if (!c)
        return;
    free(c->access_key);
    vt__creds_free_secret(c->secret);
    vt__creds_free_secret(c->bearer);
    memset(c, 0, sizeof(*c));
}
