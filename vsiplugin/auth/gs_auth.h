/* gs_auth.h: Google Cloud Storage credentials and request signing, as
 * GDAL 3.6's /vsigs/ finds and uses them (cpl_google_cloud.cpp,
 * cpl_google_oauth2.cpp).
 *
 * Why here and not in creds.h: GCS's credentials are not AWS's key pairs.
 * GDAL's chain, first match wins, options read for "/vsigs/<path>":
 *   1. GS_NO_SIGN_REQUEST=YES: nothing signed;
 *   2. GS_SECRET_ACCESS_KEY (+ GS_ACCESS_KEY_ID, else an error): GOOG1 HMAC;
 *   2b. GDAL_HTTP_HEADER_FILE with an "Authorization:" line: sent as is
 *      (a file that cannot be read: GDAL's "Cannot read %s", and on);
 *   3. GS_OAUTH2_REFRESH_TOKEN (+ GS_OAUTH2_CLIENT_ID/_SECRET, both or
 *      none): bearer tokens from GOA2_AUTH_URL_TOKEN;
 *   4. GOOGLE_APPLICATION_CREDENTIALS: a JSON file, "service_account"
 *      (RS256 JWT posted to GO2A_AUD, scope GS_OAUTH2_SCOPE) or
 *      "authorized_user" (its refresh token, client id and secret);
 *   5. GS_OAUTH2_PRIVATE_KEY / GS_OAUTH2_PRIVATE_KEY_FILE +
 *      GS_OAUTH2_CLIENT_EMAIL: the same JWT grant;
 *   6. the boto file (CPL_GS_CREDENTIALS_FILE, else ~/.boto): [Credentials]
 *      gs_access_key_id/gs_secret_access_key or gs_oauth2_refresh_token,
 *      [OAuth2] client_id/client_secret;
 *   7. GCE metadata (CPL_GCE_CREDENTIALS_URL), unless CPL_GCE_SKIP, when
 *      this can be a GCE machine (CPL_MACHINE_IS_GCE, or
 *      /sys/class/dmi/id/product_name unless CPL_GCE_CHECK_LOCAL_FILES=NO).
 * Bearer tokens are kept until 5 s before their expires_in runs out, as
 * GDAL's GOA2Manager::GetBearer keeps them (gs_token.c: GCE's too), and
 * fetched through the HTTP engine. The signers are pure, so tests/unit/test_gs_auth.c checks them
 * against vectors computed independently (Python's hmac, the lab's Node
 * verifier). */
#ifndef VT_GS_AUTH_H
#define VT_GS_AUTH_H

#include <stddef.h>

#include "base/error.h"

enum vt_gs_mode {
    VT_GS_NOSIGN,
    VT_GS_HMAC,
    VT_GS_BEARER,
    VT_GS_HEADER_FILE /* GDAL_HTTP_HEADER_FILE holds the Authorization */
};

typedef struct vt_gs_creds {
    enum vt_gs_mode mode;
    char *access_key;   /* HMAC: GS_ACCESS_KEY_ID (malloc'd) */
    char *secret;       /* HMAC: the secret (malloc'd, cleansed on clear) */
    char *bearer;       /* BEARER: the access token (malloc'd, cleansed) */
    const char *source; /* static text: "GS_SECRET_ACCESS_KEY", "GCE", ... */
    char identity[80];  /* "anonymous" or "signed:<hex>": a keyed hash of
                           the whole credential (credkey.h), never a token */
} vt_gs_creds;

/* The credentials requests for path ("bucket/key") are made with, by the
 * chain above; bearer tokens fetched when none is kept or it is about to
 * expire. VT_ECREDS with errbuf in GDAL's words when none is configured or
 * a configured one cannot be used (e.g. "GS_ACCESS_KEY_ID configuration
 * option not defined"). Blocks on HTTP; holds no lock across it. */
vt_err vt__gs_creds_get(const char *path, vt_gs_creds *out, char *errbuf,
                        size_t errlen);
void vt__gs_creds_clear(vt_gs_creds *c);

/* The chain run dry for path: the same decisions, out's mode, source and
 * identity filled, but no token fetched (out->bearer NULL), no GCE probe,
 * no CPLError. *gdal_app = 1 when the credentials are a refresh token
 * without a client id and secret (nor GOA2_CLIENT_ID/_SECRET): GDAL sends
 * its own OAuth2 application's pair then, which vsitune does not carry, so
 * the takeover leaves such names to GDAL's handler. Never blocks on HTTP. */
