/* creds_meta.c: credentials from metadata endpoints: the container
 * endpoint (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI / _FULL_URI with
 * AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE]: ECS, EKS Pod Identity, Lambda)
 * and EC2 instance metadata, as GDAL asks it (GetConfigurationFromEC2 in
 * cpl_aws.cpp): an IMDSv2 token PUT (1 s timeout); when it is refused or
 * fails in any way, IMDSv1 (no token header); the IAM role name is listed
 * once per process and remembered, as GDAL does (role_lock, a leaf lock,
 * held only to copy the name). Blocks on HTTP. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>
#include <cpl_string.h>

#include "auth/creds_int.h"
#include "auth/creds_parse.h"
#include "base/forksafe.h"

#define IMDS_TIMEOUT_MS 1000
#define IMDS_DEFAULT    "http://169.254.169.254"

/* ---- provider: container credentials (ECS, EKS Pod Identity, Lambda) -- */

int vt__creds_from_container(const struct vt_copts *o, vt_creds *out,
                             const char *url, char *errbuf, size_t errlen)
{
    int rc = -1;
    char *auth = NULL, *line = NULL, *raw = NULL;
    const char *tf = vt__copt(o, CO_CONTAINER_TOKEN_FILE);
    const char *tv = vt__copt(o, CO_CONTAINER_TOKEN);

    if (tf) { /* the file wins: EKS rotates it */
        size_t n = 0;
        raw = vt__creds_read_file(tf, VT_CREDS_FILE_CAP, &n);
        if (!raw || !(auth = vt__creds_clean_token(raw, n))) {
            vt__creds_put(errbuf, errlen,
                          "container credentials: cannot read a token "
                          "from %s (%s)",
                          tf, raw ? "empty or malformed" : strerror(errno));
            goto out;
        }
    } else if (tv) {
        auth = vt__creds_clean_token(tv, strlen(tv));
        if (!auth) {
            vt__creds_put(
                errbuf, errlen,
                "container credentials: "
                "AWS_CONTAINER_AUTHORIZATION_TOKEN holds a line break");
            goto out;
        }
    }
    const char *headers[2] = {NULL, NULL};
    if (auth) {
        size_t n = strlen(auth) + 32;
        line = malloc(n);
        if (!line) {
            vt__creds_put(errbuf, errlen, "out of memory");
            goto out;
        }
        snprintf(line, n, "Authorization: %s", auth);
        headers[0] = line;
    }
    if (vt__creds_fetch_creds("container credentials", "GET", url, headers,
                              NULL, 2000, 2, vt__creds_parse_json, "container",
                              out, errbuf, errlen) == 0)
        rc = 1;
out:
    vt__creds_free_secret(raw);
    vt__creds_free_secret(auth);
    vt__creds_free_secret(line);
    return rc;
}

/* ---- the IAM role name, remembered ------------------------------------ */

/* One per process, whatever the endpoint, as GDAL keeps it (an instance
 * has one role). */
static pthread_mutex_t role_lock = PTHREAD_MUTEX_INITIALIZER;
static char role_name[256];
static pthread_once_t role_once = PTHREAD_ONCE_INIT;

static void role_forksafe(void)
{
    vt__forksafe_register(&role_lock);
}

/* The remembered role, malloc'd, or NULL. */
static char *role_get(void)
{
    char *r = NULL;
    pthread_once(&role_once, role_forksafe);
    pthread_mutex_lock(&role_lock);
    if (role_name[0])
        r = strdup(role_name);
    pthread_mutex_unlock(&role_lock);
    return r;
}

static void role_set(const char *role)
{
    pthread_once(&role_once, role_forksafe);
    pthread_mutex_lock(&role_lock);
    snprintf(role_name, sizeof(role_name), "%s", role ? role : "");
    pthread_mutex_unlock(&role_lock);
}

void vt__creds_imds_reset(void)
{
    role_set("");
}

/* ---- provider: EC2 instance metadata ---------------------------------- */

/* First bytes of a small system file, or NULL when it cannot be opened. */
static char *read_head(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "rb");
    size_t n;
    if (!f)
        return NULL;
    n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* Like GDAL: on Linux, the hypervisor UUID / DMI vendor tell whether this
 * can be EC2, which spares a timeout on laptops and other clouds.
 * CPL_AWS_AUTODETECT_EC2=NO (or GDAL's deprecated
 * CPL_AWS_CHECK_HYPERVISOR_UUID=NO) turns the guess off (always ask IMDS). */
