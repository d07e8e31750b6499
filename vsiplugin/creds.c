/* creds.c: the AWS credentials provider chain and its refresh (creds.h).
 *
 * Why: users already have credentials set up for the AWS CLI and GDAL; we
 * find them in the same places and order, without an AWS SDK. Environment
 * keys are read on every call (cheap, and --config changes apply at once).
 * Everything else is found once, cached process-wide (keyed by the options
 * it depends on, so changing AWS_PROFILE takes effect), and refreshed ahead
 * of expiry. A failed search is answered from memory for FAIL_REMEMBER
 * seconds, so a burst of opens without credentials does not wait on IMDS
 * again and again.
 *
 * Locking (state.lock, a leaf lock): held only to read or swap the cached
 * credentials, never across a file read or an HTTP call. One thread at a
 * time runs the chain (state.refreshing); while it does, other threads keep
 * the still-valid credentials, and only threads with nothing usable wait on
 * state.cond. All HTTP goes through vt__engine_perform. */
#include "creds.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cpl_conv.h>
#include <cpl_string.h>
#include <openssl/crypto.h>

#include "creds_parse.h"
#include "engine.h"
#include "sigv4.h"
#include "xmlscan.h"

#define REFRESH_AHEAD 300      /* s before expiry: refresh in the background */
#define EXPIRY_SLACK 10        /* s before expiry: stop using them at all */
#define MIN_REFRESH_INTERVAL 5 /* s between two refreshes of valid creds */
#define FAIL_REMEMBER 10       /* s a failed search is answered from memory */
#define FILE_CAP (1024 * 1024) /* shared files and token files */
#define IMDS_TIMEOUT_MS 1000
#define IMDS_DEFAULT "http://169.254.169.254"

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    vt_creds cur;      /* owned; meaningful when have */
    int have;
    char *fingerprint; /* options cur was found with (malloc'd) */
    int refreshing;    /* a thread is running the chain */
    time_t next_try;   /* no refresh of still-valid creds before this */
    unsigned gen;      /* bumped by vt__creds_reset */
    char *fail_fp;     /* options of the last failed search (malloc'd) */
    char fail_msg[1024];
    time_t fail_until; /* until then the same search fails from memory, so a
                          burst of opens does not probe IMDS again and again */
} state = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/* Config option or environment (CPLGetConfigOption), NULL when unset/empty.
 * The pointer is only good until the next config change: copy it. */
static const char *opt(const char *name)
{
    const char *v = CPLGetConfigOption(name, NULL);
    return (v && *v) ? v : NULL;
}

static void put(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    if (!len)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* Append "; text" to a note buffer (what each provider said). */
static void note(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strlen(buf);
    va_list ap;
    if (used + 3 >= len)
        return;
    if (used) {
        memcpy(buf + used, "; ", 3);
        used += 2;
    }
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

void vt__creds_clear(vt_creds *c)
{
    if (!c)
        return;
    if (c->secret_key)
        OPENSSL_cleanse(c->secret_key, strlen(c->secret_key));
    free(c->access_key);
    free(c->secret_key);
    free(c->session_token);
    memset(c, 0, sizeof(*c));
}

/* Deep copy (dst is overwritten, not cleared). VT_ENOMEM leaves dst empty. */
static vt_err creds_copy(vt_creds *dst, const vt_creds *src)
{
    memset(dst, 0, sizeof(*dst));
    dst->access_key = src->access_key ? strdup(src->access_key) : NULL;
    dst->secret_key = src->secret_key ? strdup(src->secret_key) : NULL;
    dst->session_token = src->session_token ? strdup(src->session_token) : NULL;
    dst->expiration = src->expiration;
    dst->source = src->source;
    dst->anonymous = src->anonymous;
    if ((src->access_key && !dst->access_key) ||
        (src->secret_key && !dst->secret_key) ||
        (src->session_token && !dst->session_token)) {
        vt__creds_clear(dst);
        return VT_ENOMEM;
    }
    return VT_OK;
}

/* Read a whole (small) file: malloc'd, NUL-terminated; NULL with errno set
 * when it cannot be read or is larger than FILE_CAP (EFBIG). */
static char *read_small_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0;
    if (!f)
        return NULL;
    buf = malloc(FILE_CAP + 1);
    if (!buf) {
        errno = ENOMEM;
        goto out;
    }
    n = fread(buf, 1, FILE_CAP + 1, f);
    if (ferror(f) || n > FILE_CAP) {
        free(buf);
        buf = NULL;
        errno = ferror(f) ? EIO : EFBIG;
        goto out;
    }
    buf[n] = '\0';
    *len = n;
out:
    fclose(f);
    return buf;
}

/* A token read from a file or option: trimmed, no line breaks inside. */
static char *clean_token(const char *s, size_t n)
{
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' ||
                 s[n - 1] == '\t'))
        n--;
    while (n && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) {
        s++;
        n--;
    }
    if (n == 0 || memchr(s, '\n', n) || memchr(s, '\r', n) || memchr(s, '\0', n))
        return NULL;
    return strndup(s, n);
}

