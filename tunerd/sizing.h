/* sizing.h: the sizing model: memory tier + vCPU -> workers, caches, ledger.
 *
 * Pure arithmetic over a vt_platform and the user's request, no I/O, so the
 * known-answer tests (docs/tuning.md's table) run it directly. The model and
 * its sources are written down in docs/tuning.md; the constants below are
 * the model's coefficients and are quoted there. */
#ifndef VT_TUNERD_SIZING_H
#define VT_TUNERD_SIZING_H

#include <stddef.h>

#include "platform.h"

/* Coefficients (MB unless stated). See docs/tuning.md "The ledger". */
#define VT_SIZE_RUNTIME_MB 128      /* python + numpy + rasterio + libgdal, per process */
#define VT_SIZE_ARRAYS_BATCH_MB 64  /* working arrays per batch worker */
#define VT_SIZE_ARRAYS_TILE_MB 16   /* working arrays per tile thread */
#define VT_SIZE_CACHE_PCT 20        /* block cache budget, % of the tier, divided */
#define VT_SIZE_CACHE_GRANULE_MB 32
#define VT_SIZE_RANGE_PCT 5         /* range cache budget, % of the tier, divided */
#define VT_SIZE_RANGE_GRANULE_MB 16
#define VT_SIZE_RANGE_MAX_MB 64     /* twice the plugin's default
                                       VSITUNE_CACHE_SIZE: a profile sizes it from
                                       the tier's memory, the default cannot */
#define VT_SIZE_HEADROOM_PCT 10
#define VT_SIZE_HEADROOM_MIN_MB 32
#define VT_SIZE_TILE_THREADS 4      /* the GIL plateau (seed 000) */
#define VT_SIZE_MAX_MEMORY_MB (1024L * 1024) /* 1 TiB: anything above is a typo */
#define VT_SIZE_MIN_CACHE_MB 16     /* block cache of the minimal profile */
#define VT_SIZE_MIN_RANGE_MB 8      /* range cache of the minimal profile */
#define VT_SIZE_CACHEMAX_MB_LIMIT 99999 /* GDAL reads GDAL_CACHEMAX >= 100000 as bytes */

typedef enum vt_workload {
    VT_WORKLOAD_BATCH = 0, /* CPU work after the read: processes */
    VT_WORKLOAD_TILES = 1  /* I/O-bound tile serving: threads */
} vt_workload;

/* Return codes of vt_sizing_compute; equal to tunerd's exit statuses. */
typedef enum vt_size_rc {
    VT_SIZE_OK = 0,
    VT_SIZE_EINPUT = 2,    /* request contradicts the platform (memory, cpus, workers) */
    VT_SIZE_ETOOSMALL = 3  /* --workers N > 1 where not even one worker fits */
} vt_size_rc;

typedef struct vt_sizing_in {
    const vt_platform *plat;
    long memory_mb;
    double cpus;        /* 0 = not given (then derived per the platform rule) */
    int cpus_from_option; /* 1 when --cpus was given (for error wording) */
    vt_workload workload;
    int workers;        /* 0 = derive; else the process count asked for */
    int plugin;         /* 1 = vsitune plugin, 0 = stock GDAL */
    int no_shm;         /* 1: /dev/shm is missing or read-only where the plan runs
                           (detected on this machine); as the profile's
                           shared_memory = no */
} vt_sizing_in;

#define VT_LEDGER_MAX 8

typedef struct vt_ledger_row {
    const char *item;   /* static text */
    long each_mb;
    int count;
    long total_mb;
} vt_ledger_row;

typedef struct vt_sizing {
    double vcpu;             /* vCPU available to the whole tier */
    const char *vcpu_source; /* static text: how vcpu was decided */
    int whole_cpus;          /* max(1, floor(vcpu)) */
    int processes;           /* worker processes (1 = no pool) */
    int threads;             /* threads per process */
    const char *kind;        /* inline | processes | threads | processes-of-threads */
    const char *start_method;
    const char *ipc;         /* how worker processes may talk (TUNERD_IPC): "pool"
                                (/dev/shm: multiprocessing Pool, Queue, Lock,
                                ProcessPoolExecutor) or "pipe" (none: only
                                Process + Pipe, or threads; Lambda) */
    long cachemax_mb;        /* GDAL_CACHEMAX per process */
    long range_cache_mb;     /* VSITUNE_CACHE_SIZE / CPL_VSIL_CURL_CACHE_SIZE per process */
    long shared_cache_mb;    /* VSITUNE_SHARED_CACHE_SIZE: with the plugin, several
                                processes and /dev/shm, the processes' range caches
                                as one budget for the host (processes x
                                range_cache_mb, so the ledger total is unchanged and
                                each block is fetched and kept once); 0: none */
    int gdal_num_threads;
    vt_ledger_row rows[VT_LEDGER_MAX];
    int n_rows;
    long total_mb;           /* sum of the ledger */
    long free_mb;            /* memory_mb - total_mb (>= 0 on success) */
    int max_workers;         /* upper bound of valid --workers */
    int minimal;             /* the tier is below one process's minimum ledger: one
                                process, no pool, the smallest caches (free_mb < 0) */
    long min_ledger_mb;      /* with minimal: what the smallest regular ledger needs */
} vt_sizing;

/* Runs the model. A tier inside the platform's range but below one
 * process's minimum ledger is not refused: it gets the minimal profile
 * (out->minimal; the caller warns). On VT_SIZE_OK, *out holds the result; otherwise err holds
 * one line naming the problem with the numbers or valid values. `out` is
 * always initialised. No allocation, no I/O, thread-safe. */
vt_size_rc vt_sizing_compute(const vt_sizing_in *in, vt_sizing *out,
                             char *err, size_t errlen);

const char *vt_workload_name(vt_workload w);

/* The ledger's total for other numbers than the model's (a caller's kept
 * GDAL_CACHEMAX, TUNERD_WORKERS, ...): the same rows, in MiB. */
long vt_sizing_ledger_total(const vt_sizing_in *in, int procs, int threads, long cache_mb,
                            long range_mb);

#endif
