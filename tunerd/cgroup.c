/* cgroup.c: this process's cgroup memory limit and CPU quota (cgroup.h).
 *
 * Discovery follows what the kernel documents: /proc/self/cgroup names this
 * process's cgroup per hierarchy ("N:memory:/path" for v1, "0::/path" for
 * v2) and /proc/self/mountinfo says where each hierarchy is mounted and
 * which part of it the mount shows (the "root" field, which is not "/"
 * inside a container's cgroup namespace). When the computed directory does
 * not exist (a namespaced mount showing only our own group), the mount point
 * itself is used. Limits are the tightest between our group and the mount's
 * top, since a parent's limit binds its children. A hybrid host (v1
 * controllers plus an empty v2 tree, like this project's CI machine)
 * reports v1: that is where the limits are. */
#include "cgroup.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "errbuf.h"
#include "textfile.h"

#define UNLIMITED_BYTES (1LL << 60) /* v1 reports ~2^63 rounded to pages */

typedef struct mount_info {
    char dir[PATH_MAX];   /* under sys_root */
    char root[PATH_MAX];  /* mountinfo field 4 */
    int found;
} mount_info;

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
            vt__seterr(src, VT_DETECT_SRC_MAX, "%s", s);
            any = 1;
        } else if (r == 0 && any == -1) {
            vt__seterr(src, VT_DETECT_SRC_MAX, "%s", s);
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

/* dir + "/" + file into out; -1 when it does not fit (no cgroup path is
 * that long: refuse rather than read a truncated name). */
static int join_path(char *out, size_t n, const char *dir, const char *file)
{
    int w = snprintf(out, n, "%s/%s", dir, file);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

static int parse_v1_mem(const char *dir, const char *file, double *v, char *src)
{
    char p[PATH_MAX], b[64];
    char *end;

    if (join_path(p, sizeof p, dir, file) || read_small(p, b, sizeof b))
        return -1;
    long long x = strtoll(b, &end, 10);
    if (end == b)
        return -1;
    vt__seterr(src, VT_DETECT_SRC_MAX, "%s", p);
    if (x <= 0 || x >= UNLIMITED_BYTES)
        return 0;
    *v = (double)x;
    return 1;
}

static int parse_v2_mem(const char *dir, const char *file, double *v, char *src)
{
    char p[PATH_MAX], b[64];
    char *end;

    if (join_path(p, sizeof p, dir, file) || read_small(p, b, sizeof b))
        return -1;
    vt__seterr(src, VT_DETECT_SRC_MAX, "%s", p);
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
    if (join_path(p, sizeof p, dir, "cpu.cfs_quota_us") ||
        join_path(q, sizeof q, dir, "cpu.cfs_period_us"))
        return -1;
    if (read_small(p, b, sizeof b))
        return -1;
    quota = strtoll(b, NULL, 10);
    vt__seterr(src, VT_DETECT_SRC_MAX, "%s", p);
    if (quota <= 0)
        return 0;
    if (read_small(q, b, sizeof b))
        return -1;
    period = strtoll(b, NULL, 10);
    if (period <= 0)
        return -1;
    *v = (double)quota / (double)period;
    vt__seterr(src, VT_DETECT_SRC_MAX, "%s / cpu.cfs_period_us", p);
    return 1;
}

static int parse_v2_cpu(const char *dir, const char *file, double *v, char *src)
{
    char p[PATH_MAX], b[64], q[32];
    long long period = 100000;

    if (join_path(p, sizeof p, dir, file) || read_small(p, b, sizeof b))
        return -1;
    vt__seterr(src, VT_DETECT_SRC_MAX, "%s", p);
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

/* This process's groups from <proc_root>/self/cgroup. Returns 0, or -1 with
 * the reason in src. */
typedef struct self_groups {
    char mem[PATH_MAX], cpu[PATH_MAX], v2[PATH_MAX];
    int have_mem1, have_cpu1, have_v2;
} self_groups;

static int read_self_groups(const char *proc_root, self_groups *g, char *path, size_t cap,
                            char *src)
{
    char line[4096];
    FILE *f;

    memset(g, 0, sizeof *g);
    snprintf(path, cap, "%s/self/cgroup", proc_root);
    f = fopen(path, "r");
    if (!f) {
        vt__seterr(src, VT_DETECT_SRC_MAX, "%s: %s", path, strerror(errno));
        return -1;
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
            snprintf(g->v2, sizeof g->v2, "%s", cg);
            g->have_v2 = 1;
        }
        if (has_opt(ctrls, "memory")) {
            snprintf(g->mem, sizeof g->mem, "%s", cg);
            g->have_mem1 = 1;
        }
        if (has_opt(ctrls, "cpu")) {
            snprintf(g->cpu, sizeof g->cpu, "%s", cg);
            g->have_cpu1 = 1;
        }
    }
    fclose(f);
    return 0;
}

void vt__cgroup_detect(const char *sys_root, const char *proc_root, vt_detect *d)
{
    char path[PATH_MAX];
    self_groups g;
    mount_info mem1 = { 0 }, cpu1 = { 0 }, v2 = { 0 };

    if (read_self_groups(proc_root, &g, path, sizeof path, d->cgroup_src))
        return;
    find_mounts(sys_root, proc_root, &mem1, &cpu1, &v2);
    char dir[PATH_MAX];
    double best = 0;
    if (g.have_mem1 || g.have_cpu1) {
        d->cgroup_version = 1;
        vt__seterr(d->cgroup_src, VT_DETECT_SRC_MAX, "%s lists v1 controllers", path);
        if (g.have_mem1 && mem1.found) {
            group_dir(&mem1, g.mem, dir, sizeof dir);
            int r = walk_min(dir, mem1.dir, "memory.limit_in_bytes", parse_v1_mem, &best,
                             d->cg_memory_src);
            d->cg_memory_mb = r == 1 ? (long)(best / (1024.0 * 1024.0)) : r == 0 ? -1 : 0;
        }
        if (g.have_cpu1 && cpu1.found) {
            group_dir(&cpu1, g.cpu, dir, sizeof dir);
            int r = walk_min(dir, cpu1.dir, "cpu.cfs_quota_us", parse_v1_cpu, &best,
                             d->cg_cpus_src);
            d->cg_cpus = r == 1 ? best : r == 0 ? -1 : 0;
        }
    } else if (g.have_v2 && v2.found) {
        d->cgroup_version = 2;
        vt__seterr(d->cgroup_src, VT_DETECT_SRC_MAX, "%s: 0::%s", path, g.v2);
        group_dir(&v2, g.v2, dir, sizeof dir);
        int r = walk_min(dir, v2.dir, "memory.max", parse_v2_mem, &best, d->cg_memory_src);
        d->cg_memory_mb = r == 1 ? (long)(best / (1024.0 * 1024.0)) : r == 0 ? -1 : 0;
        r = walk_min(dir, v2.dir, "cpu.max", parse_v2_cpu, &best, d->cg_cpus_src);
        d->cg_cpus = r == 1 ? best : r == 0 ? -1 : 0;
    } else {
        vt__seterr(d->cgroup_src, VT_DETECT_SRC_MAX, "%s lists no usable cgroup", path);
    }
}

static int read_u64(const char *dir, const char *file, uint64_t *v)
{
    char p[PATH_MAX], b[64], *end;
    unsigned long long x;

    if (join_path(p, sizeof p, dir, file) || read_small(p, b, sizeof b))
        return -1;
    x = strtoull(b, &end, 10);
    if (end == b)
        return -1;
    *v = (uint64_t)x;
    return 0;
}

int vt__cgroup_parse_oom_kill(const char *text, uint64_t *v)
{
    for (const char *l = text; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        char *end;
        if (strncmp(l, "oom_kill ", 9) != 0)
            continue;
        *v = strtoull(l + 9, &end, 10);
        return end == l + 9 || (*end && *end != '\n') ? -1 : 0;
    }
    return -1;
}

/* "oom_kill N" in dir/file; the file's path into out. */
static int read_oom(const char *dir, const char *file, uint64_t *v, char *out, size_t cap)
{
    char p[PATH_MAX], text[2048];

    if (join_path(p, sizeof p, dir, file) || read_small(p, text, sizeof text) ||
        vt__cgroup_parse_oom_kill(text, v))
        return -1;
    snprintf(out, cap, "%s", p);
    return 0;
}

/* The files one cgroup version keeps a group's memory in. */
typedef struct mem_files {
    int version;
    const char *usage, *limit, *oom;
    int (*parse_limit)(const char *dir, const char *file, double *v, char *src);
} mem_files;

static const mem_files mem_v1 = {1, "memory.usage_in_bytes", "memory.limit_in_bytes",
                                 "memory.oom_control", parse_v1_mem};
static const mem_files mem_v2 = {2, "memory.current", "memory.max", "memory.events",
                                 parse_v2_mem};

void vt__cgroup_memory(const char *sys_root, const char *proc_root, vt_cgroup_mem *m)
{
    char path[PATH_MAX], src[VT_DETECT_SRC_MAX], dir[PATH_MAX];
    self_groups g;
    mount_info mem1 = { 0 }, cpu1 = { 0 }, v2 = { 0 };
    const mount_info *mnt;
    const mem_files *mf;
    const char *group;
    double best = 0;
    int r;

    memset(m, 0, sizeof *m);
    if (read_self_groups(proc_root, &g, path, sizeof path, src))
        return;
    find_mounts(sys_root, proc_root, &mem1, &cpu1, &v2);
    if (g.have_mem1 && mem1.found) {
        mf = &mem_v1;
        mnt = &mem1;
        group = g.mem;
    } else if (g.have_v2 && v2.found) {
        mf = &mem_v2;
        mnt = &v2;
        group = g.v2;
    } else {
        return;
    }
    m->version = mf->version;
    group_dir(mnt, group, dir, sizeof dir);
    m->has_usage = read_u64(dir, mf->usage, &m->usage_bytes) == 0;
    r = walk_min(dir, mnt->dir, mf->limit, mf->parse_limit, &best, src);
    m->has_oom = read_oom(dir, mf->oom, &m->oom_kills, m->oom_file, sizeof m->oom_file) == 0;
    snprintf(m->dir, sizeof m->dir, "%s", dir);
    if (r == 1) {
        m->has_limit = 1;
        m->limit_bytes = (uint64_t)best;
    }
}
