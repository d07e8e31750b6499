/* creds_sts.c: credentials from AWS STS, sent as GDAL 3.6 sends them
 * (cpl_aws.cpp), so a server that answers GDAL answers vsitune:
 *
 * - AssumeRoleWithWebIdentity: an unsigned GET of
 *   <root>/?Action=AssumeRoleWithWebIdentity&RoleSessionName=..&Version=..
 *   &RoleArn=..&WebIdentityToken=.. where <root> is CPL_AWS_STS_ROOT_URL,
 *   else https://sts.<AWS_REGION>.amazonaws.com (AWS_STS_REGIONAL_ENDPOINTS
 *   =regional, the default) or https://sts.amazonaws.com (=legacy).
 * - AssumeRole (profile role_arn + source_profile): a GET of
 *   http[s]://<AWS_STS_ENDPOINT>/?<sorted parameters> (scheme from AWS_HTTPS,
 *   host default sts.amazonaws.com) signed for service sts in AWS_STS_REGION
 *   (default us-east-1) over the host header alone (and
 *   x-amz-security-token when the signing keys carry one), X-Amz-Date sent
 *   beside it; mfa_serial goes in as SerialNumber, as GDAL sends it.
 *
 * AWS_TIMESTAMP fixes the signing time as it does for S3 requests. Blocks on
 * HTTP; no lock. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cpl_string.h>

#include "auth/creds_int.h"
#include "auth/creds_parse.h"
#include "auth/sigv4.h"
#include "base/sha256.h"

#define STS_TIMEOUT_MS 10000
#define STS_URL_CAP 16384

/* "YYYYMMDDTHHMMSSZ" into date: AWS_TIMESTAMP when it is one, else now. */
static void sts_date(const struct vt_copts *o, char date[17])
{
    const char *ts = vt__copt(o, CO_TIMESTAMP);
    int ok = ts && strlen(ts) == 16 && ts[8] == 'T' && ts[15] == 'Z';
    for (int i = 0; ok && i < 15; i++)
        if (i != 8 && (ts[i] < '0' || ts[i] > '9'))
            ok = 0;
    if (ok)
        memcpy(date, ts, 17);
    else
        vt__amz_date((long long)time(NULL), date);
}

/* ---- web identity ----------------------------------------------------- */

/* Root URL of STS for web identity, without a trailing slash, into buf. */
static void web_identity_root(const struct vt_copts *o, char *buf, size_t len)
{
    const char *root = vt__copt(o, CO_STS_ROOT_URL);
    const char *ep = vt__copt(o, CO_STS_ENDPOINT);
    const char *mode = vt__copt(o, CO_STS_REGIONAL);
    const char *region = vt__copt(o, CO_REGION);

    if (!root && ep && strstr(ep, "://"))
        root = ep; /* the AWS SDKs' AWS_STS_ENDPOINT, given as a URL */
    if (root)
        snprintf(buf, len, "%s", root);
    else if (mode && strcasecmp(mode, "regional") != 0)
        snprintf(buf, len, "https://sts.amazonaws.com");
    else
        snprintf(buf, len, "https://sts.%s.amazonaws.com",
                 region ? region : "us-east-1");
    size_t n = strlen(buf);
    while (n > 0 && buf[n - 1] == '/')
        buf[--n] = '\0';
}