/* ---- provider: environment / GDAL config ------------------------------ */

static int from_env(vt_creds *out)
{
    const char *ak = opt("AWS_ACCESS_KEY_ID"), *sk = opt("AWS_SECRET_ACCESS_KEY");
    const char *tok = opt("AWS_SESSION_TOKEN");
    if (!ak || !sk)
        return 0;
    vt_creds c = {.access_key = (char *)ak, .secret_key = (char *)sk,
                  .session_token = (char *)tok, .source = "environment"};
    return creds_copy(out, &c) == VT_OK ? 1 : -1;
}

/* ---- provider: shared credentials / config files ---------------------- */

struct profile_hint {  /* role settings found in the profile */
    char *role_arn;
    char *token_file;      /* web_identity_token_file: web identity */
    char *session_name;
    char *source_profile;  /* source_profile: AssumeRole signed with ... */
    vt_creds source;       /* ... that profile's keys */
    char *external_id;
    const char *unsupported; /* a role setting we cannot honour (static) */
};

static void hint_clear(struct profile_hint *h)
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
    const char *s = vt__ini_has_section(ftext, flen, sect) ? sect
                    : vt__ini_has_section(ftext, flen, name) ? name : NULL;
    if (!s)
        return;
    *section_seen = 1;
    *ak = vt__ini_get(ftext, flen, s, "aws_access_key_id");
    *sk = vt__ini_get(ftext, flen, s, "aws_secret_access_key");
    free(*tok);
    *tok = vt__ini_get(ftext, flen, s, "aws_session_token");
}

static void free_secret(char *s)
{
    if (s) {
        OPENSSL_cleanse(s, strlen(s));
        free(s);
    }
}

static void home_path(char *buf, size_t len, const char *opt_name,
                      const char *leaf)
{
    const char *o = opt(opt_name), *home = opt("HOME");
    if (o)
        snprintf(buf, len, "%s", o);
    else
        snprintf(buf, len, "%s/.aws/%s", home ? home : "", leaf);
}

/* 1: found (out filled); 0: not there (notes say why, hint may name a role
 * to assume); -1: error (errbuf). */
