/* statsdir.h: the directory of counters the plugin publishes, and whose
 * processes are still there.
 *
 * `tunerd stats` lists VSITUNE_STATS_DIR/vsitune-<pid>.json with the state of
 * the process that wrote each file; `tunerd watch` adds a running process's
 * counters to its memory row. The state rule (docs/tuning.md, "stats"):
 *   exited          the file says "exited": true (the plugin's exit dump);
 *   running         <proc>/<pid> exists, is not a zombie, and started no
 *                   later than the counters' time (+1 s for rounding);
 *   ended           gone without the exit dump, but the file says it was a
 *                   fork() child and its cgroup's oom_kill count is still
 *                   the one it recorded: a pool worker that left through
 *                   _exit(), as Python's multiprocessing fork workers do
 *                   (or a signal other than the OOM killer's: a fork child's
 *                   crash looks the same);
 *   killed-or-gone  anything else: no such pid, a zombie that never ran the
 *                   exit dump, or a pid reused by a process started after
 *                   the counters were written. Killed by a signal (the OOM
 *                   killer's SIGKILL), crashed, or left through _exit().
 * Bounded: at most `cap` entries per scan, files of at most
 * VT_STATS_FILE_MAX bytes, opened O_NONBLOCK|O_NOFOLLOW and only when they
 * are regular files, so nothing in the directory can make a scan hang. */
#ifndef VT_TUNERD_STATSDIR_H
#define VT_TUNERD_STATSDIR_H

#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "cgroup.h"
#include "statsfile.h"

#define VT_STATSDIR_MAX 4096

typedef enum vt_pstate {
    VT_PSTATE_RUNNING = 0,
    VT_PSTATE_EXITED = 1,
    VT_PSTATE_GONE = 2,
    VT_PSTATE_ENDED = 3
} vt_pstate;
#define VT_PSTATE_COUNT 4

typedef struct vt_stats_entry {
    char file[64];        /* base name, vsitune-<pid>.json */
    int ok;               /* 1: rec and state are valid; 0: see error */
    char error[192];      /* why the file is unreadable */
    vt_stats_rec rec;
    vt_pstate state;
    int removed;          /* --clean removed the file */
    dev_t dev;            /* identity of the file read, so --clean never */
    ino_t ino;            /* removes a newer file written under the same name */
} vt_stats_entry;

/* "running", "exited", "killed-or-gone", "ended". */
const char *vt_pstate_name(vt_pstate s);

/* The state of the process that wrote r, from <proc_root>/stat (btime) and
 * <proc_root>/<pid>/stat (state, start time). Reads two small files. */
vt_pstate vt_stats_state(const vt_stats_rec *r, const char *proc_root);

/* Reads every vsitune-<digits>.json of dir into out (at most cap entries;
 * *n_found gets how many there are), with each process's state. Readable
 * entries come first, by pid, then the unreadable ones by name. Returns
 * the number of entries filled, or -1 with err set when dir cannot be
 * listed. No allocation survives the call. */
int vt_stats_scan(const char *dir, const char *proc_root, vt_stats_entry *out, int cap,
                  int *n_found, char *err, size_t errlen);

/* The counters of a running pid from dir/vsitune-<pid>.json: 0 and *out
 * set when the file parses and its writer is that running process; -1
 * otherwise. */
int vt_stats_lookup(const char *dir, const char *proc_root, int pid, vt_stats_rec *out);

/* --clean: removes the files of entries that are readable and not running,
 * provided the name still holds the file that was read (same device and
 * inode); sets removed. Returns the number of removals that failed (the
 * last failure in err). */
int vt_stats_clean(const char *dir, vt_stats_entry *e, int n, char *err, size_t errlen);

/* The table (one row per process, then one line per unreadable file and
 * per removed file). now gives the counters' age; cg (may be NULL) adds the
 * line with this cgroup's oom_kill count. */
void vt_stats_print(FILE *f, const char *dir, const vt_stats_entry *e, int n, int n_found,
                    time_t now, const vt_cgroup_mem *cg);

/* One "# shared cache PATH: ..." line per shared-cache segment the records
 * name (each once, from its newest record): size, used, the host's hit
 * ratio, processes attached, objects, evictions, repairs. */
void vt_stats_print_shared(FILE *f, const vt_stats_rec *const *r, int n);

/* The record to show r[i]'s shared-cache segment from: the newest of those
 * naming the same segment, when r[i] is the first of them; else (no segment,
 * or one already shown with an earlier record) NULL. Borrowed pointer. */
const vt_stats_rec *vt_stats_shared_pick(const vt_stats_rec *const *r, int n, int i);

/* The same as one JSON object: {"dir", "time", "cgroup", "processes": [...],
 * "unreadable": [...], "not_shown"}. */
void vt_stats_print_json(FILE *f, const char *dir, const vt_stats_entry *e, int n,
                         int n_found, time_t now, const vt_cgroup_mem *cg);

#endif