int vt__creds_from_web_identity(const struct vt_copts *o, vt_creds *out,
                                const char *role_arn, const char *token_file,
                                const char *session_name, char *errbuf,
                                size_t errlen)
{
    int rc = -1;
    size_t tlen = 0;
    char *raw = vt__creds_read_file(token_file, VT_CREDS_FILE_CAP, &tlen);
    char *token = NULL, *e_role = NULL, *e_tok = NULL, *e_name = NULL;
    char *url = NULL, *ferr = NULL, root[2048];

    if (!raw || !(token = vt__creds_clean_token(raw, tlen))) {
        vt__creds_put(errbuf, errlen,
                      "web identity: cannot read a token from %s (%s)",
                      token_file, raw ? "empty or malformed" : strerror(errno));
        goto out;
    }
    e_role = vt__uri_encode(role_arn, 0);
    e_tok = vt__uri_encode(token, 0);
    e_name = vt__uri_encode(session_name ? session_name : "gdal", 0);
    url = malloc(STS_URL_CAP);
    if (!e_role || !e_tok || !e_name || !url) {
        vt__creds_put(errbuf, errlen, "web identity: out of memory");
        goto out;
    }
    web_identity_root(o, root, sizeof(root));
    if (snprintf(url, STS_URL_CAP,
                 "%s/?Action=AssumeRoleWithWebIdentity&RoleSessionName=%s"
                 "&Version=2011-06-15&RoleArn=%s&WebIdentityToken=%s",
                 root, e_name, e_role, e_tok) >= STS_URL_CAP) {
        vt__creds_put(errbuf, errlen, "web identity: token too long");
        goto out;
    }
    const char *headers[] = {"Accept: application/xml", NULL};
    ferr = malloc(STS_URL_CAP + 1024);
    if (!ferr) {
        vt__creds_put(errbuf, errlen, "web identity: out of memory");
        goto out;
    }
    ferr[0] = '\0';
    if (vt__creds_fetch_creds("web identity (STS AssumeRoleWithWebIdentity)",
                              "GET", url, headers, NULL, STS_TIMEOUT_MS, -1,
                              vt__creds_parse_sts_xml, "web-identity", out,
                              ferr, STS_URL_CAP + 1024) == 0) {
        rc = 1;
    } else {
        /* The URL carries the token: name the request without it. */
        const char *at = strstr(ferr, url);
        if (at)
            vt__creds_put(errbuf, errlen,
                          "%.*s%s/?Action=AssumeRoleWithWebIdentity&RoleArn=%s"
                          "&WebIdentityToken=(from %s)%s",
                          (int)(at - ferr), ferr, root, role_arn, token_file,
                          at + strlen(url));
        else
            vt__creds_put(errbuf, errlen, "web identity (STS "
                          "AssumeRoleWithWebIdentity) at %s failed", root);
    }
out:
    vt__creds_free_secret(raw);
    vt__creds_free_secret(token);
    free(e_role);
    vt__creds_free_secret(e_tok);
    free(e_name);
    vt__creds_free_secret(url);
    vt__creds_free_secret(ferr);
    return rc;
}

/* ---- AssumeRole ------------------------------------------------------- */

/* Append "&key=encoded(value)" (or "key=..." first) to q. -1 on OOM or
 * overflow. */
static int add_param(char *q, size_t cap, const char *key, const char *value)
{
    char *e;
    size_t used = strlen(q);
    if (!value)
        return 0;
    e = vt__uri_encode(value, 0);
    if (!e)
        return -1;
    int n = snprintf(q + used, cap - used, "%s%s=%s", used ? "&" : "", key, e);
    free(e);
    return (n < 0 || (size_t)n >= cap - used) ? -1 : 0;
}

/* The region an STS host signs in: AWS_STS_REGION, else the REGION of a
 * sts.REGION.amazonaws.com host, else us-east-1 (GDAL's default). */
static void sts_region(const struct vt_copts *o, const char *host, char *buf,
                       size_t len)
{
    const char *r = vt__copt(o, CO_STS_REGION), *dot;
    if (r) {
        snprintf(buf, len, "%s", r);
        return;
    }
    if (!strncmp(host, "sts.", 4) &&
        (dot = strstr(host + 4, ".amazonaws.com")) && dot > host + 4 &&
        (size_t)(dot - host - 4) < len) {
        snprintf(buf, len, "%.*s", (int)(dot - host - 4), host + 4);
        return;
    }
    snprintf(buf, len, "us-east-1");
}

