/* statsfile.c: bounded parser of the plugin's counters document (statsfile.h).
 *
 * A recursive-descent reader over a cursor; every step checks the remaining
 * length first, so a partial file ends in "truncated at offset N" and never
 * reads past len. The document's shape is two tables: sections (objects,
 * each under a parent) and fields (section, name, type, offset in the
 * record), which also give the duplicate and missing checks. */
#include "statsfile.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errbuf.h"

#define MAX_DEPTH 3
#define KEY_MAX 32

const char *const vt_http_kind_names[VT_HTTP_KINDS] = { VT_STATS_HTTP_KINDS };
const char *const vt_http_class_names[VT_HTTP_CLASSES] = { VT_STATS_HTTP_CLASSES };
#define BOUND_TEXT(i, s) #s,
const char *const vt_lat_bound_text[VT_LAT_BOUNDS] = { VT_STATS_LAT_BOUNDS(BOUND_TEXT) };
#undef BOUND_TEXT
const char *const vt_backend_names[VT_BACKENDS] = { VT_STATS_BACKEND_NAMES };

enum {
    S_TOP, S_CACHE, S_ENGINE, S_HTTP, S_K0, S_K1, S_K2, S_K3, S_K4, S_K5, S_K6,
    S_LAT, S_AVOIDED, S_PROCESS, S_SHARED, S_BACKENDS, S_B0, S_B1, S_B2, S_B3, S_COUNT
};
_Static_assert(S_B3 - S_B0 + 1 == VT_BACKENDS, "a section per backend");

static const struct section {
    const char *name;  /* key in the parent */
    const char *path;  /* for messages */
    int parent;
    int required;      /* must be there when its parent is */
} sections[S_COUNT] = {
    [S_TOP] = { "", "", -1, 1 },
    [S_CACHE] = { "cache", "cache.", S_TOP, 1 },
    [S_ENGINE] = { "engine", "engine.", S_TOP, 1 },
    [S_HTTP] = { "http", "http.", S_TOP, 0 },
    [S_K0] = { "get_range", "http.get_range.", S_HTTP, 1 },
    [S_K1] = { "get", "http.get.", S_HTTP, 1 },
    [S_K2] = { "head", "http.head.", S_HTTP, 1 },
    [S_K3] = { "put", "http.put.", S_HTTP, 1 },
    [S_K4] = { "post", "http.post.", S_HTTP, 1 },
    [S_K5] = { "delete", "http.delete.", S_HTTP, 1 },
    [S_K6] = { "other", "http.other.", S_HTTP, 1 },
    [S_LAT] = { "latency", "latency.", S_TOP, 0 },
    [S_AVOIDED] = { "avoided", "avoided.", S_TOP, 0 },
    [S_PROCESS] = { "process", "process.", S_TOP, 0 },
    [S_SHARED] = { "shared", "shared.", S_TOP, 0 },
    [S_BACKENDS] = { "backends", "backends.", S_TOP, 0 },
    [S_B0] = { "s3", "backends.s3.", S_BACKENDS, 1 },
    [S_B1] = { "gs", "backends.gs.", S_BACKENDS, 1 },
    [S_B2] = { "az", "backends.az.", S_BACKENDS, 1 },
    [S_B3] = { "curl", "backends.curl.", S_BACKENDS, 1 },
};

enum { T_NUM, T_BOOL, T_STR };

#define F(sec, name, member) { sec, name, T_NUM, 0, offsetof(vt_stats_rec, member) }
#define FT(sec, name, type, opt, member) { sec, name, type, opt, offsetof(vt_stats_rec, member) }
#define KIND(k) F(S_K0 + k, "2xx", http.n[k][0]), F(S_K0 + k, "3xx", http.n[k][1]), \
    F(S_K0 + k, "4xx", http.n[k][2]), F(S_K0 + k, "5xx", http.n[k][3]), \
    F(S_K0 + k, "none", http.n[k][4])
