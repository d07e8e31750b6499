/* platform.c: parse and validate profiles/<name>.profile files.
 *
 * Format: one `key = value` per line; blank lines and lines whose first
 * non-blank character is '#' are ignored; keys are lower case; `env.NAME`
 * adds an extra variable to the emitted block. Any problem is reported as
 * "file:line: message" with the valid choices, because these files are
 * edited by hand. The parser works on a byte buffer (no I/O) so unit tests
 * feed it strings; vt_platform_load is the only function that reads disk. */
#include "platform.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wholenum.h"

const char *const vt_platform_names[] = {
    "lambda", "cloudrun", "azure-functions", "kubernetes", "host", NULL
};

#define VALID_KEYS "name, title, detect_env, memory_env, memory_min_mb, " \
    "memory_max_mb, cpu_rule, mb_per_vcpu, vcpu, max_vcpu, max_mb_per_vcpu, " \
    "cpus_allowed, tmp_dir, tmp_size_mb, time_limit_s, plugin_dir, " \
    "stats_dir, start_method, shared_memory, env.NAME, note"

enum {
    K_NAME, K_TITLE, K_DETECT_ENV, K_MEMORY_ENV, K_MEM_MIN, K_MEM_MAX,
    K_CPU_RULE, K_MB_PER_VCPU, K_VCPU, K_MAX_VCPU, K_MAX_MB_PER_VCPU,
    K_CPUS_ALLOWED, K_TMP_DIR, K_TMP_SIZE, K_TIME_LIMIT, K_PLUGIN_DIR,
    K_START_METHOD, K_NOTE, K_STATS_DIR, K_SHARED_MEMORY, K_COUNT
};

static const char *const key_names[K_COUNT] = {
    "name", "title", "detect_env", "memory_env", "memory_min_mb",
    "memory_max_mb", "cpu_rule", "mb_per_vcpu", "vcpu", "max_vcpu",
    "max_mb_per_vcpu", "cpus_allowed", "tmp_dir", "tmp_size_mb",
    "time_limit_s", "plugin_dir", "start_method", "note", "stats_dir",
    "shared_memory"
};

int vt_platform_name_ok(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n >= VT_PLATFORM_NAME_MAX || !(name[0] >= 'a' && name[0] <= 'z'))
        return 0;
    return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-_") == n;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

int vt_platform_list(const char *dir, char names[][VT_PLATFORM_NAME_MAX], int cap)
{
    char other[VT_PLATFORM_MAX_FILES][VT_PLATFORM_NAME_MAX];
    int n = 0, n_other = 0;
    DIR *d = opendir(dir);
    struct dirent *de;

    if (!d)
        return -1;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        char stem[VT_PLATFORM_NAME_MAX];
        int builtin = 0;
        if (l < 9 || strcmp(de->d_name + l - 8, ".profile") != 0 ||
            l - 8 >= sizeof stem)
            continue;
        memcpy(stem, de->d_name, l - 8);
        stem[l - 8] = '\0';
        if (!vt_platform_name_ok(stem))
            continue;
        for (int i = 0; vt_platform_names[i]; i++)
            builtin |= strcmp(vt_platform_names[i], stem) == 0;
        if (!builtin && n_other < VT_PLATFORM_MAX_FILES)
            memcpy(other[n_other++], stem, sizeof stem);
    }
    closedir(d);
    for (int i = 0; vt_platform_names[i] && n < cap; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s.profile", dir, vt_platform_names[i]);
        if (access(path, F_OK) == 0)
            snprintf(names[n++], VT_PLATFORM_NAME_MAX, "%s", vt_platform_names[i]);
    }
    qsort(other, (size_t)n_other, sizeof other[0], by_name);
    for (int i = 0; i < n_other && n < cap; i++)
        memcpy(names[n++], other[i], VT_PLATFORM_NAME_MAX);
    return n;
}