int vt__creds_from_assume_role(const struct vt_copts *o, vt_creds *out,
                               const struct vt_profile *p,
                               const vt_creds *signer, char *errbuf,
                               size_t errlen)
{
    int rc = -1, https = vt__copt_bool(o, CO_HTTPS, 1);
    char host[512], region[64], date[17], hash[65], query[8192];
    char *url = NULL, *hdr_tok = NULL, *hdr_auth = NULL;
    char hdr_host[600], hdr_date[40];
    const char *ep = vt__copt(o, CO_STS_ENDPOINT);
    const char *name = p->session_name ? p->session_name
                                       : vt__copt(o, CO_SESSION_NAME);
    vt_sigv4_output sig = {0};

    /* AWS_STS_ENDPOINT is a host[:port] to GDAL; a URL (the AWS SDKs' form)
     * gives its scheme and host. */
    if (ep && strstr(ep, "://")) {
        https = strncasecmp(ep, "http://", 7) != 0;
        ep = strstr(ep, "://") + 3;
    }
    if (!ep)
        ep = "sts.amazonaws.com";
    snprintf(host, sizeof(host), "%.*s", (int)strcspn(ep, "/?#"), ep);
    if (!host[0]) {
        vt__creds_put(errbuf, errlen, "assume role: AWS_STS_ENDPOINT '%s' "
                      "names no host", ep);
        goto out;
    }
    sts_region(o, host, region, sizeof(region));
    /* GDAL's order (a sorted map): Action, ExternalId, RoleArn,
     * RoleSessionName, SerialNumber, Version. */
    query[0] = '\0';
    if (add_param(query, sizeof(query), "Action", "AssumeRole") ||
        add_param(query, sizeof(query), "ExternalId", p->external_id) ||
        add_param(query, sizeof(query), "RoleArn", p->role_arn) ||
        add_param(query, sizeof(query), "RoleSessionName",
                  name ? name : "GDAL-session") ||
        add_param(query, sizeof(query), "SerialNumber", p->mfa_serial) ||
        add_param(query, sizeof(query), "Version", "2011-06-15")) {
        vt__creds_put(errbuf, errlen, "assume role: parameters too long");
        goto out;
    }
    vt__sha256_hex("", 0, hash);
    sts_date(o, date);
    snprintf(hdr_host, sizeof(hdr_host), "Host: %s", host);
    snprintf(hdr_date, sizeof(hdr_date), "X-Amz-Date: %s", date);
    if (signer->session_token) {
        size_t n = strlen(signer->session_token) + 32;
        hdr_tok = malloc(n);
        if (!hdr_tok) {
            vt__creds_put(errbuf, errlen, "assume role: out of memory");
            goto out;
        }
        snprintf(hdr_tok, n, "X-Amz-Security-Token: %s",
                 signer->session_token);
    }
    const char *to_sign[3] = {hdr_host, hdr_tok, NULL};
    vt_sigv4_input in = {
        .method = "GET",
        .path = "/",
        .query = query,
        .headers = to_sign,
        .payload_hash = hash,
        .amz_date = date,
        .region = region,
        .service = "sts",
        .access_key = signer->access_key,
        .secret_key = signer->secret_key,
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
    size_t un = strlen(host) + strlen(query) + 16;
    hdr_auth = malloc(an);
    url = malloc(un);
    if (!hdr_auth || !url) {
        vt__creds_put(errbuf, errlen, "assume role: out of memory");
        goto out;
    }
    snprintf(hdr_auth, an, "Authorization: %s", sig.authorization);
    snprintf(url, un, "%s://%s/?%s", https ? "https" : "http", host, query);
    const char *headers[5] = {hdr_host, hdr_date, hdr_auth, NULL, NULL};
    if (hdr_tok)
        headers[3] = hdr_tok;
    if (vt__creds_fetch_creds("assume role (STS AssumeRole)", "GET", url,
                              headers, NULL, STS_TIMEOUT_MS, -1,
                              vt__creds_parse_sts_xml, "assume-role", out,
                              errbuf, errlen) == 0)
        rc = 1;
out:
    vt__sigv4_output_clear(&sig);
    free(url);
    vt__creds_free_secret(hdr_tok);
    free(hdr_auth);
    return rc;
}
