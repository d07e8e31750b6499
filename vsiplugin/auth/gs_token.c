/* gs_token.c: the bearer tokens of GDAL 3.6's /vsigs/ OAuth2 grants
 * (gs_auth.h): fetched, kept and expired as GDAL's GOA2Manager does.
 *
 * Why a file of its own: when a token is asked again is user-visible (a
 * token endpoint or metadata server counts and answers each fetch), so
 * GOA2Manager::GetBearer's rules are kept here in one place:
 *   - a token is used while now < fetched + expires_in - 5 s; an answer
 *     without expires_in (or with 0) is used for the request it was
 *     fetched for only, the next one fetches again;
 *   - the GCE metadata token is the machine's: once a GCE token was used,
 *     GDAL copies its static manager (the token, whatever
 *     CPL_GCE_CREDENTIALS_URL, CPL_GCE_SKIP say now) until VSICurlClearCache
 *     or another grant's token is used; before that, a name's credentials
 *     first ask the metadata server whether GCE works (a fetch, always),
 *     then the request asks for its token (that answer, or a new fetch when
 *     it is already expired): two fetches for a token that expires at once.
 * Tokens are kept in a small table keyed by a digest of the grant (never by
 * the token). Grants go through the HTTP engine (creds_int.h's
 * vt__creds_fetch). tok_lock is a leaf lock, held only to copy a token or
 * the last grant's kind in or out: never across a fetch. */
#include "auth/gs_auth.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpl_conv.h>

#include <openssl/crypto.h>

#include "auth/credkey.h"
#include "auth/creds_int.h"
#include "auth/creds_parse.h"
#include "auth/sigv4.h"
#include "base/forksafe.h"
#include "base/sha256.h"

#define TOKENS 8
#define EARLY_S 5 /* GetBearer refreshes 5 s before expires_in */
#define KIND_NONE (-1)

struct kept {
    char key[65];      /* SHA-256 of the grant; "" when free */
    char *token;
    long long expires; /* Unix time: fetched + expires_in */
    long long used;
};

static pthread_mutex_t tok_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t tok_once = PTHREAD_ONCE_INIT;
static struct kept kept[TOKENS];
static int last_kind = KIND_NONE; /* GDAL's oStaticManager's method */

static void tok_forksafe(void)
{
    vt__forksafe_register(&tok_lock);
}

static char *kept_get(const char *key, long long now)
{
    char *t = NULL;
    pthread_once(&tok_once, tok_forksafe);
    pthread_mutex_lock(&tok_lock);
    for (int i = 0; i < TOKENS; i++)
        if (kept[i].token && !strcmp(kept[i].key, key) &&
            now < kept[i].expires - EARLY_S) {
            t = strdup(kept[i].token);
            kept[i].used = now;
            break;
        }
    pthread_mutex_unlock(&tok_lock);
    return t;
}

static void kept_put(const char *key, const char *token, long long expires,
                     long long now, int kind)
{
    int slot = 0;
    char *copy = strdup(token), *old;
    if (!copy)
        return;
    pthread_once(&tok_once, tok_forksafe);
    pthread_mutex_lock(&tok_lock);
    for (int i = 0; i < TOKENS; i++) {
        if (!strcmp(kept[i].key, key) || !kept[i].token) {
            slot = i;
            break;
        }
        if (kept[i].used < kept[slot].used)
            slot = i;
    }
    old = kept[slot].token;
    snprintf(kept[slot].key, sizeof(kept[slot].key), "%s", key);
    kept[slot].token = copy;
    kept[slot].expires = expires;
    kept[slot].used = now;
    last_kind = kind;
    pthread_mutex_unlock(&tok_lock);
    vt__creds_free_secret(old);
}

static void set_last_kind(int kind)
{
    pthread_once(&tok_once, tok_forksafe);
    pthread_mutex_lock(&tok_lock);
    last_kind = kind;
    pthread_mutex_unlock(&tok_lock);
}

int vt__gs_gce_kept(void)
{
    int k;
    pthread_once(&tok_once, tok_forksafe);
    pthread_mutex_lock(&tok_lock);
    k = last_kind;
    pthread_mutex_unlock(&tok_lock);
    return k == VT_GS_G_GCE;
}

void vt__gs_creds_reset(void)
{
    char *old[TOKENS];
    pthread_once(&tok_once, tok_forksafe);
    pthread_mutex_lock(&tok_lock);
    for (int i = 0; i < TOKENS; i++) {
        old[i] = kept[i].token;
        memset(&kept[i], 0, sizeof(kept[i]));
    }
    last_kind = KIND_NONE;
    pthread_mutex_unlock(&tok_lock);
    for (int i = 0; i < TOKENS; i++)
        vt__creds_free_secret(old[i]);
}

/* ---- grants ----------------------------------------------------------- */

void vt__gs_grant_clear(struct vt_gs_grant *g)
{
    free(g->url);
    vt__creds_free_secret(g->secret);
    free(g->who);
    vt__creds_free_secret(g->extra);
    memset(g, 0, sizeof(*g));
}

/* The table's key of g. GCE's leaves the URL out: the token is the
 * machine's, wherever CPL_GCE_CREDENTIALS_URL points now. */
static void grant_key(const struct vt_gs_grant *g, char out[65])
{
    const char *url = g->kind == VT_GS_G_GCE ? "" : g->url;
    size_t l = strlen(url) + strlen(g->secret) + strlen(g->who) +
               strlen(g->extra ? g->extra : "") + 8;
    char *m = malloc(l);
    out[0] = '\0';
    if (!m)
        return;
    snprintf(m, l, "%d\n%s\n%s\n%s\n%s", (int)g->kind, url, g->who,
             g->extra ? g->extra : "", g->secret);
    vt__sha256_hex(m, strlen(m), out);
    OPENSSL_cleanse(m, l);
    free(m);
}

