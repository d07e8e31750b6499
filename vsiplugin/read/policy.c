/* policy.c: names, options and header bytes (see policy.h). Pure. */
#include "read/policy.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

int vt__policy_allowed_name(const char *name, const char *allowed_filename,
                            const char *allowed_exts)
{
    const char *q, *p, *last_slash;
    size_t nlen;

    if (allowed_filename)
        return strcmp(name, allowed_filename) == 0;
    if (!allowed_exts)
        return 1;
    q = strchr(name, '?');
    nlen = q ? (size_t)(q - name) : strlen(name);
    last_slash = NULL;
    for (p = name; p < name + nlen; p++)
        if (*p == '/')
            last_slash = p;
    for (p = allowed_exts; *p;) {
        size_t elen;
        while (*p == ',' || *p == ' ')
            p++;
        elen = strcspn(p, ", ");
        if (elen == 0)
            break;
        if (elen == 7 && strncasecmp(p, "{noext}", 7) == 0) {
            if (last_slash &&
                !memchr(last_slash, '.', (size_t)(name + nlen - last_slash)))
                return 1;
        } else if (nlen > elen &&
                   strncasecmp(name + nlen - elen, p, elen) == 0) {
            return 1;
        }
        p += elen;
    }
    return 0;
}

/* The value of KEY= in the structural metadata text [s, end), or NULL. */
static const char *ghost_value(const char *s, const char *end, const char *key,
                               size_t *vlen)
{
    size_t klen = strlen(key);
    const char *p = s;
    while (p + klen < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = eol ? eol : end;
        if ((size_t)(line_end - p) > klen && strncmp(p, key, klen) == 0 &&
            p[klen] == '=') {
            *vlen = (size_t)(line_end - p - klen - 1);
            return p + klen + 1;
        }
        if (!eol)
            break;
        p = eol + 1;
    }
    return NULL;
}

static int ghost_is(const char *s, const char *end, const char *key,
                    const char *value)
{
    size_t vlen = 0;
    const char *v = ghost_value(s, end, key, &vlen);
    return v && vlen == strlen(value) && strncmp(v, value, vlen) == 0;
}

int vt__policy_is_cog(const unsigned char *buf, size_t n)
{
    static const char tag[] = "GDAL_STRUCTURAL_METADATA_SIZE=";
    size_t off, tl = sizeof(tag) - 1, size = 0, i;
    const char *meta, *end;

    if (n < 8)
        return 0;
    if (!memcmp(buf, "II*\0", 4) || !memcmp(buf, "MM\0*", 4))
        off = 8;
    else if (!memcmp(buf, "II+\0", 4) || !memcmp(buf, "MM\0+", 4))
        off = 16;
    else
        return 0;
    if (n < off + tl + 6 || memcmp(buf + off, tag, tl) != 0)
        return 0;
    for (i = off + tl; i < off + tl + 6; i++) {
        if (buf[i] < '0' || buf[i] > '9')
            return 0;
        size = size * 10 + (size_t)(buf[i] - '0');
    }
    meta = memchr(buf + off, '\n', n - off);
    if (!meta)
        return 0;
    meta++;
    end = meta + size;
    if (end > (const char *)buf + n)
        end = (const char *)buf + n;
    return ghost_is(meta, end, "LAYOUT", "IFDS_BEFORE_DATA") &&
           ghost_is(meta, end, "BLOCK_ORDER", "ROW_MAJOR") &&
           ghost_is(meta, end, "BLOCK_LEADER", "SIZE_AS_UINT4") &&
           ghost_is(meta, end, "BLOCK_TRAILER", "LAST_4_BYTES_REPEATED") &&
           !ghost_is(meta, end, "KNOWN_INCOMPATIBLE_EDITION", "YES");
}

int vt__policy_is_dir_like(const char *path)
{
    size_t n = strlen(path);
    if (n == 0 || path[n - 1] == '/')
        return 1;
    return strchr(path, '/') == NULL; /* bucket only */
}

int vt__policy_gdal_supported(int runtime, int built_major, int built_minor)
{
    int major = runtime / 1000000, minor = (runtime / 10000) % 100;
    return runtime >= 3060000 && major == built_major && minor == built_minor;
}

/* 1 when an item of list (separated by sep) is name. */
static int list_names(const char *list, char sep, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, sep);
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncasecmp(p, name, n) == 0)
            return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

int vt__policy_skipped(const char *gdal_skip, const char *ogr_skip,
                       const char *name)
{
    char sep = (gdal_skip && strchr(gdal_skip, ',')) ? ',' : ' ';
    return list_names(gdal_skip, sep, name) ||
           list_names(ogr_skip, ',', name);
}
