/* config.c: option lookup, global or for one object path (see config.h). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>
#include <cpl_vsi.h>

#define PREFIX_CAP 32

/* Set once at registration, read by every lookup afterwards: a leaf lock
 * keeps a late vt__cfg_set_prefix (tests) from tearing a read. */
static pthread_mutex_t prefix_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_prefix[PREFIX_CAP] = "/vsis3/";

void vt__cfg_set_prefix(const char *prefix)
{
    if (!prefix || strlen(prefix) >= PREFIX_CAP)
        return;
    pthread_mutex_lock(&prefix_mu);
    snprintf(g_prefix, sizeof(g_prefix), "%s", prefix);
    pthread_mutex_unlock(&prefix_mu);
}

const char *vt__cfg_gdal_path(const char *path, char *buf, size_t len)
{
    int n;
    while (path && *path == '/')
        path++;
    pthread_mutex_lock(&prefix_mu);
    n = snprintf(buf, len, "%s%s", g_prefix, path ? path : "");
    pthread_mutex_unlock(&prefix_mu);
    return (n < 0 || (size_t)n >= len) ? NULL : buf;
}

/* The raw value, copied; NULL when unset. */
char *vt__cfg_dup_raw(const char *path, const char *name)
{
    const char *v;
    char stackbuf[1024], *full = NULL;
    const char *gp = NULL;
    char *out;

    if (path) {
        gp = vt__cfg_gdal_path(path, stackbuf, sizeof(stackbuf));
        if (!gp) { /* a long key: build it on the heap */
            size_t l = strlen(path) + PREFIX_CAP + 1;
            full = malloc(l);
            if (full)
                gp = vt__cfg_gdal_path(path, full, l);
        }
    }
    /* Copy before anything else runs on this thread: path-specific values
     * come back in a CPLSPrintf buffer. */
    v = gp ? VSIGetPathSpecificOption(gp, name, NULL)
           : CPLGetConfigOption(name, NULL);
    out = v ? strdup(v) : NULL;
    free(full);
    return out;
}

char *vt__cfg_dup(const char *path, const char *name)
{
    char *v = vt__cfg_dup_raw(path, name);
    if (v && *v == '\0') {
        free(v);
        v = NULL;
    }
    return v;
}

int vt__cfg_bool(const char *path, const char *name, int def)
{
    char *v = vt__cfg_dup(path, name);
    int r = def;
    if (v)
        r = CPLTestBool(v) ? 1 : 0;
    free(v);
    return r;
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

uint64_t vt__cfg_size(const char *path, const char *name, uint64_t def,
                      uint64_t min, uint64_t max)
{
    char *v = vt__cfg_dup(path, name);
    uint64_t n;

    if (v == NULL)
        return def;
    if (vt__parse_size(v, &n) != 0 || n < min || n > max) {
        CPLError(CE_Warning, CPLE_IllegalArg,
                 "vsitune: %s=%s is not a size in [%llu, %llu]; using %llu",
                 name, v, (unsigned long long)min, (unsigned long long)max,
                 (unsigned long long)def);
        n = def;
    }
    free(v);
    return n;
}

uint64_t vt__cfg_cache_budget(void)
{
    const uint64_t max = (uint64_t)1 << 40;
    char *v = vt__cfg_dup(NULL, "VSITUNE_CACHE_SIZE");
    const char *name = v ? "VSITUNE_CACHE_SIZE" : "CPL_VSIL_CURL_CACHE_SIZE";

    free(v);
    return vt__cfg_size(NULL, name, VT_DEFAULT_CACHE_SIZE, 0, max);
}
