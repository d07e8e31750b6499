/* watch.h: per-process memory of the processes that loaded libgdal.
 *
 * `tunerd watch` answers "is my pool within its ledger?" on a live system:
 * it finds processes whose /proc/PID/maps maps a library matching "libgdal"
 * and reports RSS, PSS (shared pages divided among their sharers: the
 * honest number for forked workers, seed 002) and anonymous memory from
 * /proc/PID/smaps_rollup. Bounded: at most VT_WATCH_MAX processes per
 * sample, and the caller gives the number of samples. */
#ifndef VT_TUNERD_WATCH_H
#define VT_TUNERD_WATCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define VT_WATCH_MAX 256

typedef struct vt_watch_proc {
    int pid;
    char comm[32];
    long rss_kb;   /* -1 = unknown */
    long pss_kb;   /* -1 = unknown (no smaps_rollup) */
    long anon_kb;  /* -1 = unknown */
    int has_stats; /* the plugin's counters below are this process's (set by
                    * the caller from statsdir.h; the scan leaves it 0) */
    uint64_t requests;
    uint64_t cache_bytes; /* retained in the plugin's range cache */
} vt_watch_proc;

/* Scans <proc_root>/[0-9]* for processes mapping a file whose path contains
 * `match`. Fills up to `cap` entries sorted by pid; *n_found gets the
 * number that matched (may exceed cap). Processes that vanish or cannot be
 * read are skipped. Returns the number of entries filled, or -1 with err
 * set when proc_root cannot be listed. No allocation survives the call. */
int vt_watch_scan(const char *proc_root, const char *match, vt_watch_proc *out,
                  int cap, int *n_found, char *err, size_t errlen);

/* Prints one sample: a row per process and a total row, each starting with
 * the time label. With stats_cols, two more columns after anon_mb: the
 * plugin's requests and retained cache MB ("-" for a process without
 * counters). */
void vt_watch_print(FILE *f, const char *when, const vt_watch_proc *p, int n, int n_found,
                    int stats_cols);

#endif
