/* policy.c: extension and sibling policy (see policy.h). Pure. */
#include "policy.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

static int suffix_match(const char *name, size_t nlen, const char *ext,
                        size_t elen)
{
    return elen > 0 && elen <= nlen &&
           strncasecmp(name + nlen - elen, ext, elen) == 0;
}

int vt__policy_ext_in(const char *name, const char *list)
{
    const char *base, *p;
    size_t nlen;

    if (list == NULL || *list == '\0')
        return 1;
    base = strrchr(name, '/');
    base = base ? base + 1 : name;
    nlen = strlen(name);
    p = list;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t elen = comma ? (size_t)(comma - p) : strlen(p);
        while (elen > 0 && (*p == ' ')) {
            p++;
            elen--;
        }
        while (elen > 0 && p[elen - 1] == ' ')
            elen--;
        if (elen == 7 && strncasecmp(p, "{noext}", 7) == 0) {
            if (strchr(base, '.') == NULL)
                return 1;
        } else if (suffix_match(name, nlen, p, elen)) {
            return 1;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    return 0;
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
