/* detect.c: platform and limits from env vars, cgroups, affinity, meminfo.
 *
 * cgroup discovery follows what the kernel documents: /proc/self/cgroup
 * names this process's cgroup per hierarchy ("N:memory:/path" for v1,
 * "0::/path" for v2) and /proc/self/mountinfo says where each hierarchy is
 * mounted and which part of it the mount shows (the "root" field, which is
 * not "/" inside a container's cgroup namespace). When the computed
 * directory does not exist (a namespaced mount showing only our own group),
 * the mount point itself is used. Limits are the tightest between our group
 * and the mount's top, since a parent's limit binds its children. A hybrid
 * host (v1 controllers plus an empty v2 tree, like this project's CI
 * machine) reports v1: that is where the limits are. */
#include "detect.h"
#include "textfile.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define UNLIMITED_BYTES (1LL << 60) /* v1 reports ~2^63 rounded to pages */

typedef struct mount_info {
    char dir[PATH_MAX];   /* under sys_root */
    char root[PATH_MAX];  /* mountinfo field 4 */
    int found;
} mount_info;

static void setsrc(char *dst, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void setsrc(char *dst, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(dst, VT_DETECT_SRC_MAX, fmt, ap);
    va_end(ap);
}

static int read_small(const char *path, char *buf, size_t cap)
{
    return vt__read_text(path, buf, cap) < 0 ? -1 : 0;
}

static int is_dir(const char *p)
{
    struct stat st;

    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A mount point like /sys/fs/cgroup/memory, moved under sys_root. */
static int under_sys(const char *sys_root, const char *mp, char *out, size_t cap)
{
    if (strncmp(mp, "/sys", 4) != 0 || (mp[4] != '/' && mp[4] != '\0'))
        return -1;
    return snprintf(out, cap, "%s%s", sys_root, mp + 4) < (int)cap ? 0 : -1;
}

static int has_opt(const char *opts, const char *want)
{
    size_t wl = strlen(want);

    for (const char *p = opts; p && *p;) {
        const char *c = strchr(p, ',');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if (l == wl && strncmp(p, want, wl) == 0)
            return 1;
        p = c ? c + 1 : NULL;
    }
    return 0;
}

/* Finds v1 memory, v1 cpu and v2 mounts from mountinfo (or defaults). */
static void find_mounts(const char *sys_root, const char *proc_root,
                        mount_info *mem1, mount_info *cpu1, mount_info *v2)
{
    char path[PATH_MAX], line[4096];
    FILE *f;

    snprintf(path, sizeof path, "%s/self/mountinfo", proc_root);
    f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        char *fields[12] = { 0 }, *save = NULL, *dash = strstr(line, " - ");
        int n = 0;
        if (!dash)
            continue;
        *dash = '\0';
        for (char *t = strtok_r(line, " ", &save); t && n < 12; t = strtok_r(NULL, " ", &save))
            fields[n++] = t;
        if (n < 5)
            continue;
        char *rest = dash + 3, *save2 = NULL;
        char *fstype = strtok_r(rest, " ", &save2);
        strtok_r(NULL, " ", &save2); /* source */
        char *super = strtok_r(NULL, " \n", &save2);
        if (!fstype)
            continue;
        mount_info *m = NULL;
        if (strcmp(fstype, "cgroup2") == 0)
            m = v2;
        else if (strcmp(fstype, "cgroup") == 0 && super && has_opt(super, "memory"))
            m = mem1;
        else if (strcmp(fstype, "cgroup") == 0 && super && has_opt(super, "cpu"))
            m = cpu1;
        if (!m || m->found)
            continue;
        if (under_sys(sys_root, fields[4], m->dir, sizeof m->dir) != 0)
            continue;
        snprintf(m->root, sizeof m->root, "%s", fields[3]);
        m->found = 1;
    }
    if (f)
        fclose(f);
    /* No mountinfo (or a fake tree without one): the conventional places. */
    if (!mem1->found) {
        snprintf(mem1->dir, sizeof mem1->dir, "%s/fs/cgroup/memory", sys_root);
        snprintf(mem1->root, sizeof mem1->root, "/");
        mem1->found = is_dir(mem1->dir) ? 2 : 0;
    }
    if (!cpu1->found) {
        const char *names[] = { "cpu,cpuacct", "cpu", "cpuacct,cpu" };
        for (int i = 0; i < 3 && !cpu1->found; i++) {
            snprintf(cpu1->dir, sizeof cpu1->dir, "%s/fs/cgroup/%s", sys_root, names[i]);
            snprintf(cpu1->root, sizeof cpu1->root, "/");
            cpu1->found = is_dir(cpu1->dir) ? 2 : 0;
        }
    }
    if (!v2->found) {
        snprintf(v2->dir, sizeof v2->dir, "%s/fs/cgroup", sys_root);
        snprintf(v2->root, sizeof v2->root, "/");
        char probe[PATH_MAX + 32];
        snprintf(probe, sizeof probe, "%s/cgroup.controllers", v2->dir);
        struct stat st;
        v2->found = stat(probe, &st) == 0 ? 2 : 0;
    }
}

/* Our cgroup directory in a hierarchy: mount dir + (path minus mount root). */
static void group_dir(const mount_info *m, const char *cgpath, char *out, size_t cap)
{
    const char *rel = cgpath;
    size_t rl = strlen(m->root);

    if (strcmp(m->root, "/") != 0 && strncmp(cgpath, m->root, rl) == 0 &&
        (cgpath[rl] == '/' || cgpath[rl] == '\0'))
        rel = cgpath + rl;
    if (strcmp(rel, "/") == 0)
        rel = "";
    snprintf(out, cap, "%s%s", m->dir, rel);
    if (!is_dir(out))
        snprintf(out, cap, "%s", m->dir);
}

/* Walks from dir up to top reading `file` with parse(); keeps the smallest
 * limited value. parse returns 1 = limited (value set), 0 = unlimited,
 * -1 = missing/invalid. Returns 1 limited, 0 unlimited seen, -1 nothing. */
static int walk_min(const char *dir, const char *top, const char *file,
                    int (*parse)(const char *dir, const char *file, double *v, char *src),
                    double *best, char *src)
{
    char cur[PATH_MAX], s[VT_DETECT_SRC_MAX];
    int any = -1;
    size_t tl = strlen(top);

    snprintf(cur, sizeof cur, "%s", dir);
    for (;;) {
        double v;
        int r = parse(cur, file, &v, s);
        if (r == 1 && (any != 1 || v < *best)) {
            *best = v;
            setsrc(src, "%s", s);
            any = 1;
        } else if (r == 0 && any == -1) {
            setsrc(src, "%s", s);
            any = 0;
        }
        if (strlen(cur) <= tl)
            break;
        char *slash = strrchr(cur, '/');
        if (!slash || (size_t)(slash - cur) < tl)
            break;
        *slash = '\0';
    }
    return any;
}

static int parse_v1_mem(const char *dir, const char *file, double *v, char *src)
{
    char p[PATH_MAX], b[64];
    char *end;

    snprintf(p, sizeof p, "%s/%s", dir, file);
    if (read_small(p, b, sizeof b))
        return -1;
    long long x = strtoll(b, &end, 10);
    if (end == b)
        return -1;
    setsrc(src, "%s", p);
    if (x <= 0 || x >= UNLIMITED_BYTES)
        return 0;
    *v = (double)x;
    return 1;
}

static int parse_v2_mem(const char *dir, const char *file, double *v, char *src)
{
    char p[PATH_MAX], b[64];
    char *end;

    snprintf(p, sizeof p, "%s/%s", dir, file);
    if (read_small(p, b, sizeof b))
        return -1;
    setsrc(src, "%s", p);
    if (strncmp(b, "max", 3) == 0)
        return 0;
    long long x = strtoll(b, &end, 10);
    if (end == b || x <= 0)
        return -1;
    *v = (double)x;
    return 1;
}

static int parse_v1_cpu(const char *dir, const char *file, double *v, char *src)
{
    char p[PATH_MAX], q[PATH_MAX], b[64];
    long long quota, period;

    (void)file;
    snprintf(p, sizeof p, "%s/cpu.cfs_quota_us", dir);
    snprintf(q, sizeof q, "%s/cpu.cfs_period_us", dir);
    if (read_small(p, b, sizeof b))
        return -1;
    quota = strtoll(b, NULL, 10);
    setsrc(src, "%s", p);
    if (quota <= 0)
        return 0;
    if (read_small(q, b, sizeof b))
        return -1;
    period = strtoll(b, NULL, 10);
    if (period <= 0)
        return -1;
    *v = (double)quota / (double)period;
    setsrc(src, "%s / cpu.cfs_period_us", p);
    return 1;
}

static int parse_v2_cpu(const char *dir, const char *file, double *v, char *src)
{
    char p[PATH_MAX], b[64], q[32];
    long long period = 100000;

    snprintf(p, sizeof p, "%s/%s", dir, file);
    if (read_small(p, b, sizeof b))
        return -1;
    setsrc(src, "%s", p);
    if (sscanf(b, "%31s %lld", q, &period) < 1)
        return -1;
    if (strcmp(q, "max") == 0)
        return 0;
    char *end;
    long long quota = strtoll(q, &end, 10);
    if (*end || quota <= 0 || period <= 0)
        return -1;
    *v = (double)quota / (double)period;
    return 1;
}

static void detect_cgroups(const char *sys_root, const char *proc_root, vt_detect *d)
{
    char path[PATH_MAX], line[4096], mempath[PATH_MAX] = "", cpupath[PATH_MAX] = "",
         v2path[PATH_MAX] = "";
    int have_mem1 = 0, have_cpu1 = 0, have_v2 = 0;
    mount_info mem1 = { 0 }, cpu1 = { 0 }, v2 = { 0 };
    FILE *f;

    snprintf(path, sizeof path, "%s/self/cgroup", proc_root);
    f = fopen(path, "r");
    if (!f) {
        setsrc(d->cgroup_src, "%s: %s", path, strerror(errno));
        return;
    }
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *ctrls = c1 + 1, *cg = c2 + 1;
        if (*ctrls == '\0') {
            snprintf(v2path, sizeof v2path, "%s", cg);
            have_v2 = 1;
        }
        if (has_opt(ctrls, "memory")) {
            snprintf(mempath, sizeof mempath, "%s", cg);
            have_mem1 = 1;
        }
        if (has_opt(ctrls, "cpu")) {
            snprintf(cpupath, sizeof cpupath, "%s", cg);
            have_cpu1 = 1;
        }
    }
    fclose(f);

    find_mounts(sys_root, proc_root, &mem1, &cpu1, &v2);
    char dir[PATH_MAX];
    double best = 0;
    if (have_mem1 || have_cpu1) {
        d->cgroup_version = 1;
        setsrc(d->cgroup_src, "%s (v1 controllers listed)", path);
        if (have_mem1 && mem1.found) {
            group_dir(&mem1, mempath, dir, sizeof dir);
            int r = walk_min(dir, mem1.dir, "memory.limit_in_bytes", parse_v1_mem, &best,
                             d->cg_memory_src);
            d->cg_memory_mb = r == 1 ? (long)(best / (1024.0 * 1024.0)) : r == 0 ? -1 : 0;
        }
        if (have_cpu1 && cpu1.found) {
            group_dir(&cpu1, cpupath, dir, sizeof dir);
            int r = walk_min(dir, cpu1.dir, "cpu.cfs_quota_us", parse_v1_cpu, &best,
                             d->cg_cpus_src);
            d->cg_cpus = r == 1 ? best : r == 0 ? -1 : 0;
        }
    } else if (have_v2 && v2.found) {
        d->cgroup_version = 2;
        setsrc(d->cgroup_src, "%s (0::%s)", path, v2path);
        group_dir(&v2, v2path, dir, sizeof dir);
        int r = walk_min(dir, v2.dir, "memory.max", parse_v2_mem, &best, d->cg_memory_src);
        d->cg_memory_mb = r == 1 ? (long)(best / (1024.0 * 1024.0)) : r == 0 ? -1 : 0;
        r = walk_min(dir, v2.dir, "cpu.max", parse_v2_cpu, &best, d->cg_cpus_src);
        d->cg_cpus = r == 1 ? best : r == 0 ? -1 : 0;
    } else {
        setsrc(d->cgroup_src, "%s lists no usable cgroup", path);
    }
}

