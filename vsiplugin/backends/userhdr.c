/* userhdr.c: the user's extra HTTP headers (GDAL_HTTP_HEADER_FILE,
 * GDAL_HTTP_HEADERS), sent on vsitune's requests as GDAL 3.6 sends them on
 * its own (CPLHTTPSetOptions in cpl_http.cpp, measured on 3.6.2): the file's
 * lines first, then the option's, split at "\r\n" when it has one, else at
 * ',' outside double quotes. Read as the running GDAL reads them
 * (config.h vt__cfg_http_path): 3.6 from the configuration only (measured:
 * a per-bucket value is not sent), 3.7 and later for the request's path
 * first. Every backend's (userhdr.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_vsi.h>

#include "backends/userhdr.h"
#include "base/config.h"

#define MAX_USER_HEADERS 64
#define MAX_HEADER_LEN 8192
#define MAX_HEADER_FILE (256 * 1024)

void vt__user_headers_free(char **h)
{
    if (!h)
        return;
    for (char **p = h; *p; p++)
        free(*p);
    free(h);
}

/* Append [s, e) trimmed when it looks like "Name: value" (a ':' after a
 * non-empty name, no control characters). Lines that are not headers are
 * dropped: curl would send them raw. Returns -1 on OOM. */
static int add_line(char ***list, size_t *n, const char *s, const char *e)
{
    while (s < e && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n'))
        s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' ||
                     e[-1] == '\n'))
        e--;
    const char *colon = memchr(s, ':', (size_t)(e - s));
    if (!colon || colon == s || (size_t)(e - s) > MAX_HEADER_LEN ||
        *n >= MAX_USER_HEADERS)
        return 0;
    for (const char *p = s; p < e; p++)
        if ((unsigned char)*p < 0x20 && *p != '\t')
            return 0;
    for (const char *p = s; p < colon; p++)
        if (*p == ' ' || *p == '\t')
            return 0;
    if (!*list) {
        *list = calloc(MAX_USER_HEADERS + 1, sizeof(char *));
        if (!*list)
            return -1;
    }
    char *line = strndup(s, (size_t)(e - s));
    if (!line)
        return -1;
    (*list)[(*n)++] = line;
    return 0;
}

/* A header file on a network file system would be fetched with a request
 * that itself needs the headers (and could recurse into vsitune): refused,
 * as GDAL refuses the network /vsi paths for it. */
static int refused_header_file(const char *f)
{
    static const char *const fs[] = {"/vsis3", "/vsicurl", "/vsigs",
                                     "/vsiaz", "/vsiadls", "/vsioss",
                                     "/vsiswift", "/vsiwebhdfs", "/vsitune",
                                     NULL};
    for (int i = 0; fs[i]; i++)
        if (strstr(f, fs[i]))
            return 1;
    return 0;
}

static int from_file(const char *file, char ***list, size_t *n)
{
    VSILFILE *fp = refused_header_file(file) ? NULL : VSIFOpenL(file, "rb");
    char *buf;
    size_t len;
    int rc = 0;

    if (!fp) {
        CPLError(CE_Failure, CPLE_FileIO, "Cannot read %s", file);
        return 0;
    }
    buf = malloc(MAX_HEADER_FILE + 1);
    if (!buf) {
        VSIFCloseL(fp);
        return -1;
    }
    len = VSIFReadL(buf, 1, MAX_HEADER_FILE, fp);
    VSIFCloseL(fp);
    buf[len] = '\0';
    for (const char *p = buf; p < buf + len && rc == 0;) {
        const char *nl = memchr(p, '\n', (size_t)(buf + len - p));
        const char *e = nl ? nl : buf + len;
        rc = add_line(list, n, p, e);
        p = nl ? nl + 1 : buf + len;
    }
    free(buf);
    return rc;
}

/* GDAL_HTTP_HEADERS: split at "\r\n" when it has one, else at ',' outside
 * double quotes, the quotes removed and \" \\ unescaped inside them (GDAL's
 * CSLTokenizeString2 with CSLT_HONOURSTRINGS), so "X-A: b, c" stays one. */
static int from_option(const char *v, char ***list, size_t *n)
{
    int crlf = strstr(v, "\r\n") != NULL;
    size_t cap = strlen(v) + 1;
    char *tok = malloc(cap);
    const char *p = v;
    int rc = 0;

    if (!tok)
        return -1;
    while (*p && rc == 0) {
        size_t t = 0;
        if (crlf) {
            const char *e = strstr(p, "\r\n");
            if (!e)
                e = p + strlen(p);
            memcpy(tok, p, (size_t)(e - p));
            t = (size_t)(e - p);
            p = *e ? e + 2 : e;
        } else {
            int quoted = 0;
            for (; *p && (quoted || *p != ','); p++) {
                if (*p == '"') {
                    quoted = !quoted;
                } else if (quoted && *p == '\\' && (p[1] == '"' || p[1] == '\\')) {
                    tok[t++] = *++p;
                } else {
                    tok[t++] = *p;
                }
            }
            if (*p == ',')
                p++;
        }
        rc = add_line(list, n, tok, tok + t);
    }
    free(tok);
    return rc;
}

char **vt__user_headers(const char *path)
{
    char **list = NULL;
    size_t n = 0;
    const char *hp = vt__cfg_http_path(path);
    char *file = vt__cfg_dup(hp, "GDAL_HTTP_HEADER_FILE");
    char *opt = vt__cfg_dup(hp, "GDAL_HTTP_HEADERS");
    int rc = 0;

    if (file)
        rc = from_file(file, &list, &n);
    if (rc == 0 && opt)
        rc = from_option(opt, &list, &n);
    free(file);
    free(opt);
    if (rc) {
        vt__user_headers_free(list);
        list = NULL;
    }
    return list;
}