/* The named fields of statsnames.h, each to its vt_stats_rec member. */
#define CACHE_F(n) F(S_CACHE, #n, cache.n),
#define ENGINE_F(n) F(S_ENGINE, #n, engine.n),
#define AVOIDED_F(n) F(S_AVOIDED, #n, avoided.n),
#define SHARED_F(n) F(S_SHARED, #n, shared.n),
#define LAT_F(i, s) F(S_LAT, "le_" #s, latency.le[i]),
/* A backend's section: its named counts, then its status classes. */
#define BE0_F(n) F(S_B0, #n, backends.b[0].n),
#define BE1_F(n) F(S_B1, #n, backends.b[1].n),
#define BE2_F(n) F(S_B2, #n, backends.b[2].n),
#define BE3_F(n) F(S_B3, #n, backends.b[3].n),
#define BACKEND(k) VT_STATS_BACKEND(BE##k##_F) \
    F(S_B0 + k, "2xx", backends.b[k].status[0]), F(S_B0 + k, "3xx", backends.b[k].status[1]), \
    F(S_B0 + k, "4xx", backends.b[k].status[2]), F(S_B0 + k, "5xx", backends.b[k].status[3]), \
    F(S_B0 + k, "none", backends.b[k].status[4]),
static const struct field {
    int section;
    const char *name;
    int type;
    int optional;
    size_t off;
} fields[] = {
    F(S_TOP, "pid", pid),
    F(S_TOP, "time", time),
    VT_STATS_CACHE(CACHE_F)
    VT_STATS_ENGINE(ENGINE_F)
    KIND(0), KIND(1), KIND(2), KIND(3), KIND(4), KIND(5), KIND(6),
    VT_STATS_LAT_BOUNDS(LAT_F)
    F(S_LAT, "le_inf", latency.le[VT_LAT_BOUNDS]),
    F(S_LAT, "sum_us", latency.sum_us),
    F(S_LAT, "count", latency.count),
    VT_STATS_AVOIDED(AVOIDED_F)
    BACKEND(0) BACKEND(1) BACKEND(2) BACKEND(3)
    F(S_PROCESS, "ppid", process.ppid),
    FT(S_PROCESS, "forked", T_BOOL, 0, process.forked),
    FT(S_PROCESS, "oom_kills", T_NUM, 1, process.oom_kills),
    FT(S_PROCESS, "oom_file", T_STR, 1, process.oom_file),
    FT(S_TOP, "exited", T_BOOL, 1, exited),
    FT(S_SHARED, "path", T_STR, 0, shared.path),
    VT_STATS_SHARED(SHARED_F)
};
#define N_FIELDS ((int)(sizeof fields / sizeof fields[0]))

typedef struct cur {
    const char *s;
    size_t n, i;
    char *err;
    size_t errlen;
    unsigned char seen[N_FIELDS];
    unsigned char sec_seen[S_COUNT];
} cur;

static void ws(cur *c)
{
    while (c->i < c->n && (c->s[c->i] == ' ' || c->s[c->i] == '\t' ||
                           c->s[c->i] == '\n' || c->s[c->i] == '\r'))
        c->i++;
}

/* "truncated" at the end of the text, else names the byte found. */
static int unexpected(cur *c, const char *wanted)
{
    if (c->i >= c->n)
        vt__seterr(c->err, c->errlen, "truncated at offset %zu (expected %s)", c->i, wanted);
    else if (c->s[c->i] >= 0x20 && c->s[c->i] < 0x7f)
        vt__seterr(c->err, c->errlen, "unexpected '%c' at offset %zu (expected %s)",
                   c->s[c->i], c->i, wanted);
    else
        vt__seterr(c->err, c->errlen, "unexpected byte 0x%02x at offset %zu (expected %s)",
                   (unsigned char)c->s[c->i], c->i, wanted);
    return -1;
}

static int expect(cur *c, char ch, const char *wanted)
{
    ws(c);
    if (c->i >= c->n || c->s[c->i] != ch)
        return unexpected(c, wanted);
    c->i++;
    return 0;
}

/* A string without escapes or control bytes, copied into key (at most cap-1
 * bytes, else an error) or skipped (key == NULL). */
static int string(cur *c, char *key, size_t cap)
{
    size_t start;

    if (expect(c, '"', "'\"'"))
        return -1;
    start = c->i;
    while (c->i < c->n && c->s[c->i] != '"') {
        unsigned char ch = (unsigned char)c->s[c->i];
        if (ch == '\\' || ch < 0x20)
            return unexpected(c, "a plain string");
        c->i++;
    }
    if (c->i >= c->n)
        return unexpected(c, "'\"'");
    if (key) {
        if (c->i - start >= cap) {
            vt__seterr(c->err, c->errlen, "string at offset %zu longer than %zu bytes", start,
                       cap - 1);
            return -1;
        }
        memcpy(key, c->s + start, c->i - start);
        key[c->i - start] = '\0';
    }
    c->i++;
    return 0;
}