static int count_cpu_list(const char *s)
{
    int n = 0;

    while (*s && *s != '\n') {
        char *end;
        long a = strtol(s, &end, 10), b;
        if (end == s)
            return 0;
        b = a;
        s = end;
        if (*s == '-') {
            b = strtol(s + 1, &end, 10);
            if (end == s + 1)
                return 0;
            s = end;
        }
        if (b >= a)
            n += (int)(b - a + 1);
        if (*s == ',')
            s++;
    }
    return n;
}

static void detect_affinity(const char *proc_root, int fake_proc, vt_detect *d)
{
    char path[PATH_MAX], line[4096];
    FILE *f;

    if (fake_proc) {
        snprintf(path, sizeof path, "%s/self/status", proc_root);
        f = fopen(path, "r");
        while (f && fgets(line, sizeof line, f)) {
            if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
                d->affinity_cpus = count_cpu_list(line + 18 + strspn(line + 18, " \t"));
                setsrc(d->affinity_src, "%s Cpus_allowed_list", path);
            }
        }
        if (f)
            fclose(f);
        if (d->affinity_cpus > 0)
            return;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        d->affinity_cpus = CPU_COUNT(&set);
        setsrc(d->affinity_src, "sched_getaffinity");
    } else {
        setsrc(d->affinity_src, "sched_getaffinity: %s", strerror(errno));
    }
}