vt_err vt__gs_creds_peek(const char *path, vt_gs_creds *out, int *gdal_app);

/* Forget every kept bearer token and that a GCE token was used
 * (VSICurlClearCache). */
void vt__gs_creds_reset(void);

/* ---- bearer tokens (gs_token.c) ---------------------------------------- */

enum vt_gs_grant_kind { VT_GS_G_REFRESH, VT_GS_G_JWT, VT_GS_G_GCE };

/* What a bearer token is fetched with. secret: the key material (refresh
 * token, private key PEM; "" for GCE, which has none). All malloc'd. */
struct vt_gs_grant {
    enum vt_gs_grant_kind kind;
    char *url;
    char *secret;
    char *who;   /* client id, client email */
    char *extra; /* client secret (refresh), scope (JWT) */
};
void vt__gs_grant_clear(struct vt_gs_grant *g);

/* g's bearer into out (mode, source, identity keyed by g's secret
 * material, bearer malloc'd): kept, or fetched as GOA2Manager does (GCE
 * probes first until a GCE token was used). Blocks on HTTP; no lock held
 * across it. */
vt_err vt__gs_bearer(const struct vt_gs_grant *g, const char *source,
                     vt_gs_creds *out, char *errbuf, size_t errlen);

/* 1 when the last bearer token used was GCE's (GDAL's static manager):
 * the chain then takes GCE without CPL_GCE_SKIP's or the machine's say. */
int vt__gs_gce_kept(void);

/* The value of option name for path as GDAL's /vsigs/ reads it:
 * VSIGetPathSpecificOption("/vsigs/<path>", name), else the config option.
 * malloc'd; NULL when unset or empty. */
char *vt__gs_opt(const char *path, const char *name);

/* ---- pure ----------------------------------------------------------- */

/* GOOG1's Authorization value, "GOOG1 <key_id>:<base64 HMAC-SHA1>", of the
 * string to sign "VERB\nContent-MD5\nContent-Type\nDate\n" + the x-goog-*
 * headers of xgoog (NULL-terminated "Name: value" lines; others ignored)
 * lowercased, sorted, "name:value\n" each + resource (the encoded path,
 * "/bucket/key"). content_md5, content_type may be NULL. malloc'd, NULL on
 * OOM. string_to_sign, when not NULL, gets a malloc'd copy of what was
 * signed (tests). */
char *vt__gs_goog1(const char *verb, const char *content_md5,
                   const char *content_type, const char *date,
                   const char *const *xgoog, const char *resource,
                   const char *key_id, const char *secret,
                   char **string_to_sign);

/* Standard base64 (with padding) of n bytes: malloc'd. */
char *vt__gs_base64(const unsigned char *data, size_t n);

/* The JWT GDAL posts for a service account: base64 of
 * {"alg":"RS256","typ":"JWT"} "." base64 of the claims {"iss": email,
 * "scope": scope, "aud": aud, "iat": now, "exp": now + lifetime}, "." the
 * RS256 signature with the PEM private key. malloc'd; NULL when the key
 * does not load or signing fails (errbuf says which). */
char *vt__gs_jwt(const char *pem, const char *email, const char *scope,
                 const char *aud, long long now, long lifetime, char *errbuf,
                 size_t errlen);

/* The boto file's fields, as GDAL reads them (line by line; a line
 * starting with '[' opens a section, only exactly "[Credentials]" and
 * "[OAuth2]" count; "key = value" split at the first '=' or ':' with the
 * key compared case-insensitively and the value trimmed). Fields not found
 * stay NULL; each malloc'd. */
struct vt_gs_boto {
    char *access_key, *secret, *refresh_token, *client_id, *client_secret;
};
void vt__gs_boto_parse(const char *text, size_t len, struct vt_gs_boto *b);
void vt__gs_boto_clear(struct vt_gs_boto *b);

/* A token endpoint's or metadata server's JSON answer: access_token
 * (malloc'd) and expires_in (seconds; 0 when absent). VT_EPROTO when no
 * access_token. */
vt_err vt__gs_parse_token(const char *body, size_t len, char **token,
                          long *expires_in);

#endif
