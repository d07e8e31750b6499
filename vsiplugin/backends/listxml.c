/* listxml.c: ListBucketResult answers (see listxml.h), S3's and GCS's.
 * Input is from the network: every scan is bounded by the length given. */
#include "backends/listxml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth/creds_parse.h"
#include "base/xmlscan.h"

static long long iso_time(const char *s)
{
    time_t t;
    return s && vt__parse_iso8601(s, &t) == 0 ? (long long)t : 0;
}

/* Append an entry for full key/prefix `key` if it lies directly in dir. */
static vt_err add_entry(vt_list_page *p, size_t *cap, const char *key,
                        const char *dir, int is_dir, uint64_t size,
                        long long mtime, const char *etag)
{
    size_t dl = strlen(dir), kl = strlen(key);
    const char *rel;
    char *name;
    if (kl < dl || strncmp(key, dir, dl) != 0)
        return VT_OK;
    if (kl == dl) {
        p->marker = dl > 0;
        return VT_OK;
    }
    rel = key + dl;
    kl -= dl;
    if (is_dir && rel[kl - 1] == '/')
        kl--;
    if (kl == 0 || memchr(rel, '/', kl))
        return VT_OK; /* the folder marker itself, or deeper */
    if (p->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        vt_list_entry *ne = realloc(p->e, nc * sizeof(*ne));
        if (!ne)
            return VT_ENOMEM;
        p->e = ne;
        *cap = nc;
    }
    name = malloc(kl + 1);
    if (!name)
        return VT_ENOMEM;
    memcpy(name, rel, kl);
    name[kl] = '\0';
    p->e[p->n].name = name;
    p->e[p->n].size = size;
    p->e[p->n].mtime = mtime;
    p->e[p->n].etag = etag ? strdup(etag) : NULL;
    p->e[p->n].is_dir = is_dir;
    p->n++;
    return VT_OK;
}

vt_err vt__listxml_parse(const char *body, size_t len, const char *dir,
                         vt_list_page *out)
{
    const char *p = body, *end = body + len, *in, *next;
    size_t ilen, cap = 0;
    char *trunc;
    vt_err err = VT_OK;

    memset(out, 0, sizeof(*out));
    if (!body || !memmem(body, len, "<ListBucketResult", 17))
        return VT_EPROTO;
    trunc = vt__xml_tag(body, len, "IsTruncated");
    out->truncated = trunc && strcmp(trunc, "true") == 0;
    free(trunc);
    while (err == VT_OK &&
           (in = vt__xml_next(p, (size_t)(end - p), "Contents", &ilen, &next))) {
        char *key = vt__xml_tag(in, ilen, "Key");
        char *size = vt__xml_tag(in, ilen, "Size");
        char *lm = vt__xml_tag(in, ilen, "LastModified");
        char *etag = vt__xml_tag(in, ilen, "ETag");
        if (key)
            err = add_entry(out, &cap, key, dir, 0,
                            size ? strtoull(size, NULL, 10) : 0,
                            iso_time(lm), etag);
        free(key);
        free(size);
        free(lm);
        free(etag);
        p = next;
    }
    p = body;
    while (err == VT_OK && (in = vt__xml_next(p, (size_t)(end - p),
                                              "CommonPrefixes", &ilen, &next))) {
        char *prefix = vt__xml_tag(in, ilen, "Prefix");
        if (prefix)
            err = add_entry(out, &cap, prefix, dir, 1, 0, 0, NULL);
        free(prefix);
        p = next;
    }
    if (err != VT_OK)
        vt__list_page_clear(out);
    return err;
}
