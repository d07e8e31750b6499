/* kept.c: the ledger with the caller's kept values (kept.h). */
#include "kept.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "defaults.h"
#include "errbuf.h"
#include "sizeparse.h"
#include "wholenum.h"

/* "N" then an optional unit; *unit_mult = 0 when none was given. */
static int number_unit(const char *v, unsigned long long *n, uint64_t *mult)
{
    char *end;

    while (isspace((unsigned char)*v))
        v++;
    if (!isdigit((unsigned char)*v))
        return -1;
    errno = 0;
    *n = strtoull(v, &end, 10);
    if (errno)
        return -1;
    while (isspace((unsigned char)*end))
        end++;
    *mult = 0;
    if (!*end)
        return 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': *mult = 1024ULL; break;
    case 'M': *mult = 1024ULL * 1024; break;
    case 'G': *mult = 1024ULL * 1024 * 1024; break;
    case 'T': *mult = 1024ULL * 1024 * 1024 * 1024; break;
    case '%': *mult = 1; return end[1] ? -1 : 1; /* 1: a percentage */
    default: return -1;
    }
    end++;
    if (*end == 'i' || *end == 'I')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    return *end ? -1 : 0;
}

int vt_kept_cachemax_mib(const char *v, long tier_mb, long *mib)
{
    unsigned long long n;
    uint64_t mult;
    int r = number_unit(v, &n, &mult);

    if (r < 0)
        return -1;
    if (r == 1) {
        if (n > 100)
            return -1;
        *mib = (long)((double)tier_mb * (double)n / 100.0);
    } else if (mult) {
        *mib = (long)((double)n * (double)mult / (1024.0 * 1024.0));
    } else {
        *mib = n < 100000 ? (long)n : (long)(n / (1024ULL * 1024));
    }
    return 0;
}

int vt_kept_bytes(const char *v, uint64_t *bytes)
{
    return vt__parse_size(v, bytes) == 0 && *bytes <= VT_MAX_CACHE_SIZE ? 0 : -1;
}

/* A whole number of lo..hi, digits only (no sign); v may be NULL. */
static int whole(const char *v, long lo, long hi, long *out)
{
    return v && isdigit((unsigned char)*v) ? vt__parse_whole(v, lo, hi, out) : -1;
}

int vt_kept_check(const vt_sizing_in *in, const vt_sizing *s,
                  const char *(*get)(const char *name), char *warn, size_t warnlen)
{
    const char *range_var = in->plugin ? "VSITUNE_CACHE_SIZE" : "CPL_VSIL_CURL_CACHE_SIZE";
    long procs = s->processes, threads = s->threads, cache = s->cachemax_mb,
         range = s->range_cache_mb, v;
    uint64_t b;
    char kept[256] = "";
    size_t k = 0;
    const char *val;

#define KEPT(name, text) do { \
        if (k < sizeof kept) \
            k += (size_t)snprintf(kept + k, sizeof kept - k, "%s%s=%s", k ? ", " : "", \
                                  name, text); \
    } while (0)
    if ((val = get("GDAL_CACHEMAX")) && vt_kept_cachemax_mib(val, in->memory_mb, &v) == 0 &&
        v != s->cachemax_mb) {
        cache = v;
        KEPT("GDAL_CACHEMAX", val);
    }
    if ((val = get(range_var)) && vt_kept_bytes(val, &b) == 0 &&
        (long)(b / (1024 * 1024)) != s->range_cache_mb) {
        range = (long)(b / (1024 * 1024));
        KEPT(range_var, val);
    }
    if ((val = get("TUNERD_WORKERS")) && whole(val, 1, 1 << 20, &v) == 0 && v != procs) {
        procs = v;
        KEPT("TUNERD_WORKERS", val);
    }
    if ((val = get("TUNERD_THREADS")) && whole(val, 1, 1 << 20, &v) == 0 && v != threads) {
        threads = v;
        KEPT("TUNERD_THREADS", val);
    }
#undef KEPT
    if (!kept[0])
        return 0;
    long total = vt_sizing_ledger_total(in, (int)procs, (int)threads, cache, range);
    if (total <= s->total_mb)
        return 0;
    if (total > in->memory_mb) {
        vt__seterr(warn, warnlen, "kept %s breaks the ledger: %ld process(es) x (%d runtime + "
                   "%ld block cache + %ld range cache + arrays) + headroom = %ld MiB, more than "
                   "the %ld MiB tier (the plan: %d x %ld MiB block cache, %ld MiB): expect OOM "
                   "kills", kept, procs, VT_SIZE_RUNTIME_MB, cache, range, total,
                   in->memory_mb, s->processes, s->cachemax_mb, s->total_mb);
        return 2;
    }
    vt__seterr(warn, warnlen, "kept %s breaks the ledger: %ld process(es) x %ld MiB block cache "
               "where the plan has %d x %ld MiB; the ledger grows from %ld to %ld MiB and leaves "
               "%ld MiB of the %ld MiB tier for your data instead of %ld", kept, procs, cache,
               s->processes, s->cachemax_mb, s->total_mb, total, in->memory_mb - total,
               in->memory_mb, s->free_mb);
    return 1;
}
