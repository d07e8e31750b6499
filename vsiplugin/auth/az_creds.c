/* az_creds.c: which Azure credential a /vsiaz/ path is read with
 * (az_auth.h).
 *
 * Why: vsitune must send what stock GDAL 3.6 sends for the same options,
 * and fail where it fails with its words, so this walks GDAL 3.6's chain
 * (cpl_azure.cpp's GetConfiguration, its messages measured on the host's
 * GDAL 3.6.2; the running release's words when none is found): AZURE_STORAGE_CONNECTION_STRING; else AZURE_STORAGE_ACCOUNT
 * with AZURE_STORAGE_ACCESS_TOKEN, AZURE_STORAGE_ACCESS_KEY,
 * AZURE_STORAGE_SAS_TOKEN (AZURE_SAS before 3.5), AZURE_NO_SIGN_REQUEST or
 * a managed identity token from IMDS (CPL_AZURE_VM_API_ROOT_URL); else the
 * Azure CLI's config file. Options are read for "/vsiaz/<path>" first
 * (path-specific), then the config, as GDAL does. IMDS tokens are kept per
 * request URL under one lock, never held across the fetch. */
#include "auth/az_auth.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include <cpl_conv.h>
#include <cpl_string.h>
#include <cpl_vsi.h>

#include "auth/credkey.h"
#include "auth/creds_parse.h"
#include "auth/sigv4.h"
#include "compat/gdal_release.h"
#include "http/engine.h"

#define AZ_PREFIX "/vsiaz/"
#define IMDS_DEFAULT "http://169.254.169.254"
#define IMDS_RESOURCE                                                         \
    "/metadata/identity/oauth2/token?api-version=2018-02-01"                  \
    "&resource=https%3A%2F%2Fstorage.azure.com%2F"
#define TOKEN_MARGIN 60 /* s: a token is not used in its last minute */
#define TOKEN_SLOTS 8

static const char *const MSG_ACCOUNT_ONLY =
    "AZURE_STORAGE_ACCESS_KEY or AZURE_STORAGE_SAS_TOKEN or "
    "AZURE_NO_SIGN_REQUEST configuration option not defined";


/* ---- options ---------------------------------------------------------- */

/* The value of name for path ("container/blob"; NULL: the config only),
 * copied; NULL when unset or empty. */
static char *opt(const char *path, const char *name)
{
    const char *v;
    char *out = NULL, *full = NULL;

    if (path) {
        size_t l = strlen(AZ_PREFIX) + strlen(path) + 1;
        full = malloc(l);
        if (!full)
            return NULL;
        snprintf(full, l, "%s%s", AZ_PREFIX, path);
        v = VSIGetPathSpecificOption(full, name, NULL);
    } else {
        v = CPLGetConfigOption(name, NULL);
    }
    if (v && *v)
        out = strdup(v);
    free(full);
    return out;
}

static int opt_bool(const char *path, const char *name, int def)
{
    char *v = opt(path, name);
    int r = v ? (CPLTestBool(v) ? 1 : 0) : def;
    free(v);
    return r;
}

static void drop_trailing_slash(char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n && s[n - 1] == '/')
        s[n - 1] = '\0';
}

/* "http(s)://<account>.blob.<suffix>" */
static char *default_endpoint(int https, const char *account,
                              const char *suffix)
{
    size_t l = strlen(account) + strlen(suffix) + 16;
    char *e = malloc(l);
    if (e)
        snprintf(e, l, "%s://%s.blob.%s", https ? "https" : "http", account,
                 suffix);
    return e;
}

static void wipe_free(char *s)
{
    if (s) {
        OPENSSL_cleanse(s, strlen(s));
        free(s);
    }
}

void vt__az_config_clear(vt_az_cfg *c)
{
    if (!c)
        return;
    free(c->endpoint);
    free(c->account);
    wipe_free(c->key);
    wipe_free(c->sas);
    wipe_free(c->token);
    memset(c, 0, sizeof(*c));
}

/* ---- connection string ------------------------------------------------ */

/* The value of "<name>=" in cs up to the next ';' (GDAL's
 * AzureCSGetParameter: the first occurrence anywhere), malloc'd; NULL when
 * absent or empty. */
