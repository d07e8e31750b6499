/* az_list.c: Azure's List Blobs answers (az_int.h).
 *
 * Why: a listing GDAL 3.6 would read (VSIAzureFSHandler's ReadDir) must
 * come back as the same names, sizes, dates and folders; Azure answers in
 * its own XML (EnumerationResults), its own date format and with ETags
 * unquoted, unlike S3. Pure; bounded by the length given. */
#include "backends/az/az_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/xmlscan.h"

long long vt__az_parse_http_date(const char *s)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    char mon[4] = "";
    int d, y, h, mi, sec;
    struct tm tm;
    const char *m;

    if (!s || sscanf(s, "%*3s, %d %3s %d %d:%d:%d GMT", &d, mon, &y, &h, &mi,
                     &sec) != 6)
        return 0;
    m = strstr(months, mon);
    if (!m || strlen(mon) != 3 || (m - months) % 3)
        return 0;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = (int)((m - months) / 3);
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    return (long long)timegm(&tm);
}

/* One entry for the full name if it lies directly in dir. */
static vt_err add(vt_list_page *p, size_t *cap, const char *name,
                  const char *dir, int is_dir, uint64_t size, long long mtime,
                  const char *etag)
{
    size_t dl = strlen(dir), nl = strlen(name);
    vt_list_entry *e;

    if (nl < dl || strncmp(name, dir, dl) != 0)
        return VT_OK;
    if (nl == dl) {
        p->marker = dl > 0;
        return VT_OK;
    }
    name += dl;
    nl -= dl;
    if (is_dir && name[nl - 1] == '/')
        nl--;
    if (nl == 0 || memchr(name, '/', nl))
        return VT_OK;
    if (p->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        vt_list_entry *ne = realloc(p->e, nc * sizeof(*ne));
        if (!ne)
            return VT_ENOMEM;
        p->e = ne;
        *cap = nc;
    }
    e = &p->e[p->n];
    memset(e, 0, sizeof(*e));
    e->name = strndup(name, nl);
    if (etag && *etag) {
        size_t l = strlen(etag) + 3;
        e->etag = malloc(l);
        if (e->etag)
            snprintf(e->etag, l, etag[0] == '"' ? "%s" : "\"%s\"", etag);
    }
    if (!e->name) {
        free(e->etag);
        return VT_ENOMEM;
    }
    e->size = size;
    e->mtime = mtime;
    e->is_dir = is_dir;
    p->n++;
    return VT_OK;
}

/* The next "<Blob>" or "<BlobPrefix>" element at or after p. */
static const char *next_item(const char *p, const char *end, int *is_dir,
                             size_t *ilen, const char **next)
{
    const char *nb, *ib, *np, *ip;
    size_t lb = 0, lp = 0;

    ib = vt__xml_next(p, (size_t)(end - p), "Blob", &lb, &nb);
    ip = vt__xml_next(p, (size_t)(end - p), "BlobPrefix", &lp, &np);
    if (ib && (!ip || ib < ip)) {
        *is_dir = 0;
        *ilen = lb;
        *next = nb;
        return ib;
    }
    if (ip) {
        *is_dir = 1;
        *ilen = lp;
        *next = np;
    }
    return ip;
}

vt_err vt__az_parse_list(const char *body, size_t len, const char *dir,
                         vt_list_page *out)
{
    const char *p = body, *end = body + len, *in, *next;
    size_t ilen, cap = 0;
    int is_dir;
    char *marker;
    vt_err err = VT_OK;

    memset(out, 0, sizeof(*out));
    if (!body || !memmem(body, len, "<EnumerationResults", 19))
        return VT_EPROTO;
    marker = vt__xml_tag(body, len, "NextMarker");
    out->truncated = marker && *marker;
    free(marker);
    while (err == VT_OK &&
           (in = next_item(p, end, &is_dir, &ilen, &next)) != NULL) {
        char *name = vt__xml_tag(in, ilen, "Name");
        char *size = is_dir ? NULL : vt__xml_tag(in, ilen, "Content-Length");
        char *lm = is_dir ? NULL : vt__xml_tag(in, ilen, "Last-Modified");
        char *etag = is_dir ? NULL : vt__xml_tag(in, ilen, "Etag");
        if (name)
            err = add(out, &cap, name, dir, is_dir,
                      size ? strtoull(size, NULL, 10) : 0,
                      vt__az_parse_http_date(lm), etag);
        free(name);
        free(size);
        free(lm);
        free(etag);
        p = next;
    }
    if (err != VT_OK)
        vt__list_page_clear(out);
    return err;
}
