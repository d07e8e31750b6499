/* statsfile.c: bounded parser of the plugin's counters document (statsfile.h).
 *
 * A recursive-descent reader over a cursor; every step checks the remaining
 * length first, so a partial file ends in "truncated at offset N" and never
 * reads past len. Known fields are found in one table (section, name,
 * offset), which also gives the duplicate and missing checks. */
#include "statsfile.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errbuf.h"

#define MAX_DEPTH 3
#define KEY_MAX 32

enum { SEC_TOP, SEC_CACHE, SEC_ENGINE };

static const char *const section_prefix[] = { "", "cache.", "engine." };

#define FIELD(sec, name, member) { sec, name, offsetof(vt_stats_rec, member) }
static const struct field {
    int section;
    const char *name;
    size_t off;
} fields[] = {
    FIELD(SEC_TOP, "pid", pid),
    FIELD(SEC_TOP, "time", time),
    FIELD(SEC_CACHE, "budget", cache.budget),
    FIELD(SEC_CACHE, "retained_bytes", cache.retained_bytes),
    FIELD(SEC_CACHE, "peak_retained_bytes", cache.peak_retained_bytes),
    FIELD(SEC_CACHE, "transient_bytes", cache.transient_bytes),
    FIELD(SEC_CACHE, "hits", cache.hits),
    FIELD(SEC_CACHE, "misses", cache.misses),
    FIELD(SEC_CACHE, "waits", cache.waits),
    FIELD(SEC_CACHE, "evictions", cache.evictions),
    FIELD(SEC_CACHE, "blocks", cache.blocks),
    FIELD(SEC_ENGINE, "requests", engine.requests),
    FIELD(SEC_ENGINE, "retries", engine.retries),
    FIELD(SEC_ENGINE, "bytes_received", engine.bytes_received),
    FIELD(SEC_ENGINE, "connections", engine.connections),
    FIELD(SEC_ENGINE, "in_flight", engine.in_flight),
    FIELD(SEC_ENGINE, "h2_responses", engine.h2_responses),
};
#define N_FIELDS ((int)(sizeof fields / sizeof fields[0]))
/* bits after the fields: the two objects and "exited" */
#define BIT_CACHE (1u << N_FIELDS)
#define BIT_ENGINE (1u << (N_FIELDS + 1))
#define BIT_EXITED (1u << (N_FIELDS + 2))

typedef struct cur {
    const char *s;
    size_t n, i;
    char *err;
    size_t errlen;
    uint32_t seen;
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

/* A string without escapes, at most cap-1 bytes (key != NULL), or of any
 * length within the text (key == NULL: skipped). */
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
            vt__seterr(c->err, c->errlen, "key at offset %zu longer than %zu bytes", start,
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

static int duplicate(cur *c, uint32_t bit, const char *prefix, const char *key)
{
    if (c->seen & bit) {
        vt__seterr(c->err, c->errlen, "duplicate key %s%s", prefix, key);
        return -1;
    }
    c->seen |= bit;
    return 0;
}

/* One key: value pair of `section` (-1: an unknown object, skipped). */
static int member(cur *c, int section, vt_stats_rec *out, int depth)
{
    char key[KEY_MAX];
    const char *prefix = section >= 0 ? section_prefix[section] : "";

    if (string(c, key, sizeof key) || expect(c, ':', "':'"))
        return -1;
    if (section < 0)
        return skip_value(c, depth);
    for (int f = 0; f < N_FIELDS; f++) {
        if (fields[f].section != section || strcmp(fields[f].name, key) != 0)
            continue;
        if (duplicate(c, 1u << f, prefix, key))
            return -1;
        return number(c, prefix, key, (uint64_t *)((char *)out + fields[f].off));
    }
    if (section == SEC_TOP && !strcmp(key, "cache")) {
        if (duplicate(c, BIT_CACHE, "", key))
            return -1;
        return object(c, SEC_CACHE, out, depth + 1);
    }
    if (section == SEC_TOP && !strcmp(key, "engine")) {
        if (duplicate(c, BIT_ENGINE, "", key))
            return -1;
        return object(c, SEC_ENGINE, out, depth + 1);
    }
    if (section == SEC_TOP && !strcmp(key, "exited")) {
        if (duplicate(c, BIT_EXITED, "", key))
            return -1;
        return boolean(c, &out->exited);
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

int vt_stats_parse(const char *text, size_t len, vt_stats_rec *out, char *err,
                   size_t errlen)
{
    cur c = { text, len, 0, err, errlen, 0 };
    int rc = -1;

    memset(out, 0, sizeof *out);
    out->exited = -1;
    if (err && errlen)
        err[0] = '\0';
    if (len > VT_STATS_FILE_MAX) {
        vt__seterr(err, errlen, "larger than %d bytes", VT_STATS_FILE_MAX);
        goto out;
    }
    if (object(&c, SEC_TOP, out, 1))
        goto out;
    ws(&c);
    if (c.i < c.n) {
        vt__seterr(err, errlen, "trailing data at offset %zu", c.i);
        goto out;
    }
    for (int f = 0; f < N_FIELDS; f++) {
        if (!(c.seen & (1u << f))) {
            vt__seterr(err, errlen, "missing %s%s", section_prefix[fields[f].section],
                       fields[f].name);
            goto out;
        }
    }
    if (out->pid == 0 || out->pid > INT_MAX) {
        vt__seterr(err, errlen, "pid %llu out of range (1..%d)",
                   (unsigned long long)out->pid, INT_MAX);
        goto out;
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
