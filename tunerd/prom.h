/* prom.h: the Prometheus text exposition of vsitune's counters and memory.
 *
 * `tunerd stats --format prometheus` (for node-exporter's textfile
 * collector) and `tunerd watch --listen` (scraped by Prometheus) render the
 * same families: one series per process with a `pid` label (a host total is
 * the sum over pids, so it is never a series of its own), bounded labels
 * only (pid, kind, status_class, state, le, backend; segment: the shared cache
 * segments, one or two per host), names and units after the
 * Prometheus conventions (`_total` counters, `_bytes`, `_seconds`). Format:
 * text exposition 0.0.4, every family's samples together under one HELP and
 * one TYPE line. Pure formatting: the callers gather the inputs. */
#ifndef VT_TUNERD_PROM_H
#define VT_TUNERD_PROM_H

#include <stdio.h>

#include "cgroup.h"
#include "statsdir.h"
#include "watch.h"

/* Everything one exposition shows; any part may be absent (NULL / 0). */
typedef struct vt_prom_in {
    const vt_stats_entry *stats; /* the counters files (unreadable ones count only) */
    int n_stats;
    int stats_dir_given;         /* 0: no counters directory (no counters families) */
    const vt_watch_proc *procs;  /* the libgdal processes' memory (watch only) */
    int n_procs;
    const vt_cgroup_mem *cg;     /* this cgroup's usage, limit, oom kills */
} vt_prom_in;

/* Writes the exposition to f. Returns 0, or -1 on a write error. */
int vt_prom_write(FILE *f, const vt_prom_in *in);

#endif
