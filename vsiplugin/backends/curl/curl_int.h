/* curl_int.h: what the /vsicurl/ backend's modules share (curl_*.c only).
 *
 * curl_url.c reads a /vsicurl/ name (a URL, or GDAL's "?url=...&opt=..."
 * syntax) into a target, says where it lives and how it may be written in a
 * log line; curl_redirect.c remembers where S3-like signed redirects led
 * (GDAL's CPL_VSIL_CURL_USE_S3_REDIRECT); curl_backend.c builds and sends
 * the requests and is the vt_backend table. The first two are pure apart
 * from curl_redirect.c's one locked table. */
#ifndef VT_CURL_INT_H
#define VT_CURL_INT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/error.h"
#include "http/engine.h"

/* What a /vsicurl/ name asks for: the URL and the options GDAL 3.6's
 * VSICurlGetURLFromFilename takes from the "?url=...&..." syntax (unset:
 * -1, NULL). Strings malloc'd; vt__curl_target_clear frees them. */
struct vt_curl_target {
    const char *name;       /* the name parsed (borrowed from the caller:
                               lives as long as its argument): the path
                               GDAL's HTTP options are looked up for */
    char *url;              /* the URL, query included, as it is sent */
    int max_retry;          /* max_retry=N, else -1 (GDAL_HTTP_MAX_RETRY) */
    double retry_delay;     /* retry_delay=S, else -1 */
    int use_head;           /* use_head=BOOL, else -1 (CPL_VSIL_CURL_USE_HEAD) */
    long timeout_ms;        /* timeout=S, else 0 */
    long connect_timeout_ms;/* connecttimeout=S, else 0 */
    char *useragent;        /* useragent=... */
    char *referer;          /* referer=... */
    char *cookie;           /* cookie=... */
    /* The first option GDAL hands to CPLHTTPSetOptions that vsitune's
     * engine cannot apply per request yet (header_file, unsafessl,
     * low_speed_time, low_speed_limit, proxy, proxyauth, proxyuserpwd),
     * or NULL: such a name is left to GDAL. */
    char *unapplied;
    /* Option names GDAL 3.6 does not know, ','-joined (it warns
     * "Unsupported option: %s" for each), or NULL. */
    char *unknown;
};

/* Read the name path (what follows "/vsicurl/" or "/vsicurl?") as GDAL
 * 3.6 does: "http://..." / "https://..." is the URL itself; anything else
 * is '&'-separated options, each URL-unescaped ('%XX', '+' as a space),
 * "name=value" or "name:value", names case-insensitive. VT_EINVAL with
 * errbuf for a name without a URL ("Missing url parameter", GDAL's words)
 * or a scheme other than http/https (ftp://, file:// stay GDAL's). t is
 * always initialised. Pure. */
vt_err vt__curl_parse_path(const char *path, struct vt_curl_target *t,
                           char *errbuf, size_t errlen);
void vt__curl_target_clear(struct vt_curl_target *t);

/* "scheme://host[:port]" of url (scheme and host lowercased, user info
 * dropped), malloc'd; NULL when url is not http(s) with a host. Pure. */
char *vt__curl_origin(const char *url);

/* Where a redirect's Location leads from base: an absolute http(s) URL as
 * it is, "//host/p" with base's scheme, "/p" on base's origin, anything
 * else beside base's last path segment. malloc'd; NULL for an empty or
 * unusable Location (another scheme, a line break). Pure. */
char *vt__curl_resolve(const char *base, const char *location);

/* "Basic <base64 of userpwd>" (GDAL_HTTP_USERPWD as curl's default
 * scheme sends it), malloc'd; NULL when out of memory. Pure. */
char *vt__curl_basic_auth(const char *userpwd);

/* url as it may appear in a log line or a description: user info dropped,
 * every query value and the fragment replaced with "***" ("?X-Amz-
 * Signature=***&token=***"). Never longer than url + 4 per parameter; cut
 * at len. Pure. */
void vt__curl_redact(const char *url, char *out, size_t len);

/* GDAL 3.6's test for a server that ignored Range: an answer 200 without
 * Content-Range to a GET of [off, off+len) (len > 0) starting past 0, or
 * whose whole body (r->total_size, the 200's Content-Length) is more than
 * ten times the range. 1 then (stock fails the read: "Range downloading
 * not supported by this server!"), else 0. Pure. */
int vt__curl_range_ignored(uint64_t off, uint64_t len, const vt_http_resp *r);

/* 1 when a .netrc text (len bytes) gives credentials for host (its
 * "machine HOST" entry, host compared case-insensitively, or a "default"
 * entry), as curl would use them with GDAL_HTTP_NETRC on (GDAL's
 * default). Tokens are separated by blanks and newlines; "#" starts a
 * comment line; a macdef's body (up to an empty line) is skipped. Pure. */
int vt__curl_netrc_has(const char *text, size_t len, const char *host);

/* ---- GDAL's options (curl_opts.c) ------------------------------------- */

/* The Authorization value GDAL's options for hp (vt__cfg_http_path) ask
 * for, malloc'd, or NULL: none, or *unapplied names the option vsitune
 * cannot apply (GDAL_HTTP_AUTH=NTLM|ANY|NEGOTIATE with a USERPWD). */
char *vt__curl_auth_value(const char *hp, const char **unapplied);

/* The first GDAL option in force for hp that /vsicurl/ leaves to GDAL
 * (GDAL_HTTPS_PROXY, GDAL_HTTP_PROXYUSERPWD, GDAL_PROXY_AUTH), or NULL. */
const char *vt__curl_unapplied_option(const char *hp);

/* 1 when curl, with GDAL_HTTP_NETRC on (GDAL's default), would find
 * credentials for url's host in the netrc file (GDAL_HTTP_NETRC_FILE from
 * GDAL 3.7, else $HOME/.netrc): such a name is left to GDAL. */
int vt__curl_netrc_applies(const char *hp, const char *url);

/* ---- redirects (curl_redirect.c) ------------------------------------- */

/* 1 when url is signed the way GDAL 3.6 recognises an S3-like signed URL
 * (VSICurlIsS3LikeSignedURL): an X-Amz-Signature parameter, or Signature
 * on an amazonaws.com / storage.googleapis.com / cloudfront.net host. */
int vt__curl_is_s3_signed(const char *url);

/* When url expires, as Unix time, by its query (GDAL 3.6's rule): Expires=
 * (a time), else X-Amz-Date + X-Amz-Expires; 0 when it does not say. */
long long vt__curl_url_expires(const char *url);

/* A GET of url answered 2xx after being redirected to target, the server's
 * Date being server_date (Unix time, 0: none) and the local clock now.
 * Remembered (for target's remaining validity, in local time) when GDAL
 * 3.6 would: target S3-like signed and url not, a Date, a validity of more
 * than 10 s, and CPL_VSIL_CURL_USE_S3_REDIRECT not off (the caller reads
 * it: use). Returns 1 when remembered. Thread-safe (one bounded table). */
int vt__curl_redirect_note(const char *url, const char *target,
                           long long server_date, time_t now, int use);

/* Where a GET of url goes now: a remembered target with more than 1 s
 * left (malloc'd), else NULL; *expired 1 when one was remembered and has
 * expired (forgotten now: GDAL's "Redirect URL has expired"). */
char *vt__curl_redirect_lookup(const char *url, time_t now, int *expired);

/* Forget the targets of URLs starting with prefix (NULL or "": all). */
void vt__curl_redirect_forget(const char *prefix);

#endif
