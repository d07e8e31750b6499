/* config.c: option lookup, global or for one object path; the strict
 * parsers and checks of the options in options.c's table; the CA-bundle
 * choice under the
 * running GDAL release's rule (gdal_release.h) (see config.h). */
#include "base/config.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>
#include <cpl_vsi.h>

#include "base/hash.h"
#include "compat/gdal_release.h"

#define PREFIX_CAP 32

/* Set once at registration, read by every lookup afterwards: a leaf lock
 * keeps a late vt__cfg_set_prefix (tests) from tearing a read. */
static pthread_mutex_t prefix_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_prefix[PREFIX_CAP] = "/vsis3/";
/* The prefix of the handler this thread is serving a call of, or NULL:
 * the process one (vt__cfg_scope_prefix). */
static _Thread_local const char *t_prefix;

const char *vt__cfg_scope_prefix(const char *prefix)
{
    const char *was = t_prefix;
    t_prefix = prefix;
    return was;
}

void vt__cfg_set_prefix(const char *prefix)
{
    if (!prefix || strlen(prefix) >= PREFIX_CAP)
        return;
    pthread_mutex_lock(&prefix_mu);
    snprintf(g_prefix, sizeof(g_prefix), "%s", prefix);
    pthread_mutex_unlock(&prefix_mu);
}

/* a + b into buf (len bytes, terminated), or NULL when it does not fit.
 * Not snprintf: every option lookup of every request builds a path, and
 * snprintf's format machinery was 1% of the opening thread's CPU (perf). */
static const char *join(const char *a, const char *b, char *buf, size_t len)
{
    size_t al = strlen(a), bl = strlen(b);
    if (al + bl >= len)
        return NULL;
    memcpy(buf, a, al);
    memcpy(buf + al, b, bl + 1);
    return buf;
}

const char *vt__cfg_gdal_path(const char *path, char *buf, size_t len)
{
    const char *out;
    while (path && *path == '/')
        path++;
    if (t_prefix)
        return join(t_prefix, path ? path : "", buf, len);
    pthread_mutex_lock(&prefix_mu);
    out = join(g_prefix, path ? path : "", buf, len);
    pthread_mutex_unlock(&prefix_mu);
    return out;
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

/* ---- numbers ----------------------------------------------------------- */

int vt__parse_num(const char *s, double *out)
{
    const char *p = s, *start, *end;
    char *conv = NULL;
    int digits = 0, nonzero = 0;
    double d;

    *out = 0;
    while (isspace((unsigned char)*p))
        p++;
    start = p;
    if (*p == '+' || *p == '-')
        p++;
    for (; isdigit((unsigned char)*p); p++, digits++)
        nonzero |= *p != '0';
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p); p++, digits++)
            nonzero |= *p != '0';
    if (digits == 0)
        return -1;
    if (*p == 'e' || *p == 'E') {
        const char *q = p + 1;
        if (*q == '+' || *q == '-')
            q++;
        if (!isdigit((unsigned char)*q))
            return -1;
        while (isdigit((unsigned char)*q))
            q++;
        p = q;
    }
    end = p;
    while (isspace((unsigned char)*p))
        p++;
    if (*p != '\0')
        return -1;
    /* The grammar is checked; CPLStrtod converts whatever the locale. */
    d = CPLStrtod(start, &conv);
    if (conv != end || !isfinite(d) || (nonzero && fabs(d) < DBL_MIN))
        return -1; /* overflow, or an underflow to 0 or a subnormal */
    *out = d;
    return 0;
}

/* The last bad value warned about, per option, as a hash: a bad value is
 * said once, not on every request that reads it. Lock-free (callers may
 * hold their own lock, e.g. object.c's table lock around the cache budget);
 * two threads meeting a new value at once may both say it. */
static _Atomic uint64_t g_warned[VT_OPT_COUNT];

static int first_warning(enum vt_opt id, const char *v)
{
    uint64_t h = vt__fnv1a_id(v, strlen(v)); /* 0 is "nothing said yet" */
    return atomic_exchange(&g_warned[id], h) != h;
}

/* The value of row id for path within [min, row's max], or the row's
 * default with a warning; *v_out NULL when unset. */
static double opt_get(const char *path, enum vt_opt id, double min)
{
    const struct vt_opt_def *d = &vt__opts[id];
    char *v = vt__cfg_dup(d->per_path ? path : NULL, d->name);
    double x = d->def;
    uint64_t n;
    int ok;

    if (v == NULL)
        return d->def;
    if (d->kind == VT_OPT_SIZE) {
        ok = vt__parse_size(v, &n) == 0 && (double)n >= min &&
             (double)n <= d->max;
        x = (double)n;
    } else {
        ok = vt__parse_num(v, &x) == 0 && x >= min && x <= d->max;
    }
    if (!ok) {
        x = d->def;
        if (first_warning(id, v)) {
            if (d->kind == VT_OPT_SIZE)
                CPLError(CE_Warning, CPLE_IllegalArg,
                         "vsitune: %s=%s is not a size in [%.0f, %.0f]; "
                         "using %.0f", d->name, v, min, d->max, d->def);
            else
                CPLError(CE_Warning, CPLE_IllegalArg,
                         "vsitune: %s=%s is not a number in [%g, %g]; "
                         "using %g", d->name, v, min, d->max, d->def);
        }
    }
    free(v);
    return x;
}