static void detect_meminfo(const char *proc_root, vt_detect *d)
{
    char path[PATH_MAX], line[256];
    FILE *f;
    long kb;

    snprintf(path, sizeof path, "%s/meminfo", proc_root);
    f = fopen(path, "r");
    if (!f) {
        setsrc(d->meminfo_src, "%s: %s", path, strerror(errno));
        return;
    }
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "MemTotal: %ld kB", &kb) == 1)
            d->mem_total_mb = kb / 1024;
        else if (sscanf(line, "MemAvailable: %ld kB", &kb) == 1)
            d->mem_available_mb = kb / 1024;
    }
    fclose(f);
    setsrc(d->meminfo_src, "%s", path);
}

/* Platform from the profiles' detect_env lines, in vt_platform_names order. */
static int detect_platform(const char *profiles_dir, vt_detect *d, char *err, size_t errlen)
{
    vt_platform p;

    for (int i = 0; vt_platform_names[i]; i++) {
        if (vt_platform_load(profiles_dir, vt_platform_names[i], &p, err, errlen))
            return -1;
        for (int j = 0; j < p.n_detect_env; j++) {
            const char *v = getenv(p.detect_env[j]);
            if (!v || !*v)
                continue;
            snprintf(d->platform, sizeof d->platform, "%s", p.name);
            setsrc(d->platform_src, "env %s is set", p.detect_env[j]);
            if (p.memory_env[0]) {
                const char *m = getenv(p.memory_env);
                char *end;
                long mb = m ? strtol(m, &end, 10) : 0;
                if (m && *m && !*end && mb > 0) {
                    d->platform_memory_mb = mb;
                    setsrc(d->platform_memory_src, "env %s", p.memory_env);
                } else if (m && *m) {
                    setsrc(d->warning, "env %s=%s is not a whole number of MB",
                           p.memory_env, m);
                }
            }
            return 0;
        }
    }
    snprintf(d->platform, sizeof d->platform, "host");
    setsrc(d->platform_src, "no platform variable set");
    return 0;
}

