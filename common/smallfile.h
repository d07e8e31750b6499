/* smallfile.h: read a small file into a caller's buffer without ever
 * blocking on it: compiled into the plugin (stats_oom.c: /proc/self/cgroup,
 * the cgroup's memory.events or memory.oom_control) and tunerd (textfile.h:
 * the oom_file a counters file names), so both read such files one way.
 * Pure apart from the file system; no allocation. */
#ifndef VT_SMALLFILE_H
#define VT_SMALLFILE_H

#include <stddef.h>

/* Reads at most cap-1 bytes of path (one read()) into buf and
 * NUL-terminates it. Opened O_NONBLOCK, read only when it is a regular
 * file (/proc and /sys entries are), so a FIFO or a device there can never
 * make the caller wait. Returns the number of bytes read, or -1 (errno set)
 * when it cannot be opened or read or is not a regular file. */
long vt__read_regular(const char *path, char *buf, size_t cap);

#endif
