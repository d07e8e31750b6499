/* cgroup.h: read this process's cgroup limits (v1 or v2) into a vt_detect.
 *
 * Internal to detect.c; separate because cgroup discovery (mountinfo, the
 * namespace root, walking to the top) is its own design. */
#ifndef VT_TUNERD_CGROUP_H
#define VT_TUNERD_CGROUP_H

#include <stdint.h>

#include "detect.h"

/* Fills d->cgroup_version, cgroup_src, cg_memory_mb (+src) and cg_cpus
 * (+src) from <proc_root>/self/{cgroup,mountinfo} and the files under
 * sys_root (which replaces /sys). What cannot be found stays 0 with the
 * reason in the _src field. Reads files only; no allocation. */
void vt__cgroup_detect(const char *sys_root, const char *proc_root, vt_detect *d);

/* This process's memory cgroup, for `watch` and `stats`: what it holds now,
 * its limit (the tightest up to the top) and the kernel's oom_kill count. */
typedef struct vt_cgroup_mem {
    int version;              /* 0: no memory cgroup found (nothing below is set) */
    char dir[4096];           /* the group's directory */
    int has_usage;
    uint64_t usage_bytes;     /* v1 memory.usage_in_bytes, v2 memory.current */
    int has_limit;            /* 0: unlimited or unknown */
    uint64_t limit_bytes;
    int has_oom;
    uint64_t oom_kills;       /* v1 memory.oom_control, v2 memory.events: oom_kill */
    char oom_file[4096];
} vt_cgroup_mem;

/* The count of the "oom_kill N" line of a v1 memory.oom_control or v2
 * memory.events text; -1 when there is none. */
int vt__cgroup_parse_oom_kill(const char *text, uint64_t *v);

/* Fills *m (always initialised) from the same discovery as detect. */
void vt__cgroup_memory(const char *sys_root, const char *proc_root, vt_cgroup_mem *m);

#endif