static int is_digit(cur *c)
{
    return c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9';
}

/* An unsigned decimal whole number up to UINT64_MAX; name is for messages. */
static int number(cur *c, const char *prefix, const char *name, uint64_t *out)
{
    uint64_t v = 0;
    size_t start;

    ws(c);
    start = c->i;
    if (c->i < c->n && c->s[c->i] == '-') {
        vt__seterr(c->err, c->errlen, "%s%s: negative number at offset %zu", prefix, name,
                   start);
        return -1;
    }
    if (!is_digit(c))
        return unexpected(c, "a whole number");
    while (is_digit(c)) {
        unsigned d = (unsigned)(c->s[c->i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            vt__seterr(c->err, c->errlen, "%s%s: number too large at offset %zu", prefix,
                       name, start);
            return -1;
        }
        v = v * 10 + d;
        c->i++;
    }
    if (c->i - start > 1 && c->s[start] == '0') {
        vt__seterr(c->err, c->errlen, "%s%s: leading zero at offset %zu", prefix, name,
                   start);
        return -1;
    }
    if (c->i < c->n && (c->s[c->i] == '.' || c->s[c->i] == 'e' || c->s[c->i] == 'E')) {
        vt__seterr(c->err, c->errlen, "%s%s: not a whole number at offset %zu", prefix, name,
                   start);
        return -1;
    }
    *out = v;
    return 0;
}

static int literal(cur *c, const char *word)
{
    size_t l = strlen(word);

    if (c->n - c->i < l || memcmp(c->s + c->i, word, l) != 0)
        return -1;
    c->i += l;
    return 0;
}

static int object(cur *c, int section, vt_stats_rec *out, int depth);

/* The value of a key this parser does not know: number, boolean, null,
 * string or an object of those. */
static int skip_value(cur *c, int depth)
{
    uint64_t ignored;

    ws(c);
    if (c->i >= c->n)
        return unexpected(c, "a value");
    switch (c->s[c->i]) {
    case '{':
        return object(c, -1, NULL, depth + 1);
    case '"':
        return string(c, NULL, 0);
    case 't':
    case 'f':
    case 'n':
        if (literal(c, "true") && literal(c, "false") && literal(c, "null"))
            return unexpected(c, "a value");
        return 0;
    default:
        return number(c, "", "value", &ignored);
    }
}

static int boolean(cur *c, int *out)
{
    ws(c);
    if (literal(c, "true") == 0)
        *out = 1;
    else if (literal(c, "false") == 0)
        *out = 0;
    else
        return unexpected(c, "true or false");
    return 0;
}

static int duplicate(cur *c, unsigned char *flag, const char *prefix, const char *key)
{
    if (*flag) {
        vt__seterr(c->err, c->errlen, "duplicate key %s%s", prefix, key);
        return -1;
    }
    *flag = 1;
    return 0;
}

/* One key: value pair of `section` (-1: an unknown object, skipped). */
static int member(cur *c, int section, vt_stats_rec *out, int depth)
{
    char key[KEY_MAX];

    if (string(c, key, sizeof key) || expect(c, ':', "':'"))
        return -1;
    if (section < 0)
        return skip_value(c, depth);
    const char *prefix = sections[section].path;
    for (int f = 0; f < N_FIELDS; f++) {
        const struct field *fd = &fields[f];
        if (fd->section != section || strcmp(fd->name, key) != 0)
            continue;
        if (duplicate(c, &c->seen[f], prefix, key))
            return -1;
        if (fd->type == T_BOOL)
            return boolean(c, (int *)((char *)out + fd->off));
        if (fd->type == T_STR) {
            ws(c);
            return string(c, (char *)out + fd->off, sizeof out->process.oom_file);
        }
        return number(c, prefix, key, (uint64_t *)((char *)out + fd->off));
    }
    for (int s = 1; s < S_COUNT; s++) {
        if (sections[s].parent != section || strcmp(sections[s].name, key) != 0)
            continue;
        if (duplicate(c, &c->sec_seen[s], prefix, key))
            return -1;
        return object(c, s, out, depth + 1);
    }
    return skip_value(c, depth);
}

static int object(cur *c, int section, vt_stats_rec *out, int depth)
{
    if (depth > MAX_DEPTH) {
        vt__seterr(c->err, c->errlen, "nested deeper than %d at offset %zu", MAX_DEPTH, c->i);
        return -1;
    }
    if (expect(c, '{', "'{'"))
        return -1;
    ws(c);
    if (c->i < c->n && c->s[c->i] == '}') {
        c->i++;
        return 0;
    }
    for (;;) {
        if (member(c, section, out, depth))
            return -1;
        ws(c);
        if (c->i < c->n && c->s[c->i] == ',') {
            c->i++;
            continue;
        }
        return expect(c, '}', "',' or '}'");
    }
}

/* Every required section of a present parent, and every non-optional field
 * of a present section, was there. */
static int complete(cur *c, char *err, size_t errlen)
{
    c->sec_seen[S_TOP] = 1;
    for (int s = 1; s < S_COUNT; s++) {
        int p = sections[s].parent;
        if (c->sec_seen[p] && sections[s].required && !c->sec_seen[s]) {
            vt__seterr(err, errlen, "missing %s%s", sections[p].path, sections[s].name);
            return -1;
        }
    }
    for (int f = 0; f < N_FIELDS; f++) {
        if (!c->seen[f] && !fields[f].optional && c->sec_seen[fields[f].section]) {
            vt__seterr(err, errlen, "missing %s%s", sections[fields[f].section].path,
                       fields[f].name);
            return -1;
        }
    }
    return 0;
}

static int field_seen(const cur *c, const char *name, int section)
{
    for (int f = 0; f < N_FIELDS; f++)
        if (fields[f].section == section && strcmp(fields[f].name, name) == 0)
            return c->seen[f];
    return 0;
}

int vt_stats_parse(const char *text, size_t len, vt_stats_rec *out, char *err,
                   size_t errlen)
{
    static cur c0;
    cur c = c0;
    int rc = -1;

    c.s = text;
    c.n = len;
    c.err = err;
    c.errlen = errlen;
    memset(out, 0, sizeof *out);
    out->exited = -1;
    if (err && errlen)
        err[0] = '\0';
    if (len > VT_STATS_FILE_MAX) {
        vt__seterr(err, errlen, "larger than %d bytes", VT_STATS_FILE_MAX);
        goto out;
    }
    if (object(&c, S_TOP, out, 1))
        goto out;
    ws(&c);
    if (c.i < c.n) {
        vt__seterr(err, errlen, "trailing data at offset %zu", c.i);
        goto out;
    }
    if (complete(&c, err, errlen))
        goto out;
    if (out->pid == 0 || out->pid > INT_MAX) {
        vt__seterr(err, errlen, "pid %llu out of range (1..%d)",
                   (unsigned long long)out->pid, INT_MAX);
        goto out;
    }
    out->http.present = c.sec_seen[S_HTTP];
    out->latency.present = c.sec_seen[S_LAT];
    out->avoided.present = c.sec_seen[S_AVOIDED];
    out->process.present = c.sec_seen[S_PROCESS];
    out->shared.present = c.sec_seen[S_SHARED];
    out->backends.present = c.sec_seen[S_BACKENDS];
    if (out->latency.present) {
        for (int b = 1; b <= VT_LAT_BOUNDS; b++)
            if (out->latency.le[b] < out->latency.le[b - 1]) {
                vt__seterr(err, errlen, "latency: buckets are not cumulative (le_%s < le_%s)",
                           b < VT_LAT_BOUNDS ? vt_lat_bound_text[b] : "inf",
                           vt_lat_bound_text[b - 1]);
                goto out;
            }
        if (out->latency.le[VT_LAT_BOUNDS] != out->latency.count) {
            vt__seterr(err, errlen, "latency: le_inf %llu is not the count %llu",
                       (unsigned long long)out->latency.le[VT_LAT_BOUNDS],
                       (unsigned long long)out->latency.count);
            goto out;
        }
    }
    if (out->process.present) {
        int k = field_seen(&c, "oom_kills", S_PROCESS), f = field_seen(&c, "oom_file", S_PROCESS);
        if (k != f) {
            vt__seterr(err, errlen, "process: oom_kills and oom_file come together");
            goto out;
        }
        out->process.has_oom = k && out->process.oom_file[0] == '/';
    }
    rc = 0;
out:
    if (rc) {
        memset(out, 0, sizeof *out);
        out->exited = -1;
    }
    return rc;
}

double vt_stats_hit_ratio(const vt_stats_rec *r)
{
    double served = (double)r->cache.hits + (double)r->cache.waits;
    double all = served + (double)r->cache.misses;

    return all > 0 ? served / all : -1.0;
}
