/* creds_sts.c: credentials from AWS STS: AssumeRoleWithWebIdentity (EKS
 * IRSA and other OIDC setups; unsigned, token from a file) and AssumeRole
 * (profile role_arn + source_profile; signed with sigv4.c, service "sts").
 * Endpoint: AWS_STS_ENDPOINT or GDAL's CPL_AWS_STS_ROOT_URL, else regional
 * per AWS_STS_REGIONAL_ENDPOINTS. Blocks on HTTP; no lock. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "creds_int.h"
#include "creds_parse.h"
#include "sigv4.h"

/* ---- provider: web identity (STS AssumeRoleWithWebIdentity) ----------- */

/* STS endpoint: AWS_STS_ENDPOINT or GDAL's CPL_AWS_STS_ROOT_URL, else the
 * regional endpoint (AWS_STS_REGIONAL_ENDPOINTS=regional, the default) or
 * the global one (=legacy). Into buf. */
static void sts_url(char *buf, size_t len)
{
    const char *e = vt__creds_opt("AWS_STS_ENDPOINT");
    if (!e)
        e = vt__creds_opt("CPL_AWS_STS_ROOT_URL");
    if (e) {
        snprintf(buf, len, "%s%s", strstr(e, "://") ? "" : "https://", e);
        return;
    }
    const char *mode = vt__creds_opt("AWS_STS_REGIONAL_ENDPOINTS");
    const char *region = vt__creds_opt("AWS_REGION");
    char *profile_region = NULL;
    if (!region)
        region = vt__creds_opt("AWS_DEFAULT_REGION");
    if (!region)
        region = profile_region = vt__creds_profile_region();
    if ((mode && !strcasecmp(mode, "legacy")) || !region)
        snprintf(buf, len, "https://sts.amazonaws.com/");
    else
        snprintf(buf, len, "https://sts.%s.amazonaws.com/", region);
    free(profile_region);
}

int vt__creds_from_web_identity(vt_creds *out, const char *role_arn,
                                const char *token_file,
                                const char *session_name, char *errbuf,
                                size_t errlen)
{
    int rc = -1;
    size_t tlen = 0;
    char *raw = vt__creds_read_file(token_file, &tlen);
    char *token = NULL, *e_role = NULL, *e_tok = NULL, *e_name = NULL;
    char *body = NULL, url[1024], sname[64];

    if (!raw || !(token = vt__creds_clean_token(raw, tlen))) {
        vt__creds_put(errbuf, errlen,
                      "web identity: cannot read a token from %s (%s)",
                      token_file, raw ? "empty or malformed" : strerror(errno));
        goto out;
    }
    if (!session_name) {
        snprintf(sname, sizeof(sname), "vsitune-session-%lld",
                 (long long)time(NULL));
        session_name = sname;
    }
    e_role = vt__uri_encode(role_arn, 0);
    e_tok = vt__uri_encode(token, 0);
    e_name = vt__uri_encode(session_name, 0);
    if (!e_role || !e_tok || !e_name)
        goto oom;
    size_t blen = strlen(e_role) + strlen(e_tok) + strlen(e_name) + 128;
    body = malloc(blen);
    if (!body)
        goto oom;
    snprintf(body, blen,
             "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=%s"
             "&RoleSessionName=%s&WebIdentityToken=%s",
             e_role, e_name, e_tok);
    sts_url(url, sizeof(url));
    const char *headers[] = {
        "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
        "Accept: application/xml", NULL};
    if (vt__creds_fetch_creds("web identity (STS AssumeRoleWithWebIdentity)",
                              "POST", url, headers, body, 10000, -1,
                              vt__creds_parse_sts_xml, "web-identity", out,
                              errbuf, errlen) == 0)
        rc = 1;
    goto out;
oom:
    vt__creds_put(errbuf, errlen, "web identity: out of memory");
out:
    free(raw);
    free(token);
    free(e_role);
    free(e_tok);
    free(e_name);
    free(body);
    return rc;
}

/* ---- provider: AssumeRole (profile role_arn + source_profile) ---------- */

/* Split an http(s) URL into host[:port] and path (default "/"). */
static int split_url(const char *url, char *host, size_t hlen, char *path,
                     size_t plen)
{
    const char *h = strstr(url, "://");
    if (!h)
        return -1;
    h += 3;
    size_t n = strcspn(h, "/?#");
    if (n == 0 || n >= hlen)
        return -1;
    memcpy(host, h, n);
    host[n] = '\0';
    const char *p = h + n;
    size_t pn = strcspn(p, "?#");
    if (pn + 2 > plen)
        return -1;
    if (pn == 0)
        snprintf(path, plen, "/");
    else
        snprintf(path, plen, "%.*s", (int)pn, p);
    return 0;
}