static int maybe_ec2(const struct vt_copts *o)
{
    char a[64], b[64];
    if (!vt__copt_bool(o, CO_EC2_AUTODETECT, 1) ||
        !vt__copt_bool(o, CO_EC2_CHECK_UUID, 1)) /* GDAL's older name */
        return 1;
    return vt__ec2_guess(read_head("/sys/hypervisor/uuid", a, sizeof(a)),
                         read_head("/sys/devices/virtual/dmi/id/sys_vendor", b,
                                   sizeof(b))) != 0;
}

/* 1: found; 0: not found (notes say why). */
int vt__creds_from_imds(const struct vt_copts *o, vt_creds *out, char *notes,
                        size_t nlen)
{
    int rc = 0;
    char base[512], url[1024], tokhdr[256], err[1536] = "";
    char *token = NULL, *role = NULL;
    const char *ep = vt__copt(o, CO_IMDS_ENDPOINT);
    vt_http_resp resp;
    memset(&resp, 0, sizeof(resp));

    if (!ep)
        ep = vt__copt_raw(o, CO_EC2_ROOT_URL); /* GDAL's name */
    if (ep && !*ep) {
        /* GDAL then asks "/latest/...", which cannot work. */
        snprintf(err, sizeof(err), "CPL_AWS_EC2_API_ROOT_URL is empty");
        goto out;
    }
    if (!ep && !maybe_ec2(o)) {
        snprintf(err, sizeof(err), "not an EC2 instance (hypervisor/DMI ids)");
        goto out;
    }
    snprintf(base, sizeof(base), "%s", ep ? ep : IMDS_DEFAULT);
    size_t bl = strlen(base);
    while (bl && base[bl - 1] == '/')
        base[--bl] = '\0';

    /* IMDSv2 session token; on any failure IMDSv1, as GDAL does. */
    const char *put_hdrs[] = {"X-aws-ec2-metadata-token-ttl-seconds: 10",
                              NULL};
    snprintf(url, sizeof(url), "%s/latest/api/token", base);
    vt_http_req put = {.method = "PUT",
                       .url = url,
                       .headers = put_hdrs,
                       .body = "",
                       .max_body = 4096,
                       .max_retries = 0,
                       .retry_delay = -1,
                       .timeout_ms = IMDS_TIMEOUT_MS,
                       .connect_timeout_ms = IMDS_TIMEOUT_MS};
    vt_err e = vt__engine_perform(&put, &resp);
    if (e == VT_OK && resp.status == 200)
        token = vt__creds_clean_token((const char *)resp.body, resp.body_len);
    if (!token || strlen(token) > 200) {
        CPLDebug("VSITUNE",
                 "IMDSv2 token PUT %s: %s, HTTP %ld: trying IMDSv1", url,
                 vt_strerror(e), resp.status);
        vt__creds_free_secret(token);
        token = NULL;
    }
    vt__http_resp_clear(&resp);

    snprintf(tokhdr, sizeof(tokhdr), "X-aws-ec2-metadata-token: %s",
             token ? token : "");
    const char *hdrs[] = {token ? tokhdr : NULL, NULL};
    role = role_get();
    if (!role) {
        snprintf(url, sizeof(url),
                 "%s/latest/meta-data/iam/security-credentials/", base);
        if (vt__creds_fetch("EC2 instance metadata", "GET", url, hdrs, NULL,
                            IMDS_TIMEOUT_MS, 0, &resp, err, sizeof(err)))
            goto out;
        role = vt__imds_first_role((const char *)resp.body, resp.body_len);
        vt__http_resp_clear(&resp);
        if (!role) {
            snprintf(err, sizeof(err),
                     "EC2 instance metadata: no IAM role attached");
            goto out;
        }
        role_set(role);
    }
    snprintf(url, sizeof(url),
             "%s/latest/meta-data/iam/security-credentials/%s", base, role);
    if (vt__creds_fetch_creds("EC2 instance metadata", "GET", url, hdrs, NULL,
                              IMDS_TIMEOUT_MS, 0, vt__creds_parse_json, "imds",
                              out, err, sizeof(err)) == 0)
        rc = 1;
out:
    if (rc == 0)
        vt__creds_note(notes, nlen, "%s", err);
    vt__http_resp_clear(&resp);
    vt__creds_free_secret(token);
    free(role);
    return rc;
}
