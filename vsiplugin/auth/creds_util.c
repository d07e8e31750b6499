/* creds_util.c: helpers shared by the credentials modules (creds_int.h):
 * option access, message buffers, copies, bounded file reads and the one
 * HTTP helper every network provider uses (through vt__engine_perform). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>
#include <cpl_vsi.h>
#include <openssl/crypto.h>

#include "auth/creds_int.h"
#include "auth/creds_parse.h"
#include "base/xmlscan.h"

void vt__creds_put(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    if (!len)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* Append "; text" to a note buffer (what each provider said). */
void vt__creds_note(char *buf, size_t len, const char *fmt, ...)
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

/* Wipe the secrets, free the strings, zero *c (NULL: nothing). */
void vt__creds_clear(vt_creds *c)
{
    if (!c)
        return;
    if (c->secret_key)
        OPENSSL_cleanse(c->secret_key, strlen(c->secret_key));
    if (c->session_token)
        OPENSSL_cleanse(c->session_token, strlen(c->session_token));
    free(c->access_key);
    free(c->secret_key);
    free(c->session_token);
    memset(c, 0, sizeof(*c));
}

/* Deep copy (dst is overwritten, not cleared). VT_ENOMEM leaves dst empty. */
vt_err vt__creds_copy(vt_creds *dst, const vt_creds *src)
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

/* A path whose reads would go over the network through a GDAL virtual file
 * system: reading credentials from there would sign requests with the very
 * credentials being looked up (and recurse into vsitune). */
static int network_vsi(const char *path)
{
    static const char *const fs[] = {"/vsis3", "/vsicurl", "/vsigs",
                                     "/vsiaz", "/vsiadls", "/vsioss",
                                     "/vsiswift", "/vsiwebhdfs", "/vsihdfs",
                                     "/vsitune", NULL};
    for (int i = 0; fs[i]; i++)
        if (strstr(path, fs[i]))
            return 1;
    return 0;
}

/* Read a whole file through VSIFOpenL: malloc'd, NUL-terminated; NULL
 * with errno set when it cannot be read, is larger than cap (EFBIG) or
 * lives on a network file system (EPERM). The buffer grows with what is
 * read, so a small file costs a small buffer whatever the cap. */
char *vt__creds_read_file(const char *path, size_t cap, size_t *len)
{
    VSILFILE *f;
    char *buf = NULL;
    size_t n = 0, size = 0;
    int ok = 0;

    *len = 0;
    if (!path || !*path) {
        errno = ENOENT;
        return NULL;
    }
    if (network_vsi(path)) {
        errno = EPERM;
        return NULL;
    }
    f = VSIFOpenL(path, "rb");
    if (!f) {
        errno = ENOENT;
        return NULL;
    }
    for (;;) {
        if (n == size) {
            size_t want = size ? size * 2 : 64 * 1024;
            char *nb;
            if (size > cap) { /* cap + 1 bytes read */
                errno = EFBIG;
                goto out;
            }
            if (want > cap + 1)
                want = cap + 1;
            nb = realloc(buf, want + 1);
            if (!nb) {
                errno = ENOMEM;
                goto out;
            }
            buf = nb;
            size = want;
        }
        n += VSIFReadL(buf + n, 1, size - n, f);
        if (n < size) /* a short read: the end (or an error, as GDAL) */
            break;
    }
    buf[n] = '\0';
    *len = n;
    ok = 1;
out:
    if (!ok) {
        free(buf);
        buf = NULL;
    }
    VSIFCloseL(f);
    return buf;
}

/* A token read from a file or option: trimmed, no line breaks inside. */
char *vt__creds_clean_token(const char *s, size_t n)
{
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' ||
                 s[n - 1] == '\t'))
        n--;
    while (n && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) {
        s++;
        n--;
    }
    if (n == 0 || memchr(s, '\n', n) || memchr(s, '\r', n) ||
        memchr(s, '\0', n))
        return NULL;
    return strndup(s, n);
}

void vt__creds_free_secret(char *s)
{
    if (s) {
        OPENSSL_cleanse(s, strlen(s));
        free(s);
    }
}

/* ---- HTTP helper ------------------------------------------------------ */

/* One request through the engine; 0 on a 200, -1 otherwise with errbuf
 * naming what and why. resp must be cleared by the caller either way. */
int vt__creds_fetch(const char *what, const char *method, const char *url,
                    const char *const *headers, const char *body,
                    long timeout_ms, int retries, vt_http_resp *resp,
                    char *errbuf, size_t errlen)
{
    vt_http_req rq = {
        .method = method,
        .url = url,
        .headers = headers,
        .body = body,
        .body_len = body ? strlen(body) : 0,
        .max_body = 256 * 1024,
        .max_retries = retries,
        .retry_delay = -1,
        .timeout_ms = timeout_ms,
        .connect_timeout_ms = timeout_ms,
    };
    vt_err err = vt__engine_perform(&rq, resp);
    if (err) {
        vt__creds_put(errbuf, errlen, "%s: %s %s: %s%s%s", what, method, url,
                      vt_strerror(err), resp->error[0] ? ": " : "",
                      resp->error);
        return -1;
    }
    if (resp->status != 200) {
        char *code = NULL, *msg = NULL;
        if (resp->body) {
            code =
                vt__xml_tag((const char *)resp->body, resp->body_len, "Code");
            msg = vt__xml_tag((const char *)resp->body, resp->body_len,
                              "Message");
            if (!code)
                code = vt__json_get_string((const char *)resp->body,
                                           resp->body_len, "code");
            if (!msg)
                msg = vt__json_get_string((const char *)resp->body,
                                          resp->body_len, "message");
        }
        vt__creds_put(errbuf, errlen, "%s: %s %s: HTTP %ld%s%s%s%s", what,
                      method, url, resp->status, code ? " " : "",
                      code ? code : "", msg ? ": " : "", msg ? msg : "");
        free(code);
        free(msg);
        return -1;
    }
    return 0;
}

/* vt__creds_fetch(), then parse a 200 body into *out (source set). 0 on
 * success, -1 with errbuf saying what failed. */
int vt__creds_fetch_creds(const char *what, const char *method, const char *url,
                          const char *const *headers, const char *body,
                          long timeout_ms, int retries, creds_parser parse,
                          const char *source, vt_creds *out, char *errbuf,
                          size_t errlen)
{
    vt_http_resp resp;
    int rc = -1;
    memset(&resp, 0, sizeof(resp));
    if (vt__creds_fetch(what, method, url, headers, body, timeout_ms, retries,
                        &resp, errbuf, errlen))
        goto out;
    if (parse((const char *)resp.body, resp.body_len, out)) {
        vt__creds_put(errbuf, errlen,
                      "%s: %s answered without usable credentials "
                      "(AccessKeyId, SecretAccessKey, Expiration)",
                      what, url);
        goto out;
    }
    out->source = source;
    rc = 0;
out:
    vt__http_resp_clear(&resp);
    return rc;
}