int vt_detect_run(const vt_detect_opts *opts, vt_detect *d, char *err, size_t errlen)
{
    const char *sys_root = opts->sys_root, *proc_root = opts->proc_root;
    int fake_proc;

    memset(d, 0, sizeof *d);
    if (!sys_root || !*sys_root)
        sys_root = getenv("TUNERD_SYSFS_ROOT");
    if (!sys_root || !*sys_root)
        sys_root = "/sys";
    if (!proc_root || !*proc_root)
        proc_root = getenv("TUNERD_PROCFS_ROOT");
    if (!proc_root || !*proc_root)
        proc_root = "/proc";
    fake_proc = strcmp(proc_root, "/proc") != 0;

    if (detect_platform(opts->profiles_dir, d, err, errlen))
        return -1;
    detect_cgroups(sys_root, proc_root, d);
    detect_affinity(proc_root, fake_proc, d);
    detect_meminfo(proc_root, d);

    /* Effective memory: the platform's word, else the cgroup, else RAM. */
    if (d->platform_memory_mb > 0) {
        d->memory_mb = d->platform_memory_mb;
        setsrc(d->memory_src, "%s", d->platform_memory_src);
    } else if (d->cg_memory_mb > 0 &&
               (d->mem_total_mb == 0 || d->cg_memory_mb <= d->mem_total_mb)) {
        d->memory_mb = d->cg_memory_mb;
        setsrc(d->memory_src, "cgroup v%d %s", d->cgroup_version, d->cg_memory_src);
    } else if (d->mem_total_mb > 0) {
        d->memory_mb = d->mem_total_mb;
        setsrc(d->memory_src, "%s MemTotal", d->meminfo_src);
    } else {
        setsrc(d->memory_src, "not found");
    }
    /* Effective CPUs: the tighter of the cgroup quota and the affinity mask. */
    if (d->cg_cpus > 0 && (d->affinity_cpus == 0 || d->cg_cpus < d->affinity_cpus)) {
        d->cpus = d->cg_cpus;
        setsrc(d->cpus_src, "cgroup v%d %s", d->cgroup_version, d->cg_cpus_src);
    } else if (d->affinity_cpus > 0) {
        d->cpus = d->affinity_cpus;
        setsrc(d->cpus_src, "%s", d->affinity_src);
    } else {
        setsrc(d->cpus_src, "not found");
    }
    return 0;
}

