/* curl_opts.c: which of GDAL's HTTP options /vsicurl/ applies itself and
 * which it leaves to GDAL (backends/curl/README.md, "Options").
 *
 * Why a file of its own: curl_backend.c builds requests; what decides
 * whether a name can be read by vsitune at all (an auth scheme, a proxy
 * option, a netrc entry for the host) and the Authorization value GDAL's
 * options ask for are questions about GDAL's options, read as the running
 * GDAL reads them (config.h vt__cfg_http_path: hp below). No lock, no
 * state; the netrc file is read when there is one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backends/curl/curl_int.h"
#include "base/config.h"
#include "compat/gdal_release.h"

/* The Authorization value GDAL's options for hp (vt__cfg_http_path) ask
 * for, malloc'd, or NULL (none, or *unapplied names the option vsitune
 * cannot apply). */
char *vt__curl_auth_value(const char *hp, const char **unapplied)
{
    char *auth = vt__cfg_dup(hp, "GDAL_HTTP_AUTH");
    char *userpwd = vt__cfg_dup(hp, "GDAL_HTTP_USERPWD");
    char *bearer = NULL, *out = NULL;

    *unapplied = NULL;
    if (auth && !strcasecmp(auth, "BEARER") &&
        vt__gdal_release_running() >= 3090000) {
        bearer = vt__cfg_dup(hp, "GDAL_HTTP_BEARER");
        if (bearer) {
            size_t l = strlen(bearer) + 8;
            out = malloc(l);
            if (out)
                snprintf(out, l, "Bearer %s", bearer);
        }
    } else if (auth && strcasecmp(auth, "BASIC") &&
               strcasecmp(auth, "BEARER") && userpwd) {
        *unapplied = "GDAL_HTTP_AUTH"; /* NTLM, ANY, NEGOTIATE: curl's */
    } else if (userpwd) {
        out = vt__curl_basic_auth(userpwd);
    }
    free(auth);
    free(userpwd);
    free(bearer);
    return out;
}

/* The first GDAL option in force for hp that /vsicurl/ leaves to GDAL, or
 * NULL. */
const char *vt__curl_unapplied_option(const char *hp)
{
    static const char *const names[] = {
        "GDAL_HTTPS_PROXY", "GDAL_HTTP_PROXYUSERPWD", "GDAL_PROXY_AUTH",
        NULL};
    for (size_t i = 0; names[i]; i++) {
        char *v = vt__cfg_dup(hp, names[i]);
        free(v);
        if (v)
            return names[i];
    }
    return NULL;
}

#define NETRC_CAP (256 * 1024)

/* 1 when curl, with GDAL_HTTP_NETRC on (GDAL's default), would find
 * credentials for url's host in the netrc file (GDAL_HTTP_NETRC_FILE from
 * GDAL 3.7, else $HOME/.netrc) and send them: the engine does not read
 * netrc files, so such a name is left to GDAL. Reads the file (at most
 * NETRC_CAP bytes) when there is one. hp: vt__cfg_http_path's. */
int vt__curl_netrc_applies(const char *hp, const char *url)
{
    char *file = NULL, host[512], *text = NULL;
    const char *home, *s, *e;
    int found = 0;
    size_t n;
    FILE *fp = NULL;

    if (!vt__cfg_bool(hp, "GDAL_HTTP_NETRC", 1))
        return 0;
    if (vt__gdal_release_running() >= 3070000)
        file = vt__cfg_dup(hp, "GDAL_HTTP_NETRC_FILE");
    home = getenv("HOME");
    if (!file && home && asprintf(&file, "%s/.netrc", home) < 0)
        file = NULL;
    if (file)
        fp = fopen(file, "rb");
    s = strstr(url, "://");
    if (!fp || !s)
        goto out;
    s += 3;
    e = s + strcspn(s, "/?#");
    if (memchr(s, '@', (size_t)(e - s)))
        s = (const char *)memchr(s, '@', (size_t)(e - s)) + 1;
    n = (size_t)(e - s);
    if (n && *s == '[') /* [v6]:port: the brackets' content */
        n = strcspn(s, "]") > n ? n : strcspn(s, "]") + 1;
    else if (memchr(s, ':', n))
        n = (size_t)((const char *)memchr(s, ':', n) - s);
    if (!n || n >= sizeof host)
        goto out;
    snprintf(host, sizeof host, "%.*s", (int)n, s);
    text = malloc(NETRC_CAP);
    if (!text)
        goto out;
    n = fread(text, 1, NETRC_CAP, fp);
    found = vt__curl_netrc_has(text, n, host);
out:
    if (fp)
        fclose(fp);
    free(text);
    free(file);
    return found;
}