static int from_profile(vt_creds *out, struct profile_hint *hint, char *notes,
                        size_t nlen, char *errbuf, size_t errlen)
{
    char cpath[1024], fpath[1024], sect[300];
    const char *explicit_name = opt("AWS_PROFILE");
    if (!explicit_name)
        explicit_name = opt("AWS_DEFAULT_PROFILE");
    const char *name = explicit_name ? explicit_name : "default";
    char *ctext = NULL, *ftext = NULL;
    size_t clen = 0, flen = 0;
    int found_section = 0, rc = 0;
    char *ak = NULL, *sk = NULL, *tok = NULL;

    home_path(cpath, sizeof(cpath), "AWS_SHARED_CREDENTIALS_FILE", "credentials");
    home_path(fpath, sizeof(fpath), "AWS_CONFIG_FILE", "config");
    ctext = read_small_file(cpath, &clen);
    ftext = read_small_file(fpath, &flen);

    /* Role settings live in the config file ("[profile NAME]", "[default]"
     * for the default one; "[NAME]" accepted too). Like the AWS CLI, a role
     * wins over keys of the same profile. */
    snprintf(sect, sizeof(sect), "profile %s", name);
    const char *cs = !ftext ? NULL
                     : vt__ini_has_section(ftext, flen, sect) ? sect
                     : vt__ini_has_section(ftext, flen, name) ? name : NULL;
    if (cs) {
        hint->role_arn = vt__ini_get(ftext, flen, cs, "role_arn");
        hint->token_file = vt__ini_get(ftext, flen, cs, "web_identity_token_file");
        hint->session_name = vt__ini_get(ftext, flen, cs, "role_session_name");
        hint->source_profile = vt__ini_get(ftext, flen, cs, "source_profile");
        hint->external_id = vt__ini_get(ftext, flen, cs, "external_id");
        char *mfa = vt__ini_get(ftext, flen, cs, "mfa_serial");
        char *csrc = vt__ini_get(ftext, flen, cs, "credential_source");
        hint->unsupported = mfa ? "mfa_serial" : csrc ? "credential_source" : NULL;
        free(mfa);
        free(csrc);
    }
    if (hint->role_arn && (hint->token_file || hint->source_profile ||
                           hint->unsupported)) {
        if (hint->source_profile && !hint->token_file && !hint->unsupported) {
            int seen = 0;
            profile_keys(ctext, clen, ftext, flen, hint->source_profile, &ak,
                         &sk, &tok, &seen);
            if (!ak || !sk || !*ak || !*sk) {
                put(errbuf, errlen, "AWS profile '%s': source_profile '%s' has "
                    "no aws_access_key_id/aws_secret_access_key (%s, %s)", name,
                    hint->source_profile, cpath, fpath);
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

    profile_keys(ctext, clen, ftext, flen, name, &ak, &sk, &tok, &found_section);
    found_section |= (cs != NULL);
    if (ak && sk && *ak && *sk) {
        vt_creds c = {.access_key = ak, .secret_key = sk,
                      .session_token = (tok && *tok) ? tok : NULL,
                      .source = "profile"};
        rc = creds_copy(out, &c) == VT_OK ? 1 : -1;
        if (rc < 0)
            put(errbuf, errlen, "out of memory");
        goto out;
    }
    if (ak || sk) {
        put(errbuf, errlen,
            "AWS profile '%s' has only one of aws_access_key_id and "
            "aws_secret_access_key (%s, %s)", name, cpath, fpath);
        rc = -1;
        goto out;
    }
    if (explicit_name && !found_section) {
        put(errbuf, errlen, "AWS profile '%s' (AWS_PROFILE) not found in %s or %s",
            name, cpath, fpath);
        rc = -1;
        goto out;
    }
    note(notes, nlen, "no keys for profile '%s' in %s%s or %s%s", name, cpath,
         ctext ? "" : " (absent)", fpath, ftext ? "" : " (absent)");
out:
    free(ak);
    free_secret(sk);
    free(tok);
    free(ctext);
    free(ftext);
    return rc;
}

/* ---- HTTP helper ------------------------------------------------------ */

/* One request through the engine; 0 on a 200, -1 otherwise with errbuf
 * naming what and why. resp must be cleared by the caller either way. */
static int fetch(const char *what, const char *method, const char *url,
                 const char *const *headers, const char *body, long timeout_ms,
                 int retries, vt_http_resp *resp, char *errbuf, size_t errlen)
{
    vt_http_req rq = {
        .method = method, .url = url, .headers = headers, .body = body,
        .body_len = body ? strlen(body) : 0, .max_body = 256 * 1024,
        .max_retries = retries, .retry_delay = -1, .timeout_ms = timeout_ms,
        .connect_timeout_ms = timeout_ms,
    };
    vt_err err = vt__engine_perform(&rq, resp);
    if (err) {
        put(errbuf, errlen, "%s: %s %s: %s%s%s", what, method, url,
            vt_strerror(err), resp->error[0] ? ": " : "", resp->error);
        return -1;
    }
    if (resp->status != 200) {
        char *code = NULL, *msg = NULL;
        if (resp->body) {
            code = vt__xml_tag((const char *)resp->body, resp->body_len, "Code");
            msg = vt__xml_tag((const char *)resp->body, resp->body_len, "Message");
            if (!code)
                code = vt__json_get_string((const char *)resp->body,
                                           resp->body_len, "code");
            if (!msg)
                msg = vt__json_get_string((const char *)resp->body,
                                          resp->body_len, "message");
        }
        put(errbuf, errlen, "%s: %s %s: HTTP %ld%s%s%s%s", what, method, url,
            resp->status, code ? " " : "", code ? code : "", msg ? ": " : "",
            msg ? msg : "");
        free(code);
        free(msg);
        return -1;
    }
    return 0;
}

typedef vt_err (*creds_parser)(const char *body, size_t len, vt_creds *out);

/* fetch(), then parse a 200 body into *out (source set). 0 on success, -1
 * with errbuf saying what failed. */
static int fetch_creds(const char *what, const char *method, const char *url,
                       const char *const *headers, const char *body,
                       long timeout_ms, int retries, creds_parser parse,
                       const char *source, vt_creds *out, char *errbuf,
                       size_t errlen)
{
    vt_http_resp resp;
    int rc = -1;
    memset(&resp, 0, sizeof(resp));
    if (fetch(what, method, url, headers, body, timeout_ms, retries, &resp,
              errbuf, errlen))
        goto out;
    if (parse((const char *)resp.body, resp.body_len, out)) {
        put(errbuf, errlen, "%s: %s answered without usable credentials "
            "(AccessKeyId, SecretAccessKey, Expiration)", what, url);
        goto out;
    }
    out->source = source;
    rc = 0;
out:
    vt__http_resp_clear(&resp);
    return rc;
}

/* ---- provider: web identity (STS AssumeRoleWithWebIdentity) ----------- */

/* STS endpoint: AWS_STS_ENDPOINT or GDAL's CPL_AWS_STS_ROOT_URL, else the
 * regional endpoint (AWS_STS_REGIONAL_ENDPOINTS=regional, the default) or
 * the global one (=legacy). Into buf. */
static void sts_url(char *buf, size_t len)
{
    const char *e = opt("AWS_STS_ENDPOINT");
    if (!e)
        e = opt("CPL_AWS_STS_ROOT_URL");
    if (e) {
        snprintf(buf, len, "%s%s", strstr(e, "://") ? "" : "https://", e);
        return;
    }
    const char *mode = opt("AWS_STS_REGIONAL_ENDPOINTS");
    const char *region = opt("AWS_REGION");
    if (!region)
        region = opt("AWS_DEFAULT_REGION");
    if ((mode && !strcasecmp(mode, "legacy")) || !region)
        snprintf(buf, len, "https://sts.amazonaws.com/");
    else
        snprintf(buf, len, "https://sts.%s.amazonaws.com/", region);
}

static int from_web_identity(vt_creds *out, const char *role_arn,
                             const char *token_file, const char *session_name,
                             char *errbuf, size_t errlen)
{
    int rc = -1;
    size_t tlen = 0;
    char *raw = read_small_file(token_file, &tlen);
    char *token = NULL, *e_role = NULL, *e_tok = NULL, *e_name = NULL;
    char *body = NULL, url[1024], sname[64];

    if (!raw || !(token = clean_token(raw, tlen))) {
        put(errbuf, errlen, "web identity: cannot read a token from %s (%s)",
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
             "&RoleSessionName=%s&WebIdentityToken=%s", e_role, e_name, e_tok);
    sts_url(url, sizeof(url));
    const char *headers[] = {
        "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
        "Accept: application/xml", NULL};
    if (fetch_creds("web identity (STS AssumeRoleWithWebIdentity)", "POST",
                    url, headers, body, 10000, -1, vt__creds_parse_sts_xml,
                    "web-identity", out, errbuf, errlen) == 0)
        rc = 1;
    goto out;
oom:
    put(errbuf, errlen, "web identity: out of memory");
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
    if (!strncmp(host, "sts.", 4) && (dot = strstr(host + 4, ".amazonaws.com")) &&
        dot > host + 4 && (size_t)(dot - host - 4) < len) {
        snprintf(buf, len, "%.*s", (int)(dot - host - 4), host + 4);
        return;
    }
    const char *r = opt("AWS_REGION");
    if (!r)
        r = opt("AWS_DEFAULT_REGION");
    snprintf(buf, len, "%s", r ? r : "us-east-1");
}

static int from_assume_role(vt_creds *out, const struct profile_hint *h,
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
        put(errbuf, errlen, "assume role: bad STS endpoint '%s'", url);
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
    size_t blen = (e_role ? strlen(e_role) : 0) + (e_name ? strlen(e_name) : 0) +
                  (e_ext ? strlen(e_ext) : 0) + 128;
    body = malloc(blen);
    hdr_host = malloc(strlen(host) + 8);
    if (!e_role || !e_name || (h->external_id && !e_ext) || !body || !hdr_host) {
        put(errbuf, errlen, "assume role: out of memory");
        goto out;
    }
    snprintf(body, blen, "Action=AssumeRole&Version=2011-06-15&RoleArn=%s"
             "&RoleSessionName=%s%s%s", e_role, e_name, e_ext ? "&ExternalId=" : "",
             e_ext ? e_ext : "");
    vt__sha256_hex(body, strlen(body), hash);
    vt__amz_date((long long)time(NULL), date);
    sprintf(hdr_host, "Host: %s", host);
    snprintf(hdr_date, sizeof(hdr_date), "X-Amz-Date: %s", date);
    if (h->source.session_token) {
        size_t n = strlen(h->source.session_token) + 32;
        hdr_tok = malloc(n);
        if (!hdr_tok) {
            put(errbuf, errlen, "assume role: out of memory");
            goto out;
        }
        snprintf(hdr_tok, n, "X-Amz-Security-Token: %s", h->source.session_token);
    }
    const char *headers[6] = {hdr_host,
                              "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
                              hdr_date, hdr_tok, NULL, NULL};
    vt_sigv4_input in = {
        .method = "POST", .path = path, .headers = headers,
        .payload_hash = hash, .amz_date = date, .region = region,
        .service = "sts", .access_key = h->source.access_key,
        .secret_key = h->source.secret_key, .normalize_path = 1,
    };
    vt_err e = vt__sigv4_sign(&in, &sig);
    if (e) {
        put(errbuf, errlen, "assume role: cannot sign the STS request (%s)",
            vt_strerror(e));
        goto out;
    }
    size_t an = strlen(sig.authorization) + 32;
    hdr_auth = malloc(an);
    if (!hdr_auth) {
        put(errbuf, errlen, "assume role: out of memory");
        goto out;
    }
    snprintf(hdr_auth, an, "Authorization: %s", sig.authorization);
    headers[hdr_tok ? 4 : 3] = hdr_auth;
    if (fetch_creds("assume role (STS AssumeRole)", "POST", url, headers, body,
                    10000, -1, vt__creds_parse_sts_xml, "assume-role", out,
                    errbuf, errlen) == 0)
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

/* ---- provider: container credentials (ECS, EKS Pod Identity, Lambda) -- */

static int from_container(vt_creds *out, const char *url, char *errbuf,
                          size_t errlen)
{
    int rc = -1;
    char *auth = NULL, *line = NULL, *raw = NULL;
    const char *tf = opt("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    const char *tv = opt("AWS_CONTAINER_AUTHORIZATION_TOKEN");

    if (tf) { /* the file wins: EKS rotates it */
        size_t n = 0;
        raw = read_small_file(tf, &n);
        if (!raw || !(auth = clean_token(raw, n))) {
            put(errbuf, errlen, "container credentials: cannot read a token "
                "from %s (%s)", tf, raw ? "empty or malformed" : strerror(errno));
            goto out;
        }
    } else if (tv) {
        auth = clean_token(tv, strlen(tv));
        if (!auth) {
            put(errbuf, errlen, "container credentials: "
                "AWS_CONTAINER_AUTHORIZATION_TOKEN holds a line break");
            goto out;
        }
    }
    const char *headers[2] = {NULL, NULL};
    if (auth) {
        size_t n = strlen(auth) + 32;
        line = malloc(n);
        if (!line) {
            put(errbuf, errlen, "out of memory");
            goto out;
        }
        snprintf(line, n, "Authorization: %s", auth);
        headers[0] = line;
    }
    if (fetch_creds("container credentials", "GET", url, headers, NULL, 2000,
                    2, vt__creds_parse_json, "container", out, errbuf,
                    errlen) == 0)
        rc = 1;
out:
    free(raw);
    free(auth);
    free(line);
    return rc;
}

/* ---- provider: EC2 instance metadata (IMDSv2, IMDSv1 fallback) -------- */

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
 * CPL_AWS_AUTODETECT_EC2=NO turns the guess off (always ask IMDS). */
static int maybe_ec2(void)
{
    char a[64], b[64];
    const char *o = opt("CPL_AWS_AUTODETECT_EC2");
    if (o && !CPLTestBool(o))
        return 1;
    return vt__ec2_guess(read_head("/sys/hypervisor/uuid", a, sizeof(a)),
                         read_head("/sys/devices/virtual/dmi/id/sys_vendor", b,
                                   sizeof(b))) != 0;
}

/* 1: found; 0: not found (notes say why). */
static int from_imds(vt_creds *out, char *notes, size_t nlen)
{
    int rc = 0;
    char base[512], url[1024], tokhdr[256], err[1536] = "";
    char *token = NULL, *role = NULL;
    const char *ep = opt("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    vt_http_resp resp;
    memset(&resp, 0, sizeof(resp));

    if (!ep)
        ep = opt("CPL_AWS_EC2_API_ROOT_URL"); /* GDAL's name */
    if (!ep && !maybe_ec2()) {
        snprintf(err, sizeof(err), "not an EC2 instance (hypervisor/DMI ids)");
        goto out;
    }
    snprintf(base, sizeof(base), "%s", ep ? ep : IMDS_DEFAULT);
    size_t bl = strlen(base);
    while (bl && base[bl - 1] == '/')
        base[--bl] = '\0';

    /* IMDSv2 session token. Where the PUT times out or is refused by an
     * older IMDS, fall back to IMDSv1 (as GDAL and the AWS SDKs do); where
     * nothing listens at all, or IMDS says 403 (disabled), stop here. */
    const char *put_hdrs[] = {"X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL};
    snprintf(url, sizeof(url), "%s/latest/api/token", base);
    vt_http_req put = {.method = "PUT", .url = url, .headers = put_hdrs,
                       .body = "", .max_body = 4096, .max_retries = 0,
                       .retry_delay = -1, .timeout_ms = IMDS_TIMEOUT_MS,
                       .connect_timeout_ms = IMDS_TIMEOUT_MS};
    vt_err e = vt__engine_perform(&put, &resp);
    if (e == VT_OK && resp.status == 200) {
        token = clean_token((const char *)resp.body, resp.body_len);
        if (!token || strlen(token) > 200) {
            snprintf(err, sizeof(err), "EC2 instance metadata: %s gave no "
                     "usable token", url);
            goto out;
        }
    } else if (e == VT_ENETWORK || (e == VT_OK && resp.status == 403)) {
        snprintf(err, sizeof(err), "EC2 instance metadata: PUT %s: %s%s%s",
                 url, e ? vt_strerror(e) : "HTTP 403",
                 resp.error[0] ? ": " : "", resp.error);
        goto out;
    } else {
        CPLDebug("VSITUNE", "IMDSv2 token PUT failed (%s, HTTP %ld): trying "
                 "IMDSv1", vt_strerror(e), resp.status);
    }
    vt__http_resp_clear(&resp);

    snprintf(tokhdr, sizeof(tokhdr), "X-aws-ec2-metadata-token: %s",
             token ? token : "");
    const char *hdrs[] = {token ? tokhdr : NULL, NULL};
    snprintf(url, sizeof(url), "%s/latest/meta-data/iam/security-credentials/", base);
    if (fetch("EC2 instance metadata", "GET", url, hdrs, NULL, IMDS_TIMEOUT_MS,
              0, &resp, err, sizeof(err)))
        goto out;
    role = vt__imds_first_role((const char *)resp.body, resp.body_len);
    vt__http_resp_clear(&resp);
    if (!role) {
        snprintf(err, sizeof(err), "EC2 instance metadata: no IAM role attached");
        goto out;
    }
    snprintf(url, sizeof(url), "%s/latest/meta-data/iam/security-credentials/%s",
             base, role);
    if (fetch_creds("EC2 instance metadata", "GET", url, hdrs, NULL,
                    IMDS_TIMEOUT_MS, 0, vt__creds_parse_json, "imds", out, err,
                    sizeof(err)) == 0)
        rc = 1;
out:
    if (rc == 0)
        note(notes, nlen, "%s", err);
    vt__http_resp_clear(&resp);
    free(token);
    free(role);
    return rc;
}

/* ---- the chain -------------------------------------------------------- */

/* Run every provider after the environment, in order. No lock held. */
static vt_err run_chain(vt_creds *out, char *errbuf, size_t errlen)
{
    char notes[1024] = "";
    struct profile_hint hint = {0};
    vt_err err = VT_ECREDS;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = from_profile(out, &hint, notes, sizeof(notes), errbuf, errlen);
    if (rc)
        goto done;
    if (hint.role_arn && hint.unsupported && !hint.token_file) {
        put(errbuf, errlen, "AWS profile role_arn with %s is not supported by "
            "vsitune: use source_profile, web_identity_token_file or "
            "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY", hint.unsupported);
        rc = -1;
        goto done;
    }
    if (hint.role_arn && hint.source.access_key && !hint.token_file) {
        rc = from_assume_role(out, &hint, errbuf, errlen);
        goto done;
    }

    const char *role = opt("AWS_ROLE_ARN"), *tfile = opt("AWS_WEB_IDENTITY_TOKEN_FILE");
    const char *sname = opt("AWS_ROLE_SESSION_NAME");
    if (!role || !tfile) {
        role = hint.role_arn;
        tfile = hint.token_file;
        sname = hint.session_name;
    }
    if (role && tfile) {
        rc = from_web_identity(out, role, tfile, sname, errbuf, errlen);
        goto done;
    }
    note(notes, sizeof(notes), "no AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE");

    int refused = 0;
    char *curl = vt__container_url(opt("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"),
                                   opt("AWS_CONTAINER_CREDENTIALS_FULL_URI"),
                                   &refused);
    if (refused) {
        put(errbuf, errlen, "container credentials: AWS_CONTAINER_CREDENTIALS_"
            "FULL_URI must be https or http to a loopback/ECS/EKS address");
        rc = -1;
        goto done;
    }
    if (curl) {
        rc = from_container(out, curl, errbuf, errlen);
        free(curl);
        goto done;
    }
    note(notes, sizeof(notes), "no AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/FULL_URI");

    const char *dis = opt("AWS_EC2_METADATA_DISABLED");
    if (dis && CPLTestBool(dis)) {
        note(notes, sizeof(notes), "EC2 instance metadata disabled");
    } else {
        rc = from_imds(out, notes, sizeof(notes));
        if (rc)
            goto done;
    }
    put(errbuf, errlen, "no AWS credentials found: no AWS_ACCESS_KEY_ID + "
        "AWS_SECRET_ACCESS_KEY; %s (set AWS_NO_SIGN_REQUEST=YES for public "
        "buckets)", notes);
done:
    hint_clear(&hint);
    if (rc == 1)
        err = VT_OK;
    else
        vt__creds_clear(out);
    return err;
}

/* The options the cached credentials depend on, joined (malloc'd). */
static char *fingerprint(void)
{
    static const char *names[] = {
        "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_CONFIG_FILE", "HOME", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_SESSION_NAME", "AWS_STS_ENDPOINT", "CPL_AWS_STS_ROOT_URL",
        "AWS_STS_REGIONAL_ENDPOINTS", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
        "AWS_EC2_METADATA_SERVICE_ENDPOINT", "CPL_AWS_EC2_API_ROOT_URL",
        "AWS_EC2_METADATA_DISABLED", "CPL_AWS_AUTODETECT_EC2"};
    size_t n = 1;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = opt(names[i]);
        n += (v ? strlen(v) : 0) + 1;
    }
    char *fp = malloc(n), *p = fp;
    if (!fp)
        return NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = opt(names[i]);
        size_t l = v ? strlen(v) : 0;
        memcpy(p, v ? v : "", l);
        p[l] = '\x1f';
        p += l + 1;
    }
    *p = '\0';
    return fp;
}

vt_err vt__creds_get(vt_creds *out, char *errbuf, size_t errlen)
{
    vt_err err = VT_OK;
    char *fp = NULL;
    vt_creds fresh = {0};
    char cerr[1024] = "";

    memset(out, 0, sizeof(*out));
    if (errlen)
        errbuf[0] = '\0';
    const char *nosign = opt("AWS_NO_SIGN_REQUEST");
    if (nosign && CPLTestBool(nosign)) {
        out->anonymous = 1;
        out->source = "anonymous";
        return VT_OK;
    }
    int env = from_env(out);
    if (env)
        return env > 0 ? VT_OK : VT_ENOMEM;
    fp = fingerprint();
    if (!fp)
        return VT_ENOMEM;

    pthread_mutex_lock(&state.lock);
    for (;;) {
        time_t now = time(NULL);
        int same = state.have && !strcmp(state.fingerprint, fp);
        int usable = same && (state.cur.expiration == 0 ||
                              now < state.cur.expiration - EXPIRY_SLACK);
        int fresh_enough = usable && (state.cur.expiration == 0 ||
                                      now < state.cur.expiration - REFRESH_AHEAD ||
                                      now < state.next_try);
        if (fresh_enough || (usable && state.refreshing)) {
            err = creds_copy(out, &state.cur);
            pthread_mutex_unlock(&state.lock);
            goto out;
        }
        if (!usable && state.fail_fp && !strcmp(state.fail_fp, fp) &&
            now < state.fail_until) {
            err = VT_ECREDS;
            put(errbuf, errlen, "%s", state.fail_msg);
            pthread_mutex_unlock(&state.lock);
            goto out;
        }
        if (!state.refreshing)
            break;
        pthread_cond_wait(&state.cond, &state.lock); /* nothing usable yet */
    }
    state.refreshing = 1;
    unsigned gen = state.gen;
    pthread_mutex_unlock(&state.lock);

    vt_err cerr_code = run_chain(&fresh, cerr, sizeof(cerr)); /* no lock */

    pthread_mutex_lock(&state.lock);
    state.refreshing = 0;
    pthread_cond_broadcast(&state.cond);
    time_t now = time(NULL);
    if (gen == state.gen) {
        state.next_try = now + MIN_REFRESH_INTERVAL;
        if (cerr_code == VT_OK) {
            vt__creds_clear(&state.cur);
            state.cur = fresh;
            memset(&fresh, 0, sizeof(fresh));
            free(state.fingerprint);
            state.fingerprint = fp;
            fp = NULL;
            state.have = 1;
        }
    }
    int same = state.have && state.fingerprint && fp == NULL;
    if (cerr_code == VT_OK) {
        err = creds_copy(out, same ? &state.cur : &fresh);
    } else if (state.have && state.fingerprint && fp &&
               !strcmp(state.fingerprint, fp) &&
               (state.cur.expiration == 0 ||
                now < state.cur.expiration - EXPIRY_SLACK)) {
        /* The refresh failed but what we hold is still good: keep it. */
        CPLDebug("VSITUNE", "credentials refresh failed, keeping current "
                 "ones: %s", cerr);
        err = creds_copy(out, &state.cur);
    } else {
        err = VT_ECREDS;
        put(errbuf, errlen, "%s", cerr);
        if (gen == state.gen && fp) {
            free(state.fail_fp);
            state.fail_fp = strdup(fp);
            snprintf(state.fail_msg, sizeof(state.fail_msg), "%s", cerr);
            state.fail_until = now + FAIL_REMEMBER;
        }
    }
    if (cerr_code == VT_OK && gen == state.gen) {
        free(state.fail_fp);
        state.fail_fp = NULL;
    }
    pthread_mutex_unlock(&state.lock);
out:
    vt__creds_clear(&fresh);
    free(fp);
    return err;
}

void vt__creds_reset(void)
{
    pthread_mutex_lock(&state.lock);
    vt__creds_clear(&state.cur);
    free(state.fingerprint);
    state.fingerprint = NULL;
    state.have = 0;
    state.next_try = 0;
    free(state.fail_fp);
    state.fail_fp = NULL;
    state.gen++;
    pthread_mutex_unlock(&state.lock);
}
