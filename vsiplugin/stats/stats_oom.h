/* stats_oom.h: this process's cgroup OOM-kill count, for the counters file.
 *
 * A process the OOM killer takes writes nothing at the end; a fork() child
 * that leaves through _exit() (as Python's multiprocessing workers do) writes
 * nothing either. What tells them apart afterwards is the cgroup's oom_kill
 * count: each counters file records the count when it was written, and
 * `tunerd stats` compares it with the count now (docs/tuning.md, "stats"). */
#ifndef VT_STATS_OOM_H
#define VT_STATS_OOM_H

#include <stddef.h>
#include <stdint.h>

/* Reads the oom_kill count of this process's memory cgroup: cgroup v1
 * memory.oom_control (the memory controller's line in /proc/self/cgroup), else
 * v2 memory.events (the "0::" line), under /sys/fs/cgroup; when the group's
 * directory is not visible there (a container's namespaced mount), the
 * mount's own file. Returns 0 with the file's path (only plain characters) in
 * file and the count in *kills, or -1 when there is none. Which file is found
 * once per process; the count is read at each call (two small reads).
 * Thread-safe. */
int vt__stats_oom_read(char *file, size_t cap, uint64_t *kills);

/* The same from explicit roots and the text of a /proc/<pid>/cgroup file
 * (tests feed fake trees): the path of the file to read into file. */
int vt__stats_oom_find(const char *sys_root, const char *cgroup_text, char *file,
                       size_t cap);

/* The oom_kill line of a memory.oom_control or memory.events file; -1 when
 * there is none. */
int vt__stats_oom_parse(const char *text, uint64_t *kills);

#endif
