/* az_auth.h: Azure Blob credentials and Shared Key signing, as GDAL 3.6's
 * /vsiaz/ finds and uses them (cpl_azure.cpp, measured against Azurite).
 *
 * az_creds.c walks GDAL 3.6's chain for a path: the connection string, then
 * the account with an access token, a shared key, a SAS, no signing or a
 * managed identity (IMDS), then the Azure CLI's config file; and names the
 * credential for the shared caches (a keyed hash, never the secret).
 * az_sign.c builds Shared Key's string to sign and its HMAC (pure). */
#ifndef VT_AZ_AUTH_H
#define VT_AZ_AUTH_H

#include <stddef.h>

#include "base/error.h"

/* The x-ms-version GDAL 3.6 sends with a Shared Key or a bearer token. */
#define VT_AZ_MS_VERSION "2019-12-12"

/* What requests for one path are made with. Strings malloc'd or NULL. */
typedef struct vt_az_cfg {
    char *endpoint;  /* "https://acct.blob.core.windows.net", or the
                        CPL_AZURE_ENDPOINT / BlobEndpoint given, without
                        its trailing '/' */
    char *account;   /* AccountName / AZURE_STORAGE_ACCOUNT */
    char *key;       /* the base64 shared key, or NULL */
    char *sas;       /* a SAS query string without '?', or NULL */
    char *token;     /* a bearer token (AZURE_STORAGE_ACCESS_TOKEN or the
                        managed identity's), or NULL */
    int imds;        /* token came from the managed identity endpoint */
    int nosign;      /* AZURE_NO_SIGN_REQUEST: nothing sent */
} vt_az_cfg;

/* The configuration for path ("container/blob", options read for it as
 * GDAL 3.6 reads them under /vsiaz/). VT_OK, or VT_ECREDS with GDAL's words
 * in errbuf (what VSIError gets, VSIE_AWSInvalidCredentials; the running
 * release's words, compat/gdal_release.h, when nothing is found). May fetch a
 * managed identity token (kept until a minute before it expires). */
vt_err vt__az_config(const char *path, vt_az_cfg *out, char *errbuf,
                     size_t errlen);
/* The same chain without asking the managed identity endpoint (c->imds
 * set where it would be asked, no token): where path's objects live, for
 * the object identity, which no token changes (stock asks IMDS only for
 * the requests it signs). */
vt_err vt__az_config_where(const char *path, vt_az_cfg *out, char *errbuf,
                           size_t errlen);
void vt__az_config_clear(vt_az_cfg *c);

/* A connection string's parts as GDAL 3.6 reads them: AccountName and
 * AccountKey (else BlobEndpoint + SharedAccessSignature), the endpoint
 * from BlobEndpoint or DefaultEndpointsProtocol + AccountName +
 * EndpointSuffix. 1 and *out filled (strings malloc'd), 0: not usable. */
int vt__az_parse_connection_string(const char *cs, vt_az_cfg *out);

/* Forget kept managed identity tokens (GDAL's VSICurlClearCache). */
void vt__az_forget_tokens(void);

/* Who c makes requests as, for the shared caches: "anonymous" (no
 * signing), or "azure:<keyed HMAC of account, endpoint and the secret, the
 * secret the key>" for a shared key, a SAS or a token. 0, or -1 (out ""). */
int vt__az_identity(const vt_az_cfg *c, char *out, size_t outlen);

/* ---- Shared Key (az_sign.c, pure) ------------------------------------ */

/* Shared Key's string to sign (Azure's "Authorize with Shared Key", as
 * GDAL 3.6 builds it): verb, the standard headers' values taken from
 * headers (NULL-terminated "Name: value" lines; Content-Length "0" as
 * empty), the x-ms-* headers lowercased and sorted as "name:value\n", then
 * "/<account><resource>" and "\n<name>:<value>" for each query parameter
 * (params: NULL-terminated "name=value" strings, decoded, names in
 * lowercase; sorted here). malloc'd, or NULL on OOM. */
char *vt__az_string_to_sign(const char *verb, const char *const *headers,
                            const char *account, const char *resource,
                            const char *const *params);

/* base64(HMAC-SHA256(base64-decoded key, sts)) into out (at least 45
 * bytes), the key decoded as GDAL decodes it (characters outside base64
 * skipped). 0, or -1 for an empty key, a short out or an OpenSSL failure. */
int vt__az_sign(const char *key_b64, const char *sts, char *out,
                size_t outlen);

#endif