static void seterr(char *err, size_t errlen, const char *path, int line,
                   const char *fmt, ...)
{
    va_list ap;
    int n;

    if (!err || errlen == 0)
        return;
    if (line > 0)
        n = snprintf(err, errlen, "%s:%d: ", path ? path : "<profile>", line);
    else
        n = snprintf(err, errlen, "%s: ", path ? path : "<profile>");
    if (n < 0 || (size_t)n >= errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v;

    if (!*s || !(isdigit((unsigned char)*s) || *s == '.'))
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno || *end || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

static int copy_text(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);

    if (n >= cap)
        return -1;
    memcpy(dst, src, n + 1);
    return 0;
}

static int valid_env_name(const char *s)
{
    if (!*s || !(isalpha((unsigned char)*s) || *s == '_'))
        return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return 0;
    return 1;
}

/* Splits a comma list in place; calls back per trimmed item. An empty item
 * ("a,,b", a trailing comma) is an error. Returns the first failure. */
static int each_item(char *list, int (*fn)(const char *item, void *ctx),
                     void *ctx)
{
    char *tok = list;

    for (;;) {
        char *comma = strchr(tok, ',');
        if (comma)
            *comma = '\0';
        while (isspace((unsigned char)*tok))
            tok++;
        char *e = tok + strlen(tok);
        while (e > tok && isspace((unsigned char)e[-1]))
            *--e = '\0';
        if (!*tok || fn(tok, ctx) != 0)
            return -1;
        if (!comma)
            return 0;
        tok = comma + 1;
    }
}

static int add_detect(const char *item, void *ctx)
{
    vt_platform *p = ctx;

    if (p->n_detect_env >= VT_PLATFORM_MAX_DETECT || !valid_env_name(item))
        return -1;
    return copy_text(p->detect_env[p->n_detect_env++], 64, item);
}

static int add_cpus(const char *item, void *ctx)
{
    vt_platform *p = ctx;
    long v;

    if (p->n_cpus_allowed >= VT_PLATFORM_MAX_CPUS_ALLOWED ||
        vt__parse_whole(item, 1, 1024, &v) != 0)
        return -1;
    p->cpus_allowed[p->n_cpus_allowed++] = (int)v;
    return 0;
}

/* Path stem: "dir/lambda.profile" -> "lambda" into buf. */
static void stem_of(const char *path, char *buf, size_t cap)
{
    const char *base = strrchr(path, '/');
    size_t n;

    base = base ? base + 1 : path;
    n = strcspn(base, ".");
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, base, n);
    buf[n] = '\0';
}

