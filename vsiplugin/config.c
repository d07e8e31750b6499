/* config.c: option lookup helpers (see config.h). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>

const char *vt__cfg_str(const char *name)
{
    return CPLGetConfigOption(name, NULL);
}

int vt__cfg_bool(const char *name, int def)
{
    const char *v = CPLGetConfigOption(name, NULL);
    if (v == NULL || *v == '\0')
        return def;
    return CPLTestBool(v) ? 1 : 0;
}

int vt__parse_size(const char *s, uint64_t *out)
{
    char *end = NULL;
    unsigned long long v;
    uint64_t mult = 1;

    *out = 0;
    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0)
        return -1;
    while (isspace((unsigned char)*end))
        end++;
    switch (toupper((unsigned char)*end)) {
    case '\0': break;
    case 'K': mult = 1024ULL; end++; break;
    case 'M': mult = 1024ULL * 1024; end++; break;
    case 'G': mult = 1024ULL * 1024 * 1024; end++; break;
    default: return -1;
    }
    if (mult > 1 && (*end == 'B' || *end == 'b'))
        end++;
    if (*end != '\0')
        return -1;
    if (v > UINT64_MAX / mult)
        return -1;
    *out = (uint64_t)v * mult;
    return 0;
}

uint64_t vt__cfg_size(const char *name, uint64_t def, uint64_t min,
                      uint64_t max)
{
    const char *v = CPLGetConfigOption(name, NULL);
    uint64_t n;

    if (v == NULL || *v == '\0')
        return def;
    if (vt__parse_size(v, &n) != 0 || n < min || n > max) {
        CPLError(CE_Warning, CPLE_IllegalArg,
                 "vsitune: %s=%s is not a size in [%llu, %llu]; using %llu",
                 name, v, (unsigned long long)min, (unsigned long long)max,
                 (unsigned long long)def);
        return def;
    }
    return n;
}