static char *cs_get(const char *cs, const char *name)
{
    char pat[64];
    const char *p, *e;

    snprintf(pat, sizeof(pat), "%s=", name);
    p = strstr(cs, pat);
    if (!p)
        return NULL;
    p += strlen(pat);
    e = strchr(p, ';');
    if (!e)
        e = p + strlen(p);
    if (e == p)
        return NULL;
    return strndup(p, (size_t)(e - p));
}

int vt__az_parse_connection_string(const char *cs, vt_az_cfg *out)
{
    char *proto = cs_get(cs, "DefaultEndpointsProtocol");
    char *blob = cs_get(cs, "BlobEndpoint"), *suffix = NULL;
    int https = !proto || strcmp(proto, "http") != 0, ok = 0;

    out->account = cs_get(cs, "AccountName");
    out->key = cs_get(cs, "AccountKey");
    drop_trailing_slash(blob);
    if (!out->account || !out->key) {
        free(out->account);
        wipe_free(out->key);
        out->account = out->key = NULL;
        out->sas = cs_get(cs, "SharedAccessSignature");
        if (blob && out->sas) {
            free(out->endpoint);
            out->endpoint = blob;
            blob = NULL;
            ok = 1;
        }
        goto out;
    }
    if (blob) {
        free(out->endpoint);
        out->endpoint = blob;
        blob = NULL;
    } else if ((suffix = cs_get(cs, "EndpointSuffix")) != NULL) {
        drop_trailing_slash(suffix);
        free(out->endpoint);
        out->endpoint = default_endpoint(https, out->account, suffix);
    } else if (!out->endpoint) {
        out->endpoint = default_endpoint(https, out->account,
                                         "core.windows.net");
    }
    ok = out->endpoint != NULL;
out:
    free(proto);
    free(blob);
    free(suffix);
    return ok;
}

/* ---- managed identity (IMDS) ------------------------------------------ */

static pthread_mutex_t tok_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char *url;      /* the resource part asked (the cache key) */
    char *token;
    long long expires_on;
} tok[TOKEN_SLOTS];
static unsigned tok_next;

void vt__az_forget_tokens(void)
{
    pthread_mutex_lock(&tok_mu);
    for (int i = 0; i < TOKEN_SLOTS; i++) {
        free(tok[i].url);
        wipe_free(tok[i].token);
        tok[i].url = tok[i].token = NULL;
    }
    pthread_mutex_unlock(&tok_mu);
}

static char *tok_find(const char *url)
{
    char *t = NULL;
    long long now = (long long)time(NULL);

    pthread_mutex_lock(&tok_mu);
    for (int i = 0; i < TOKEN_SLOTS; i++)
        if (tok[i].url && !strcmp(tok[i].url, url) &&
            now < tok[i].expires_on - TOKEN_MARGIN)
            t = strdup(tok[i].token);
    pthread_mutex_unlock(&tok_mu);
    return t;
}

static void tok_keep(const char *url, const char *token, long long exp)
{
    int slot = -1;

    pthread_mutex_lock(&tok_mu);
    for (int i = 0; i < TOKEN_SLOTS && slot < 0; i++)
        if (tok[i].url && !strcmp(tok[i].url, url))
            slot = i;
    if (slot < 0)
        slot = (int)(tok_next++ % TOKEN_SLOTS);
    free(tok[slot].url);
    wipe_free(tok[slot].token);
    tok[slot].url = strdup(url);
    tok[slot].token = strdup(token);
    tok[slot].expires_on = exp;
    pthread_mutex_unlock(&tok_mu);
}

/* Append "&<name>=<encoded value of the option>" when set. */
static void add_id_param(char *buf, size_t len, const char *path,
                         const char *option, const char *name)
{
    char *v = opt(path, option), *enc = v ? vt__uri_encode(v, 0) : NULL;
    size_t n = strlen(buf);
    if (enc)
        snprintf(buf + n, len - n, "&%s=%s", name, enc);
    free(v);
    free(enc);
}

/* A token from the managed identity endpoint (GDAL's
 * GetConfigurationFromIMDSCredentials): kept until a minute before its
 * expires_on. malloc'd, NULL when none. */