/* application/x-www-form-urlencoded value (CPLES_URL-like, '+' as %2B). */
static char *form_enc(const char *s)
{
    return vt__uri_encode(s ? s : "", 0);
}

/* A refused grant's OAuth2 words ("error", "error_description") after
 * what vt__creds_fetch said. */
static void oauth_words(const vt_http_resp *r, char *err, size_t len)
{
    char *e = NULL, *d = NULL;
    size_t n = strlen(err);
    if (r->body) {
        e = vt__json_get_string((const char *)r->body, r->body_len, "error");
        d = vt__json_get_string((const char *)r->body, r->body_len,
                                "error_description");
    }
    if (e && n < len)
        snprintf(err + n, len - n, " %s%s%s", e, d ? ": " : "", d ? d : "");
    free(e);
    free(d);
}

static vt_err fetch_token(const struct vt_gs_grant *g, char **token,
                          long *expires, char *errbuf, size_t errlen)
{
    vt_http_resp resp;
    char *body = NULL, *jwt = NULL, *a = NULL, *b = NULL, *c = NULL;
    const char *form[] = {"Content-Type: application/x-www-form-urlencoded",
                          NULL};
    const char *gce[] = {"Metadata-Flavor: Google", NULL};
    char err[1024] = "";
    vt_err rc = VT_ECREDS;
    size_t l;

    memset(&resp, 0, sizeof(resp));
    *token = NULL;
    if (g->kind == VT_GS_G_REFRESH) {
        a = form_enc(g->secret);
        b = form_enc(g->who);
        c = form_enc(g->extra);
        if (!a || !b || !c)
            goto out;
        l = strlen(a) + strlen(b) + strlen(c) + 80;
        body = malloc(l);
        if (!body)
            goto out;
        snprintf(body, l,
                 "refresh_token=%s&client_id=%s&client_secret=%s"
                 "&grant_type=refresh_token", a, b, c);
    } else if (g->kind == VT_GS_G_JWT) {
        char *lt = CPLStrdup(CPLGetConfigOption("GOA2_EXPIRATION_DELAY", "3600"));
        const char *nowopt = CPLGetConfigOption("GOA2_NOW", NULL);
        long long now = nowopt ? CPLAtoGIntBig(nowopt) : (long long)time(NULL);
        jwt = vt__gs_jwt(g->secret, g->who, g->extra, g->url, now, atol(lt),
                         err, sizeof(err));
        CPLFree(lt);
        if (!jwt || !(a = form_enc(jwt)))
            goto out;
        l = strlen(a) + 96;
        body = malloc(l);
        if (!body)
            goto out;
        snprintf(body, l,
                 "grant_type=urn%%3Aietf%%3Aparams%%3Aoauth%%3Agrant-type"
                 "%%3Ajwt-bearer&assertion=%s", a);
    }
    if (vt__creds_fetch(g->kind == VT_GS_G_GCE ? "GCE metadata" : "OAuth2 token",
                        g->kind == VT_GS_G_GCE ? "GET" : "POST", g->url,
                        g->kind == VT_GS_G_GCE ? gce : form, body, 0, 0, &resp,
                        err, sizeof(err))) {
        oauth_words(&resp, err, sizeof(err));
        goto out;
    }
    if (vt__gs_parse_token((const char *)resp.body, resp.body_len, token,
                           expires) != VT_OK) {
        snprintf(err, sizeof(err), "%s answered without an access_token",
                 g->url);
        goto out;
    }
    rc = VT_OK;
out:
    if (rc != VT_OK)
        snprintf(errbuf, errlen,
                 "Fetching OAuth2 access code from auth code failed. "
                 "(vsitune: %s)", err[0] ? err : "out of memory");
    vt__http_resp_clear(&resp);
    vt__creds_free_secret(body);
    vt__creds_free_secret(jwt);
    vt__creds_free_secret(a);
    vt__creds_free_secret(b);
    vt__creds_free_secret(c);
    return rc;
}

/* Fetch g's token into the table; *token a malloc'd copy. */
static vt_err fetch_keep(const struct vt_gs_grant *g, const char *key,
                         char **token, char *errbuf, size_t errlen)
{
    long long now = (long long)time(NULL);
    long exp = 0;
    vt_err e = fetch_token(g, token, &exp, errbuf, errlen);
    if (e == VT_OK)
        kept_put(key, *token, now + (exp > 0 ? exp : 0), now, (int)g->kind);
    return e;
}

vt_err vt__gs_bearer(const struct vt_gs_grant *g, const char *source,
                     vt_gs_creds *out, char *errbuf, size_t errlen)
{
    char key[65], *probe = NULL;
    vt_err e;

    grant_key(g, key);
    if (!key[0])
        return VT_ENOMEM;
    out->mode = VT_GS_BEARER;
    out->source = source;
    if (vt__ident_signer(g->who, g->secret, NULL, g->url, out->identity,
                         sizeof(out->identity)))
        return VT_ENOMEM;
    if (g->kind == VT_GS_G_GCE && !vt__gs_gce_kept()) {
        /* GDAL's "is GCE there?": a fresh manager's fetch, always */
        e = fetch_keep(g, key, &probe, errbuf, errlen);
        vt__creds_free_secret(probe);
        if (e != VT_OK)
            return e;
    }
    out->bearer = kept_get(key, (long long)time(NULL));
    if (out->bearer) {
        set_last_kind((int)g->kind);
        return VT_OK;
    }
    return fetch_keep(g, key, &out->bearer, errbuf, errlen);
}