/* Applies one key = value. Returns 0 or -1 with err set. */
static int apply_kv(vt_platform *p, const char *key, char *val,
                    const char *path, int line, unsigned *seen,
                    char *err, size_t errlen)
{
    int k;
    long lv;

    if (strncmp(key, "env.", 4) == 0) {
        const char *name = key + 4;
        if (!valid_env_name(name)) {
            seterr(err, errlen, path, line,
                   "bad variable name '%s' in env.NAME (letters, digits, _)", name);
            return -1;
        }
        for (int i = 0; i < p->n_env; i++)
            if (strcmp(p->env[i].name, name) == 0) {
                seterr(err, errlen, path, line, "duplicate key '%s'", key);
                return -1;
            }
        if (p->n_env >= VT_PLATFORM_MAX_ENV) {
            seterr(err, errlen, path, line, "too many env.NAME lines (max %d)",
                   VT_PLATFORM_MAX_ENV);
            return -1;
        }
        if (copy_text(p->env[p->n_env].name, sizeof p->env[0].name, name) ||
            copy_text(p->env[p->n_env].value, sizeof p->env[0].value, val)) {
            seterr(err, errlen, path, line, "env value too long (max %d bytes)",
                   VT_PLATFORM_TEXT_MAX - 1);
            return -1;
        }
        p->n_env++;
        return 0;
    }
    for (k = 0; k < K_COUNT; k++)
        if (strcmp(key, key_names[k]) == 0)
            break;
    if (k == K_COUNT) {
        seterr(err, errlen, path, line, "unknown key '%s' (valid: %s)", key,
               VALID_KEYS);
        return -1;
    }
    if (*seen & (1u << k)) {
        seterr(err, errlen, path, line, "duplicate key '%s'", key);
        return -1;
    }
    *seen |= 1u << k;

    switch (k) {
    case K_NAME:
        if (!vt_platform_name_ok(val)) {
            seterr(err, errlen, path, line,
                   "bad platform name '%s' (1..31 lower-case letters, digits, '-' and "
                   "'_', starting with a letter)", val);
            return -1;
        }
        return copy_text(p->name, sizeof p->name, val);
    case K_TITLE:
    case K_TMP_DIR:
    case K_PLUGIN_DIR:
    case K_STATS_DIR:
    case K_NOTE: {
        char *dst = k == K_TITLE ? p->title : k == K_TMP_DIR ? p->tmp_dir
                  : k == K_PLUGIN_DIR ? p->plugin_dir
                  : k == K_STATS_DIR ? p->stats_dir : p->note;
        if (copy_text(dst, VT_PLATFORM_TEXT_MAX, val)) {
            seterr(err, errlen, path, line, "value of '%s' too long (max %d bytes)",
                   key, VT_PLATFORM_TEXT_MAX - 1);
            return -1;
        }
        if ((k == K_TMP_DIR || k == K_PLUGIN_DIR || k == K_STATS_DIR) && val[0] != '/') {
            seterr(err, errlen, path, line, "'%s' must be an absolute path, got '%s'",
                   key, val);
            return -1;
        }
        return 0;
    }
    case K_DETECT_ENV:
        if (each_item(val, add_detect, p)) {
            seterr(err, errlen, path, line,
                   "detect_env must be a comma list of up to %d variable names",
                   VT_PLATFORM_MAX_DETECT);
            return -1;
        }
        return 0;
    case K_MEMORY_ENV:
        if (!valid_env_name(val) || copy_text(p->memory_env, sizeof p->memory_env, val)) {
            seterr(err, errlen, path, line, "memory_env must be a variable name, got '%s'", val);
            return -1;
        }
        return 0;
    case K_SHARED_MEMORY:
        if (strcmp(val, "yes") == 0 || strcmp(val, "no") == 0) {
            p->shared_memory = val[0] == 'y';
            return 0;
        }
        seterr(err, errlen, path, line, "shared_memory must be yes or no, got '%s'", val);
        return -1;
    case K_CPU_RULE:
        if (strcmp(val, "per_memory") == 0)
            p->cpu_rule = VT_CPU_PER_MEMORY;
        else if (strcmp(val, "fixed") == 0)
            p->cpu_rule = VT_CPU_FIXED;
        else if (strcmp(val, "given") == 0)
            p->cpu_rule = VT_CPU_GIVEN;
        else {
            seterr(err, errlen, path, line,
                   "unknown cpu_rule '%s' (valid: per_memory, fixed, given)", val);
            return -1;
        }
        return 0;
    case K_VCPU:
    case K_MAX_VCPU: {
        double dv;
        if (parse_double(val, 0.01, 1024, &dv)) {
            seterr(err, errlen, path, line,
                   "'%s' must be a number from 0.01 to 1024, got '%s'", key, val);
            return -1;
        }
        if (k == K_VCPU)
            p->vcpu = dv;
        else
            p->max_vcpu = dv;
        return 0;
    }
    case K_CPUS_ALLOWED:
        if (each_item(val, add_cpus, p)) {
            seterr(err, errlen, path, line,
                   "cpus_allowed must be a comma list of whole numbers 1..1024, got '%s'",
                   val);
            return -1;
        }
        return 0;
    case K_START_METHOD:
        if (strcmp(val, "fork") && strcmp(val, "forkserver") && strcmp(val, "spawn")) {
            seterr(err, errlen, path, line,
                   "unknown start_method '%s' (valid: fork, forkserver, spawn)", val);
            return -1;
        }
        return copy_text(p->start_method, sizeof p->start_method, val);
    default: /* the whole-number keys */
        if (vt__parse_whole(val, 0, 10L * 1024 * 1024, &lv)) {
            seterr(err, errlen, path, line,
                   "'%s' must be a whole number from 0 to 10485760, got '%s'", key, val);
            return -1;
        }
        switch (k) {
        case K_MEM_MIN: p->memory_min_mb = lv; break;
        case K_MEM_MAX: p->memory_max_mb = lv; break;
        case K_MB_PER_VCPU: p->mb_per_vcpu = lv; break;
        case K_MAX_MB_PER_VCPU: p->max_mb_per_vcpu = lv; break;
        case K_TMP_SIZE: p->tmp_size_mb = lv; break;
        case K_TIME_LIMIT: p->time_limit_s = lv; break;
        default: break;
        }
        return 0;
    }
}

