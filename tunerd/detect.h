/* detect.h: which platform and limits this process runs under, and from where.
 *
 * Sources, in order of authority: the platform's own variables
 * (AWS_LAMBDA_FUNCTION_MEMORY_SIZE, K_SERVICE, FUNCTIONS_WORKER_RUNTIME,
 * KUBERNETES_SERVICE_HOST: the detect_env/memory_env lines of the profiles),
 * the cgroup limits (v1 memory.limit_in_bytes and cpu.cfs_quota_us /
 * cpu.cfs_period_us; v2 memory.max and cpu.max, each the tightest along the
 * path to the root), the CPU affinity mask and /proc/meminfo. Every value
 * carries the file or variable it came from, so `tunerd detect` can show it.
 * The /sys and /proc roots are parameters so tests run on fake trees. */
#ifndef VT_TUNERD_DETECT_H
#define VT_TUNERD_DETECT_H

#include <stdio.h>

#include "platform.h"

#define VT_DETECT_SRC_MAX 512

typedef struct vt_detect_opts {
    const char *sys_root;      /* replaces /sys; NULL = $TUNERD_SYSFS_ROOT or /sys */
    const char *proc_root;     /* replaces /proc; NULL = $TUNERD_PROCFS_ROOT or /proc */
    const char *profiles_dir;  /* where the platform profiles are */
} vt_detect_opts;

typedef struct vt_detect {
    char platform[VT_PLATFORM_NAME_MAX];
    char platform_src[VT_DETECT_SRC_MAX];
    long platform_memory_mb;           /* 0 = the platform did not say */
    char platform_memory_src[VT_DETECT_SRC_MAX];

    int cgroup_version;                /* 0 none found, 1, 2 */
    char cgroup_src[VT_DETECT_SRC_MAX];
    long cg_memory_mb;                 /* -1 unlimited, 0 not found */
    char cg_memory_src[VT_DETECT_SRC_MAX];
    double cg_cpus;                    /* -1 unlimited, 0 not found */
    char cg_cpus_src[VT_DETECT_SRC_MAX];

    int affinity_cpus;                 /* 0 = unknown */
    char affinity_src[VT_DETECT_SRC_MAX];
    long mem_total_mb;                 /* 0 = unknown */
    long mem_available_mb;
    char meminfo_src[VT_DETECT_SRC_MAX];

    long memory_mb;                    /* effective; 0 = unknown */
    char memory_src[VT_DETECT_SRC_MAX];
    double cpus;                       /* effective; 0 = unknown */
    char cpus_src[VT_DETECT_SRC_MAX];

    char warning[VT_DETECT_SRC_MAX];   /* e.g. a platform variable that is not a number */

    /* The plugin's shared cache on this host: /dev/shm (VSITUNE_SHM_DIR)
     * and the size the plugin would give its segment (shmfit.h) for
     * VSITUNE_SHARED_CACHE_SIZE (default 192 MiB). */
    char shm_dir[256];
    long shm_total_mb, shm_free_mb;    /* -1: the file system is not there */
    long shared_asked_mb, shared_mb;   /* shared_mb 0: per-process caches instead */
    char shm_src[VT_DETECT_SRC_MAX];   /* what the plugin would say (CPL_DEBUG) */
    /* /dev/shm itself (whatever VSITUNE_SHM_DIR says) is a writable
     * directory: Python's multiprocessing locks, queues and pools make their
     * POSIX semaphores there. 0 (Lambda, a read-only or missing /dev/shm):
     * the plan uses threads or processes talking through pipes only. */
    int ipc_shm;
    char ipc_shm_src[VT_DETECT_SRC_MAX];

    int has_profile;                   /* a platform's variables were found: */
    vt_platform profile;               /* its profile */
} vt_detect;

/* Fills *out (always initialised). Reads files under the roots and the
 * process environment; never fails as a whole: what cannot be found is
 * left 0 with the reason in its _src field. Returns 0, or -1 when the
 * profiles cannot be read (err set, "file:line: message"). */
int vt_detect_run(const vt_detect_opts *opts, vt_detect *out,
                  char *err, size_t errlen);

/* Human-readable report, one "what: value (from where)" per line. */
void vt_detect_print(FILE *f, const vt_detect *d);

/* The same as a JSON object. */
void vt_detect_print_json(FILE *f, const vt_detect *d);

#endif
