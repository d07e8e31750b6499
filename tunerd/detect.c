/* detect.c: platform and limits from env vars, cgroups, affinity, meminfo.
 *
 * The platform comes from the profiles' detect_env variables, its memory
 * from memory_env; cgroup limits from cgroup.c; CPUs allowed from the
 * affinity mask (or a fake /proc's Cpus_allowed_list); RAM from
 * /proc/meminfo; the plugin's shared cache from /dev/shm's size (shmfit.h).
 * vt_detect_run then picks the effective memory and CPUs and remembers
 * where each came from. */
#include "detect.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "defaults.h" /* the shared cache's defaults and range */
#include "shmfit.h"
#include "sizeparse.h"

#include "cgroup.h"
#include "errbuf.h"

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
                vt__seterr(d->affinity_src, VT_DETECT_SRC_MAX, "%s Cpus_allowed_list", path);
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
        vt__seterr(d->affinity_src, VT_DETECT_SRC_MAX, "sched_getaffinity");
    } else {
        vt__seterr(d->affinity_src, VT_DETECT_SRC_MAX, "sched_getaffinity: %s", strerror(errno));
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
        vt__seterr(d->meminfo_src, VT_DETECT_SRC_MAX, "%s: %s", path, strerror(errno));
        return;
    }
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "MemTotal: %ld kB", &kb) == 1)
            d->mem_total_mb = kb / 1024;
        else if (sscanf(line, "MemAvailable: %ld kB", &kb) == 1)
            d->mem_available_mb = kb / 1024;
    }
    fclose(f);
    vt__seterr(d->meminfo_src, VT_DETECT_SRC_MAX, "%s", path);
}

/* Platform from the profiles' detect_env lines, in vt_platform_list order
 * (the shipped platforms first, then any other profile by name). */