int vt_platform_parse(const char *path, const char *text, size_t len,
                      vt_platform *out, char *err, size_t errlen)
{
    static const int required[] = { K_NAME, K_TITLE, K_MEM_MIN, K_MEM_MAX,
                                    K_CPU_RULE, K_TMP_DIR, K_START_METHOD };
    unsigned seen = 0;
    int line = 0, rc = -1;
    size_t pos = 0;
    char buf[1024];

    memset(out, 0, sizeof *out);
    out->shared_memory = 1;
    if (err && errlen)
        err[0] = '\0';

    while (pos < len) {
        size_t end = pos;
        while (end < len && text[end] != '\n')
            end++;
        line++;
        size_t n = end - pos;
        if (n >= sizeof buf) {
            seterr(err, errlen, path, line, "line longer than %zu bytes", sizeof buf - 1);
            goto out;
        }
        memcpy(buf, text + pos, n);
        buf[n] = '\0';
        pos = end + 1;
        if (memchr(buf, '\0', n)) {
            seterr(err, errlen, path, line, "NUL byte in a text file");
            goto out;
        }

        char *s = buf;
        while (isspace((unsigned char)*s))
            s++;
        char *e = s + strlen(s);
        while (e > s && isspace((unsigned char)e[-1]))
            *--e = '\0';
        if (!*s || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            seterr(err, errlen, path, line, "expected 'key = value', got '%s'", s);
            goto out;
        }
        char *ke = eq;
        while (ke > s && isspace((unsigned char)ke[-1]))
            ke--;
        *ke = '\0';
        char *val = eq + 1;
        while (isspace((unsigned char)*val))
            val++;
        if (!*s) {
            seterr(err, errlen, path, line, "missing key before '='");
            goto out;
        }
        if (!*val) {
            seterr(err, errlen, path, line, "missing value for '%s'", s);
            goto out;
        }
        if (apply_kv(out, s, val, path, line, &seen, err, errlen))
            goto out;
    }

    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!(seen & (1u << required[i]))) {
            seterr(err, errlen, path, line, "missing required key '%s'",
                   key_names[required[i]]);
            goto out;
        }
    if (out->cpu_rule == VT_CPU_PER_MEMORY && !(seen & (1u << K_MB_PER_VCPU))) {
        seterr(err, errlen, path, line, "cpu_rule per_memory needs mb_per_vcpu");
        goto out;
    }
    if (out->cpu_rule == VT_CPU_PER_MEMORY && out->mb_per_vcpu < 1) {
        seterr(err, errlen, path, line, "mb_per_vcpu must be at least 1");
        goto out;
    }
    if (out->cpu_rule == VT_CPU_FIXED && !(seen & (1u << K_VCPU))) {
        seterr(err, errlen, path, line, "cpu_rule fixed needs vcpu");
        goto out;
    }
    if (out->memory_min_mb < 1 || out->memory_max_mb < out->memory_min_mb) {
        seterr(err, errlen, path, line,
               "memory range %ld..%ld MiB is empty (need 1 <= memory_min_mb <= memory_max_mb)",
               out->memory_min_mb, out->memory_max_mb);
        goto out;
    }
    if (path) {
        char stem[VT_PLATFORM_NAME_MAX];
        stem_of(path, stem, sizeof stem);
        if (strcmp(stem, out->name) != 0) {
            seterr(err, errlen, path, line, "name '%s' does not match the file name '%s'",
                   out->name, stem);
            goto out;
        }
    }
    rc = 0;