static char *imds_token(const char *path)
{
    char *root = opt(NULL, "CPL_AZURE_VM_API_ROOT_URL");
    char res[2048], url[4096];
    char *t = NULL, *exp = NULL;
    const char *hdrs[] = {"Metadata: true", NULL};
    vt_http_req rq;
    vt_http_resp r;

    if (root && !strcmp(root, "disabled"))
        goto out;
    snprintf(res, sizeof(res), "%s", IMDS_RESOURCE);
    add_id_param(res, sizeof(res), path, "AZURE_IMDS_OBJECT_ID", "object_id");
    add_id_param(res, sizeof(res), path, "AZURE_IMDS_CLIENT_ID", "client_id");
    add_id_param(res, sizeof(res), path, "AZURE_IMDS_MSI_RES_ID",
                 "msi_res_id");
    t = tok_find(res);
    if (t)
        goto out;
    snprintf(url, sizeof(url), "%s%s", root ? root : IMDS_DEFAULT, res);
    memset(&rq, 0, sizeof(rq));
    rq.method = "GET";
    rq.url = url;
    rq.headers = hdrs;
    rq.max_retries = 0;
    rq.retry_delay = -1;
    if (vt__engine_perform(&rq, &r) == VT_OK && r.status == 200 && r.body) {
        t = vt__json_get_string((const char *)r.body, r.body_len,
                                "access_token");
        exp = vt__json_get_string((const char *)r.body, r.body_len,
                                  "expires_on");
        if (t && !*t) {
            free(t);
            t = NULL;
        }
        if (t && exp && atoll(exp) > 0)
            tok_keep(res, t, atoll(exp));
        else if (!t)
            CPLDebug("VSITUNE", "az: no managed identity token from %s: "
                     "HTTP %ld", url, r.status);
    } else {
        CPLDebug("VSITUNE", "az: managed identity endpoint %s: HTTP %ld %s",
                 url, r.status, r.error);
    }
    vt__http_resp_clear(&r);
out:
    free(root);
    free(exp);
    return t;
}

/* ---- the chain -------------------------------------------------------- */

/* With an account: a token, a key, a SAS, no signing or a managed identity
 * (the tail both the options and the CLI file take). 1 when one was found.
 * fetch 0: the managed identity is not asked (c->imds set, no token). */
static int account_tail(const char *path, vt_az_cfg *c, int from_file,
                        int fetch)
{
    if (!from_file) {
        c->token = opt(path, "AZURE_STORAGE_ACCESS_TOKEN");
        if (c->token)
            return 1;
        c->key = opt(path, "AZURE_STORAGE_ACCESS_KEY");
        if (!c->key) {
            c->sas = opt(path, "AZURE_STORAGE_SAS_TOKEN");
            if (!c->sas)
                c->sas = opt(NULL, "AZURE_SAS");
        }
    } else {
        c->token = opt(NULL, "AZURE_STORAGE_ACCESS_TOKEN");
        if (c->token)
            return 1;
    }
    if (c->key || c->sas)
        return 1;
    if (opt_bool(from_file ? NULL : path, "AZURE_NO_SIGN_REQUEST", 0)) {
        c->nosign = 1;
        return 1;
    }
    if (!fetch) {
        c->imds = 1;
        return 1;
    }
    c->token = imds_token(path);
    c->imds = c->token != NULL;
    return c->imds;
}

/* The Azure CLI's config file ([storage] account, key, sas_token,
 * connection_string), as GetConfigurationFromCLIConfigFile. */
static int cli_file(const char *path, int https, vt_az_cfg *c, int fetch)
{
    char *dir = opt(NULL, "AZURE_CONFIG_DIR"), *home = opt(NULL, "HOME");
    char *text = NULL, *cs = NULL, fn[4096];
    const char *raw = CPLGetConfigOption("AZURE_CONFIG_DIR", NULL);
    VSILFILE *f = NULL;
    size_t n = 0, cap = 0;
    int ok = 0;

    if (raw && !*raw)
        goto out; /* set to "": no file */
    snprintf(fn, sizeof(fn), "%s%s/config", dir ? dir : home ? home : "",
             dir ? "" : "/.azure");
    f = VSIFOpenL(fn, "rb"); /* through GDAL, as stock: /vsimem/ too */
    if (!f)
        goto out;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            char *t = realloc(text, cap = cap * 2 + 8192);
            if (!t)
                goto out;
            text = t;
        }
        size_t got = VSIFReadL(text + n, 1, 4096, f);
        n += got;
        if (got == 0)
            break;
    }
    if (!text)
        goto out;
    text[n] = '\0';
    cs = vt__ini_get(text, n, "storage", "connection_string");
    if (cs) {
        ok = vt__az_parse_connection_string(cs, c);
        goto out;
    }
    c->account = vt__ini_get(text, n, "storage", "account");
    c->key = vt__ini_get(text, n, "storage", "key");
    c->sas = vt__ini_get(text, n, "storage", "sas_token");
    if (c->sas) { /* configparser's "%%" is one '%' */
        char *w = c->sas;
        for (const char *r = c->sas; *r; r++) {
            *w++ = *r;
            if (r[0] == '%' && r[1] == '%')
                r++;
        }
        *w = '\0';
    }
    if (!c->account) {
        CPLDebug("VSITUNE", "az: Missing storage.account in %s", fn);
        goto out;
    }
    if (!c->endpoint)
        c->endpoint = default_endpoint(https, c->account, "core.windows.net");
    ok = account_tail(path, c, 1, fetch);
