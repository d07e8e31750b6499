/* cgroup.h: read this process's cgroup limits (v1 or v2) into a vt_detect.
 *
 * Internal to detect.c; separate because cgroup discovery (mountinfo, the
 * namespace root, walking to the top) is its own design. */
#ifndef VT_TUNERD_CGROUP_H
#define VT_TUNERD_CGROUP_H

#include "detect.h"

/* Fills d->cgroup_version, cgroup_src, cg_memory_mb (+src) and cg_cpus
 * (+src) from <proc_root>/self/{cgroup,mountinfo} and the files under
 * sys_root (which replaces /sys). What cannot be found stays 0 with the
 * reason in the _src field. Reads files only; no allocation. */
void vt__cgroup_detect(const char *sys_root, const char *proc_root, vt_detect *d);

#endif