out:
    return rc;
}

int vt_platform_load(const char *dir, const char *name, vt_platform *out,
                     char *err, size_t errlen)
{
    char path[PATH_MAX];
    char text[16384];
    FILE *f = NULL;
    size_t n;
    int rc = -1;

    memset(out, 0, sizeof *out);
    if (snprintf(path, sizeof path, "%s/%s.profile", dir, name) >= (int)sizeof path) {
        seterr(err, errlen, dir, 0, "profiles directory path too long");
        goto out;
    }
    f = fopen(path, "rb");
    if (!f) {
        seterr(err, errlen, path, 0, "cannot open platform profile: %s", strerror(errno));
        goto out;
    }
    n = fread(text, 1, sizeof text, f);
    if (ferror(f)) {
        seterr(err, errlen, path, 0, "read error: %s", strerror(errno));
        goto out;
    }
    if (n == sizeof text) {
        seterr(err, errlen, path, 0, "file larger than %zu bytes", sizeof text - 1);
        goto out;
    }
    rc = vt_platform_parse(path, text, n, out, err, errlen);
out:
    if (f)
        fclose(f);
    return rc;
}

static int has_host_profile(const char *dir)
{
    char p[PATH_MAX];
    struct stat st;

    if (snprintf(p, sizeof p, "%s/host.profile", dir) >= (int)sizeof p)
        return 0;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int vt_platform_find_dir(const char *explicit_dir, char *buf, size_t buflen,
                         char *err, size_t errlen)
{
    char exe[PATH_MAX], rel[PATH_MAX];
    const char *cands[5];
    int n = 0;

    if (explicit_dir) {
        if (!has_host_profile(explicit_dir)) {
            seterr(err, errlen, explicit_dir, 0,
                   "not a profiles directory (no host.profile in it)");
            return -1;
        }
        return copy_text(buf, buflen, explicit_dir) ? (seterr(err, errlen,
                   explicit_dir, 0, "path too long"), -1) : 0;
    }
    const char *envdir = getenv("TUNERD_PROFILES_DIR");
    if (envdir && *envdir) {
        if (!has_host_profile(envdir)) {
            seterr(err, errlen, envdir, 0,
                   "TUNERD_PROFILES_DIR is not a profiles directory (no host.profile in it)");
            return -1;
        }
        cands[n++] = envdir;
    }
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (el > 0) {
        exe[el] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            if (snprintf(rel, sizeof rel, "%s/../share/vsitune/profiles", exe) <
                (int)sizeof rel)
                cands[n++] = rel;
        }
    }
#ifdef TUNERD_PROFILES_DIR
    cands[n++] = TUNERD_PROFILES_DIR;
#endif
#ifdef TUNERD_SOURCE_PROFILES_DIR
    cands[n++] = TUNERD_SOURCE_PROFILES_DIR;
#endif
    for (int i = 0; i < n; i++)
        if (has_host_profile(cands[i]))
            return copy_text(buf, buflen, cands[i]) ? (seterr(err, errlen,
                       cands[i], 0, "path too long"), -1) : 0;
    seterr(err, errlen, "tunerd", 0,
           "no profiles directory found (use --profiles DIR or TUNERD_PROFILES_DIR)");
    return -1;
}