out:
    if (f)
        VSIFCloseL(f);
    if (text)
        OPENSSL_cleanse(text, n);
    free(text);
    wipe_free(cs);
    free(dir);
    free(home);
    return ok;
}

static vt_err chain(const char *path, vt_az_cfg *c, char *errbuf,
                    size_t errlen, int fetch)
{
    int https = opt_bool(path, "CPL_AZURE_USE_HTTPS", 1);
    char *cs = opt(path, "AZURE_STORAGE_CONNECTION_STRING");
    vt_err err = VT_OK;

    memset(c, 0, sizeof(*c));
    if (errlen)
        errbuf[0] = '\0';
    c->endpoint = opt(path, "CPL_AZURE_ENDPOINT");
    drop_trailing_slash(c->endpoint);
    if (cs) {
        if (!vt__az_parse_connection_string(cs, c)) {
            snprintf(errbuf, errlen,
                     "AccountName missing in AZURE_STORAGE_CONNECTION_STRING");
            err = VT_ECREDS;
        }
        goto out;
    }
    c->account = opt(path, "AZURE_STORAGE_ACCOUNT");
    if (c->account) {
        if (!c->endpoint)
            c->endpoint = default_endpoint(https, c->account,
                                           "core.windows.net");
        if (!account_tail(path, c, 0, fetch)) {
            snprintf(errbuf, errlen, "%s", MSG_ACCOUNT_ONLY);
            err = VT_ECREDS;
        }
        goto out;
    }
    if (!cli_file(path, https, c, fetch)) {
        snprintf(errbuf, errlen, "%s", vt__gdal_release()->az_no_creds);
        err = VT_ECREDS;
    }
out:
    wipe_free(cs);
    if (err == VT_OK && !c->endpoint)
        err = VT_ENOMEM;
    if (err == VT_OK && opt_bool(path, "AZURE_NO_SIGN_REQUEST", 0)) {
        wipe_free(c->key);
        wipe_free(c->sas);
        wipe_free(c->token);
        c->key = c->sas = c->token = NULL;
        c->imds = 0;
        c->nosign = 1;
    }
    if (err != VT_OK) {
        CPLDebug("VSITUNE", "az: %s: %s", path ? path : "", errbuf);
        vt__az_config_clear(c);
    }
    return err;
}

vt_err vt__az_config(const char *path, vt_az_cfg *c, char *errbuf,
                     size_t errlen)
{
    return chain(path, c, errbuf, errlen, 1);
}

vt_err vt__az_config_where(const char *path, vt_az_cfg *c, char *errbuf,
                           size_t errlen)
{
    return chain(path, c, errbuf, errlen, 0);
}

/* ---- identity --------------------------------------------------------- */

int vt__az_identity(const vt_az_cfg *c, char *out, size_t outlen)
{
    const char *secret = c->key ? c->key : c->sas ? c->sas : c->token;
    const char *kind = c->key ? "azure:sharedkey"
                       : c->sas ? "azure:sas" : "azure:bearer";
    char who[4096];

    if (outlen)
        out[0] = '\0';
    if (!secret || c->nosign) {
        snprintf(out, outlen, "anonymous");
        return 0;
    }
    /* the account and where it is, keyed by the secret */
    snprintf(who, sizeof(who), "%s\n%s", c->account ? c->account : "",
             c->endpoint ? c->endpoint : "");
    return vt__ident_signer(who, secret, NULL, kind, out, outlen);
}