static void print_mb(FILE *f, const char *what, long mb, const char *src)
{
    if (mb > 0)
        fprintf(f, "%-20s %ld MB (%s)\n", what, mb, src);
    else if (mb < 0)
        fprintf(f, "%-20s unlimited (%s)\n", what, src);
    else
        fprintf(f, "%-20s not found%s%s%s\n", what, *src ? " (" : "", src, *src ? ")" : "");
}

void vt_detect_print(FILE *f, const vt_detect *d)
{
    fprintf(f, "%-20s %s (%s)\n", "platform:", d->platform, d->platform_src);
    if (d->platform_memory_mb > 0)
        fprintf(f, "%-20s %ld MB (%s)\n", "platform memory:", d->platform_memory_mb,
                d->platform_memory_src);
    if (d->cgroup_version)
        fprintf(f, "%-20s v%d (%s)\n", "cgroup:", d->cgroup_version, d->cgroup_src);
    else
        fprintf(f, "%-20s none (%s)\n", "cgroup:", d->cgroup_src);
    if (d->cgroup_version) {
        print_mb(f, "cgroup memory:", d->cg_memory_mb, d->cg_memory_src);
        if (d->cg_cpus > 0)
            fprintf(f, "%-20s %.2f (%s)\n", "cgroup cpus:", d->cg_cpus, d->cg_cpus_src);
        else
            fprintf(f, "%-20s %s (%s)\n", "cgroup cpus:", d->cg_cpus < 0 ? "unlimited"
                    : "not found", d->cg_cpus_src);
    }
    fprintf(f, "%-20s %d (%s)\n", "cpu affinity:", d->affinity_cpus, d->affinity_src);
    print_mb(f, "memory total:", d->mem_total_mb, d->meminfo_src);
    print_mb(f, "memory available:", d->mem_available_mb, d->meminfo_src);
    if (d->warning[0])
        fprintf(f, "%-20s %s (ignored)\n", "warning:", d->warning);
    print_mb(f, "=> memory:", d->memory_mb, d->memory_src);
    fprintf(f, "%-20s %.2f (%s)\n", "=> cpus:", d->cpus, d->cpus_src);
}

static void jstr(FILE *f, const char *key, const char *v, int last)
{
    fprintf(f, "  \"%s\": \"", key);
    for (; *v; v++) {
        if (*v == '"' || *v == '\\')
            fputc('\\', f);
        if ((unsigned char)*v < 0x20)
            fprintf(f, "\\u%04x", (unsigned char)*v);
        else
            fputc(*v, f);
    }
    fprintf(f, "\"%s\n", last ? "" : ",");
}

void vt_detect_print_json(FILE *f, const vt_detect *d)
{
    fputs("{\n", f);
    jstr(f, "platform", d->platform, 0);
    jstr(f, "platform_source", d->platform_src, 0);
    fprintf(f, "  \"platform_memory_mb\": %ld,\n", d->platform_memory_mb);
    jstr(f, "platform_memory_source", d->platform_memory_src, 0);
    fprintf(f, "  \"cgroup_version\": %d,\n", d->cgroup_version);
    jstr(f, "cgroup_source", d->cgroup_src, 0);
    fprintf(f, "  \"cgroup_memory_mb\": %ld,\n", d->cg_memory_mb);
    jstr(f, "cgroup_memory_source", d->cg_memory_src, 0);
    fprintf(f, "  \"cgroup_cpus\": %.4g,\n", d->cg_cpus);
    jstr(f, "cgroup_cpus_source", d->cg_cpus_src, 0);
    fprintf(f, "  \"affinity_cpus\": %d,\n", d->affinity_cpus);
    jstr(f, "affinity_source", d->affinity_src, 0);
    fprintf(f, "  \"mem_total_mb\": %ld,\n  \"mem_available_mb\": %ld,\n",
            d->mem_total_mb, d->mem_available_mb);
    jstr(f, "meminfo_source", d->meminfo_src, 0);
    jstr(f, "warning", d->warning, 0);
    fprintf(f, "  \"memory_mb\": %ld,\n", d->memory_mb);
    jstr(f, "memory_source", d->memory_src, 0);
    fprintf(f, "  \"cpus\": %.4g,\n", d->cpus);
    jstr(f, "cpus_source", d->cpus_src, 1);
    fputs("}\n", f);
}