/* Region an STS host signs in: sts.REGION.amazonaws.com gives REGION; the
 * global endpoint and custom hosts use AWS_REGION, else us-east-1. */
static void sts_region(const char *host, char *buf, size_t len)
{
    const char *dot;
    if (!strncmp(host, "sts.", 4) &&
        (dot = strstr(host + 4, ".amazonaws.com")) && dot > host + 4 &&
        (size_t)(dot - host - 4) < len) {
        snprintf(buf, len, "%.*s", (int)(dot - host - 4), host + 4);
        return;
    }
    const char *r = vt__creds_opt("AWS_REGION");
    if (!r)
        r = vt__creds_opt("AWS_DEFAULT_REGION");
    snprintf(buf, len, "%s", r ? r : "us-east-1");
}

int vt__creds_from_assume_role(vt_creds *out, const struct vt_profile_hint *h,
                               char *errbuf, size_t errlen)
{
    int rc = -1;
    char url[1024], host[512], path[512], region[64], date[17], hash[65];
    char sname[64], *body = NULL, *e_role = NULL, *e_name = NULL, *e_ext = NULL;
    char *hdr_host = NULL, *hdr_tok = NULL, *hdr_auth = NULL;
    char hdr_date[40];
    vt_sigv4_output sig = {0};

    sts_url(url, sizeof(url));
    if (split_url(url, host, sizeof(host), path, sizeof(path))) {
        vt__creds_put(errbuf, errlen, "assume role: bad STS endpoint '%s'",
                      url);
        goto out;
    }
    sts_region(host, region, sizeof(region));
    const char *session_name = h->session_name;
    if (!session_name) {
        snprintf(sname, sizeof(sname), "vsitune-session-%lld",
                 (long long)time(NULL));
        session_name = sname;
    }
    e_role = vt__uri_encode(h->role_arn, 0);
    e_name = vt__uri_encode(session_name, 0);
    e_ext = h->external_id ? vt__uri_encode(h->external_id, 0) : NULL;
    size_t blen = (e_role ? strlen(e_role) : 0) +
                  (e_name ? strlen(e_name) : 0) + (e_ext ? strlen(e_ext) : 0) +
                  128;
    body = malloc(blen);
    hdr_host = malloc(strlen(host) + 8);
    if (!e_role || !e_name || (h->external_id && !e_ext) || !body ||
        !hdr_host) {
        vt__creds_put(errbuf, errlen, "assume role: out of memory");
        goto out;
    }
    snprintf(body, blen,
             "Action=AssumeRole&Version=2011-06-15&RoleArn=%s"
             "&RoleSessionName=%s%s%s",
             e_role, e_name, e_ext ? "&ExternalId=" : "", e_ext ? e_ext : "");
    vt__sha256_hex(body, strlen(body), hash);
    vt__amz_date((long long)time(NULL), date);
    sprintf(hdr_host, "Host: %s", host);
    snprintf(hdr_date, sizeof(hdr_date), "X-Amz-Date: %s", date);
    if (h->source.session_token) {
        size_t n = strlen(h->source.session_token) + 32;
        hdr_tok = malloc(n);
        if (!hdr_tok) {
            vt__creds_put(errbuf, errlen, "assume role: out of memory");
            goto out;
        }
        snprintf(hdr_tok, n, "X-Amz-Security-Token: %s",
                 h->source.session_token);
    }
    const char *headers[6] = {
        hdr_host,
        "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
        hdr_date,
        hdr_tok,
        NULL,
        NULL};
    vt_sigv4_input in = {
        .method = "POST",
        .path = path,
        .headers = headers,
        .payload_hash = hash,
        .amz_date = date,
        .region = region,
        .service = "sts",
        .access_key = h->source.access_key,
        .secret_key = h->source.secret_key,
        .normalize_path = 1,
    };
    vt_err e = vt__sigv4_sign(&in, &sig);
    if (e) {
        vt__creds_put(errbuf, errlen,
                      "assume role: cannot sign the STS request (%s)",
                      vt_strerror(e));
        goto out;
    }
    size_t an = strlen(sig.authorization) + 32;
    hdr_auth = malloc(an);
    if (!hdr_auth) {
        vt__creds_put(errbuf, errlen, "assume role: out of memory");
        goto out;
    }
    snprintf(hdr_auth, an, "Authorization: %s", sig.authorization);
    headers[hdr_tok ? 4 : 3] = hdr_auth;
    if (vt__creds_fetch_creds("assume role (STS AssumeRole)", "POST", url,
                              headers, body, 10000, -1, vt__creds_parse_sts_xml,
                              "assume-role", out, errbuf, errlen) == 0)
        rc = 1;
out:
    vt__sigv4_output_clear(&sig);
    free(body);
    free(e_role);
    free(e_name);
    free(e_ext);
    free(hdr_host);
    free(hdr_tok);
    free(hdr_auth);
    return rc;
}
