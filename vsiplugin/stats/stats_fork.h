/* stats_fork.h: is this process a fork() child of its parent, with no exec
 * since? For the counters file (stats.c).
 *
 * A fork() child that leaves through _exit() writes no exit record, so its
 * counters file must be kept whole after every read and `tunerd stats` must
 * know it was a fork child (docs/tuning.md, "stats"). When the plugin was
 * loaded before the fork, stats.c's pthread_atfork handler says so. When it
 * is loaded after it (a Python parent that only imported rasterio forks pool
 * workers, and each loads GDAL's plugins at its first open), no handler ran:
 * this module answers from what the kernel shows of the two processes. */
#ifndef VT_STATS_FORK_H
#define VT_STATS_FORK_H

/* 1 when this process's auxiliary vector (/proc/self/auxv) is byte for byte
 * its parent's (/proc/<getppid()>/auxv) while the address space is
 * randomised: fork() copies the parent's vector, execve() builds a new one
 * whose addresses (program headers, vDSO, the random bytes on the new stack)
 * differ. 0 when it differs, when either file cannot be read (another user's
 * parent, no /proc), or when randomisation is off for this process or the
 * host (then an exec'd child of the same program may look the same).
 * Reads three small files; no allocation; thread-safe. */
int vt__stats_fork_child(void);

/* The comparison alone, on two files and a randomisation setting (the
 * content of /proc/sys/kernel/randomize_va_space: "0" means off; NULL is
 * not read): tests feed their own. */
int vt__stats_fork_same_image(const char *self_auxv, const char *parent_auxv,
                              const char *randomize_file);

#endif