uint64_t vt__opt_size(const char *path, enum vt_opt id)
{
    return (uint64_t)opt_get(path, id, vt__opts[id].min);
}

uint64_t vt__opt_size_min(const char *path, enum vt_opt id, uint64_t min)
{
    double lo = vt__opts[id].min;

    return (uint64_t)opt_get(path, id, (double)min > lo ? (double)min : lo);
}

double vt__opt_num(const char *path, enum vt_opt id)
{
    return opt_get(path, id, vt__opts[id].min);
}

/* ---- booleans and enums ---------------------------------------------- */

/* 1 for YES/TRUE/ON/1, 0 for NO/FALSE/OFF/0 (any case), -1 otherwise. */
static int bool_word(const char *v)
{
    static const char *const words[2][4] = {{"NO", "FALSE", "OFF", "0"},
                                            {"YES", "TRUE", "ON", "1"}};

    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 4; i++)
            if (EQUAL(v, words[b][i]))
                return b;
    return -1;
}

/* The index of v in values (any case), -1 when it is not there. */
static int value_index(const char *const *values, const char *v)
{
    for (int i = 0; values[i]; i++)
        if (EQUAL(v, values[i]))
            return i;
    return -1;
}

int vt__opt_choice(const char *path, enum vt_opt id, int *set)
{
    const struct vt_opt_def *d = &vt__opts[id];
    static const char *const bool_values[] = {"NO", "YES", NULL};
    const char *const *values = d->kind == VT_OPT_ENUM ? d->values
                                                       : bool_values;
    char *v = vt__cfg_dup(d->per_path ? path : NULL, d->name);
    int r, b, yes_no;

    if (set)
        *set = v != NULL;
    if (v == NULL)
        return (int)d->def;
    /* A boolean is the enum NO, YES; an enum with both takes the words. */
    yes_no = value_index(values, "YES") >= 0 && value_index(values, "NO") >= 0;
    r = value_index(values, v);
    b = bool_word(v);
    if (r < 0 && yes_no && b >= 0)
        r = value_index(values, b ? "YES" : "NO");
    if (r < 0) {
        r = (int)d->def;
        if (first_warning(id, v)) {
            char list[160] = "";
            size_t n = 0;
            for (int i = 0; values[i] && n < sizeof list; i++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
                                      i ? ", " : "", values[i]);
            CPLError(CE_Warning, CPLE_IllegalArg,
                     "vsitune: %s=%s is not one of %s%s; using %s", d->name,
                     v, list, yes_no ? " (or TRUE, ON, 1, FALSE, OFF, 0)" : "",
                     values[r]);
        }
    }
    free(v);
    return r;
}

uint64_t vt__cfg_cache_budget(void)
{
    char *v = vt__cfg_dup(NULL, "VSITUNE_CACHE_SIZE");
    enum vt_opt id = v ? VT_OPT_CACHE_SIZE : VT_OPT_CURL_CACHE_SIZE;

    free(v);
    return vt__opt_size(NULL, id);
}

/* ---- CA bundle --------------------------------------------------------- */

const char *const vt__ca_names[3] = {"GDAL_CURL_CA_BUNDLE", "CURL_CA_BUNDLE",
                                     "SSL_CERT_FILE"};

int vt__ca_pick(int version_num, enum vt_ca_use use,
                const char *const vals[3])
{
    if (!vt__gdal_release_for(version_num)->ca_first_wins_by_path &&
        use == VT_CA_READ) {
        for (int i = 2; i >= 0; i--)
            if (vals[i])
                return i;
        return -1;
    }
    for (int i = 0; i < 3; i++)
        if (vals[i])
            return i;
    return -1;
}

char *vt__cfg_ca_bundle(const char *path, enum vt_ca_use use)
{
    const vt_gdal_release *rel = vt__gdal_release();
    const char *lookup = rel->ca_first_wins_by_path && use != VT_CA_FETCH
                             ? path : NULL;
    char *vals[3];
    char *out = NULL;
    int pick;

    for (int i = 0; i < 3; i++)
        vals[i] = vt__cfg_dup_raw(lookup, vt__ca_names[i]);
    pick = vt__ca_pick(rel->from, use, (const char *const *)vals);
    if (pick >= 0) {
        out = vals[pick];
        vals[pick] = NULL;
    }
    for (int i = 0; i < 3; i++)
        free(vals[i]);
    return out;
}

const char *vt__cfg_http_path(const char *path)
{
    return vt__gdal_release()->http_opts_by_path ? path : NULL;
}

/* GDAL's CPL_VSIL_CURL_NON_CACHED: ':'-separated name prefixes whose data
 * must not be reused from an earlier open (stock GDAL's AllowCachedDataFor). */
int vt__cfg_non_cached(const char *path)
{
    char *all = vt__cfg_dup(NULL, "CPL_VSIL_CURL_NON_CACHED"), *list = all;
    char name[4096];
    int hit = 0;
    if (!all)
        return 0;
    snprintf(name, sizeof(name), "/vsis3/%s", path);
    while (*list && !hit) {
        char *colon = strchr(list, ':');
        size_t n = colon ? (size_t)(colon - list) : strlen(list);
        hit = n > 0 && strncmp(name, list, n) == 0;
        if (!colon)
            break;
        list = colon + 1;
    }
    free(all);
    return hit;
}