static int detect_platform(const char *profiles_dir, vt_detect *d, char *err, size_t errlen)
{
    char names[VT_PLATFORM_MAX_FILES][VT_PLATFORM_NAME_MAX];
    int n = vt_platform_list(profiles_dir, names, VT_PLATFORM_MAX_FILES);
    vt_platform p;

    if (n < 0) {
        vt__seterr(err, errlen, "%s: %s", profiles_dir, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (vt_platform_load(profiles_dir, names[i], &p, err, errlen))
            return -1;
        for (int j = 0; j < p.n_detect_env; j++) {
            const char *v = getenv(p.detect_env[j]);
            if (!v || !*v)
                continue;
            snprintf(d->platform, sizeof d->platform, "%s", p.name);
            d->profile = p;
            d->has_profile = 1;
            vt__seterr(d->platform_src, VT_DETECT_SRC_MAX, "env %s is set", p.detect_env[j]);
            if (p.memory_env[0]) {
                const char *m = getenv(p.memory_env);
                char *end;
                long mb = m ? strtol(m, &end, 10) : 0;
                if (m && *m && !*end && mb > 0) {
                    d->platform_memory_mb = mb;
                    vt__seterr(d->platform_memory_src, VT_DETECT_SRC_MAX, "env %s", p.memory_env);
                } else if (m && *m) {
                    vt__seterr(d->warning, VT_DETECT_SRC_MAX, "env %s=%s is not a whole number of MiB",
                           p.memory_env, m);
                }
            }
            return 0;
        }
    }
    snprintf(d->platform, sizeof d->platform, "host");
    vt__seterr(d->platform_src, VT_DETECT_SRC_MAX, "no platform variable set");
    return 0;
}

/* VSITUNE_SHARED_CACHE_SIZE as the plugin reads it (sizeparse.c, the
 * plugin's parser; its range [0, VT_MAX_SHARED_CACHE_SIZE]): def when unset,
 * unreadable or out of range. */
static uint64_t size_env(const char *name, uint64_t def, uint64_t max)
{
    const char *v = getenv(name);
    uint64_t n;

    if (!v || !*v)
        return def;
    return vt__parse_size(v, &n) == 0 && n <= max ? n : def;
}

/* What the plugin's shared cache would get here (the plugin sizes it with
 * the same function when the first process creates the segment). */
static void detect_shm(vt_detect *d)
{
    const char *dir = getenv("VSITUNE_SHM_DIR");
    uint64_t asked = size_env("VSITUNE_SHARED_CACHE_SIZE",
                               VT_DEFAULT_SHARED_CACHE_SIZE,
                               VT_MAX_SHARED_CACHE_SIZE), fit;
    struct statvfs v;
    char why[VT_DETECT_SRC_MAX - 64];

    if (!dir || !*dir)
        dir = VT_DEFAULT_SHM_DIR;
    snprintf(d->shm_dir, sizeof d->shm_dir, "%s", dir);
    d->shared_asked_mb = (long)(asked >> 20);
    if (statvfs(dir, &v) != 0) {
        d->shm_total_mb = d->shm_free_mb = -1;
        vt__seterr(d->shm_src, VT_DETECT_SRC_MAX, "%s: %s: the shared cache is unavailable, "
                   "each process keeps its own", dir, strerror(errno));
        return;
    }
    d->shm_total_mb = (long)(((uint64_t)v.f_blocks * v.f_frsize) >> 20);
    d->shm_free_mb = (long)(((uint64_t)v.f_bavail * v.f_frsize) >> 20);
    if (v.f_flag & ST_RDONLY) {
        vt__seterr(d->shm_src, VT_DETECT_SRC_MAX, "%s: read-only: the shared cache is "
                   "unavailable, each process keeps its own", dir);
        return;
    }
    fit = vt__shm_fit(asked, (uint64_t)v.f_blocks * v.f_frsize,
                      (uint64_t)v.f_bavail * v.f_frsize, 64 * 1024, dir, why, sizeof why);
    d->shared_mb = (long)(fit >> 20);
    vt__seterr(d->shm_src, VT_DETECT_SRC_MAX, "%s%s", why,
               fit ? "" : ": each process keeps its own cache");
}

/* Can multiprocessing make its semaphores here? sem_open() creates a file
 * in /dev/shm: it needs the directory, writable (access() answers EROFS for
 * a read-only mount, even to root). */
static void detect_ipc_shm(vt_detect *d)
{
    struct stat st;

    errno = 0;
    if (stat("/dev/shm", &st) != 0 || !S_ISDIR(st.st_mode)) {
        vt__seterr(d->ipc_shm_src, VT_DETECT_SRC_MAX, "/dev/shm: %s",
                   errno ? strerror(errno) : "not a directory");
        return;
    }
    if (access("/dev/shm", W_OK | X_OK) != 0) {
        vt__seterr(d->ipc_shm_src, VT_DETECT_SRC_MAX, "/dev/shm: %s", strerror(errno));
        return;
    }
    d->ipc_shm = 1;
    vt__seterr(d->ipc_shm_src, VT_DETECT_SRC_MAX, "/dev/shm: writable");
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
    vt__cgroup_detect(sys_root, proc_root, d);
    detect_affinity(proc_root, fake_proc, d);
    detect_meminfo(proc_root, d);
    detect_shm(d);
    detect_ipc_shm(d);

    /* A platform that states its tier in a variable (Lambda, Azure Functions)
     * but did not: the cgroup's limit may stand in for it; the machine's RAM
     * may not (a Lambda microVM's MemTotal is not the function's tier, and a
     * test host's is not a function's at all). */
    if (d->has_profile && d->profile.memory_env[0] && d->platform_memory_mb == 0 &&
        !d->warning[0] && d->cg_memory_mb <= 0)
        vt__seterr(d->warning, VT_DETECT_SRC_MAX, "env %s is not set and no cgroup memory "
                   "limit was found (%s detected: %s)", d->profile.memory_env,
                   d->platform, d->platform_src);
    /* Effective memory: the platform's word, else the cgroup, else RAM. */
    if (d->platform_memory_mb > 0) {
        d->memory_mb = d->platform_memory_mb;
        vt__seterr(d->memory_src, VT_DETECT_SRC_MAX, "%s", d->platform_memory_src);
    } else if (d->cg_memory_mb > 0 &&
               (d->mem_total_mb == 0 || d->cg_memory_mb <= d->mem_total_mb)) {
        d->memory_mb = d->cg_memory_mb;
        vt__seterr(d->memory_src, VT_DETECT_SRC_MAX, "cgroup v%d %s", d->cgroup_version, d->cg_memory_src);
    } else if (d->mem_total_mb > 0) {
        d->memory_mb = d->mem_total_mb;
        vt__seterr(d->memory_src, VT_DETECT_SRC_MAX, "%s MemTotal", d->meminfo_src);
    } else {
        vt__seterr(d->memory_src, VT_DETECT_SRC_MAX, "not found");
    }
    /* Effective CPUs: where the platform's rule fixes them (Lambda: memory
     * decides), the rule, never the host's cores; else the tighter of the
     * cgroup quota and the affinity mask. */
    if (d->has_profile && d->profile.cpu_rule == VT_CPU_PER_MEMORY && d->memory_mb > 0) {
        d->cpus = (double)d->memory_mb / (double)d->profile.mb_per_vcpu;
        if (d->profile.max_vcpu > 0 && d->cpus > d->profile.max_vcpu)
            d->cpus = d->profile.max_vcpu;
        vt__seterr(d->cpus_src, VT_DETECT_SRC_MAX, "%s rule: %ld MiB / %ld MiB per vCPU (not "
                   "the host's %d cores)", d->platform, d->memory_mb, d->profile.mb_per_vcpu,
                   d->affinity_cpus);
    } else if (d->has_profile && d->profile.cpu_rule == VT_CPU_FIXED) {
        d->cpus = d->profile.vcpu;
        vt__seterr(d->cpus_src, VT_DETECT_SRC_MAX, "%s rule: fixed (not the host's %d cores)",
                   d->platform, d->affinity_cpus);
    } else if (d->cg_cpus > 0 && (d->affinity_cpus == 0 || d->cg_cpus < d->affinity_cpus)) {
        d->cpus = d->cg_cpus;
        vt__seterr(d->cpus_src, VT_DETECT_SRC_MAX, "cgroup v%d %s", d->cgroup_version, d->cg_cpus_src);
    } else if (d->affinity_cpus > 0) {
        d->cpus = d->affinity_cpus;
        vt__seterr(d->cpus_src, VT_DETECT_SRC_MAX, "%s", d->affinity_src);
    } else {
        vt__seterr(d->cpus_src, VT_DETECT_SRC_MAX, "not found");
    }
    return 0;
}

static void print_mb(FILE *f, const char *what, long mb, const char *src)
{
    if (mb > 0)
        fprintf(f, "%-20s %ld MiB (%s)\n", what, mb, src);
    else if (mb < 0)
        fprintf(f, "%-20s unlimited (%s)\n", what, src);
    else
        fprintf(f, "%-20s not found%s%s%s\n", what, *src ? " (" : "", src, *src ? ")" : "");
}

void vt_detect_print(FILE *f, const vt_detect *d)
{
    fprintf(f, "%-20s %s (%s)\n", "platform:", d->platform, d->platform_src);
    if (d->platform_memory_mb > 0)
        fprintf(f, "%-20s %ld MiB (%s)\n", "platform memory:", d->platform_memory_mb,
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
    if (d->shm_total_mb >= 0)
        fprintf(f, "%-20s %s: %ld MiB, %ld MiB free\n", "shared memory:", d->shm_dir,
                d->shm_total_mb, d->shm_free_mb);
    else
        fprintf(f, "%-20s %s: not there\n", "shared memory:", d->shm_dir);
    if (d->shared_mb > 0)
        fprintf(f, "%-20s %ld MiB for the host (%s)\n", "=> shared cache:", d->shared_mb,
                d->shm_src);
    else
        fprintf(f, "%-20s none (%s)\n", "=> shared cache:", d->shm_src);
    fprintf(f, "%-20s %s (%s)\n", "=> worker ipc:", d->ipc_shm ? "pool" : "pipe",
            d->ipc_shm_src);
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
    jstr(f, "cpus_source", d->cpus_src, 0);
    jstr(f, "shm_dir", d->shm_dir, 0);
    fprintf(f, "  \"shm_total_mb\": %ld,\n  \"shm_free_mb\": %ld,\n", d->shm_total_mb,
            d->shm_free_mb);
    fprintf(f, "  \"shared_cache_asked_mb\": %ld,\n  \"shared_cache_mb\": %ld,\n",
            d->shared_asked_mb, d->shared_mb);
    jstr(f, "shared_cache_source", d->shm_src, 0);
    jstr(f, "ipc", d->ipc_shm ? "pool" : "pipe", 0);
    jstr(f, "ipc_source", d->ipc_shm_src, 1);
    fputs("}\n", f);
}
