/* envblock.c: sizing result -> ordered environment variables.
 *
 * Which variables and why (docs/tuning.md has the long form):
 *  - plugin mode: GDAL_DRIVER_PATH (so GDAL loads gdal_vsitune.so) and the
 *    plugin's range cache VSITUNE_CACHE_SIZE (bytes, per process); and
 *    VSITUNE_STATS_DIR where the profile names one (not on host);
 *  - stock mode (--no-plugin): the discovery killers of seed 001
 *    (GDAL_DISABLE_READDIR_ON_OPEN=EMPTY_DIR, CPL_VSIL_CURL_ALLOWED_EXTENSIONS)
 *    and CPL_VSIL_CURL_CACHE_SIZE per process. VSI_CACHE is never set: on
 *    GDAL 3.6.2 it adds a range GET to every open (measured);
 *  - both: GDAL_CACHEMAX per process (MiB; in bytes above 99,999 MiB, where
 *    GDAL reads a bare number as bytes), GDAL_NUM_THREADS, OMP_NUM_THREADS,
 *    MALLOC_ARENA_MAX=2 when threads serve reads (seed 003), CPL_TMPDIR,
 *    GDAL_PAM_ENABLED=NO (no .aux.xml writes next to remote or read-only
 *    data), and the worker plan as TUNERD_* for the application to read
 *    (TUNERD_IPC=pipe where there is no /dev/shm: Lambda). */
#include "envblock.h"

#include <stdio.h>
#include <string.h>

static int put(vt_envblock *b, const char *name, const char *value, const char *why)
{
    vt_env_var *v;

    if (b->n >= VT_ENV_MAX)
        return -1;
    v = &b->vars[b->n];
    if (snprintf(v->name, sizeof v->name, "%s", name) >= (int)sizeof v->name ||
        snprintf(v->value, sizeof v->value, "%s", value) >= (int)sizeof v->value)
        return -1;
    v->why = why;
    b->n++;
    return 0;
}

static int putl(vt_envblock *b, const char *name, long value, const char *why)
{
    char num[32];

    snprintf(num, sizeof num, "%ld", value);
    return put(b, name, num, why);
}

int vt_envblock_build(const vt_platform *plat, const vt_sizing *s,
                      vt_workload workload, int plugin, const char *plugin_dir,
                      vt_envblock *out)
{
    long range_bytes = s->range_cache_mb * 1024L * 1024L;
    int rc = 0;

    memset(out, 0, sizeof *out);
    if (plugin) {
        rc |= put(out, "GDAL_DRIVER_PATH", plugin_dir,
                  "directory holding gdal_vsitune.so, which takes over /vsis3/");
        if (s->shared_cache_mb > 0) {
            rc |= put(out, "VSITUNE_SHARED_CACHE", "YES",
                      "the worker processes share one range cache (/dev/shm): each block "
                      "fetched once and kept once for the host");
            rc |= putl(out, "VSITUNE_SHARED_CACHE_SIZE", s->shared_cache_mb * 1024L * 1024L,
                       "the shared range cache, bytes for the whole host (the processes' "
                       "budgets as one)");
        }
        rc |= putl(out, "VSITUNE_CACHE_SIZE", range_bytes,
                   s->shared_cache_mb > 0
                       ? "plugin range cache, bytes per process, used only where the "
                         "shared one cannot be"
                       : "plugin range cache, bytes per process (compressed bytes)");
        if (plat->stats_dir[0])
            rc |= put(out, "VSITUNE_STATS_DIR", plat->stats_dir,
                      "each process's counters, left behind by OOM-killed workers "
                      "(tunerd stats)");
    } else {
        rc |= put(out, "GDAL_DISABLE_READDIR_ON_OPEN", "EMPTY_DIR",
                  "no LIST of the prefix and no sidecar probes on open");
        rc |= put(out, "CPL_VSIL_CURL_ALLOWED_EXTENSIONS", ".tif,.tiff,.vrt,.ovr",
                  "never probe objects with other extensions");
        rc |= putl(out, "CPL_VSIL_CURL_CACHE_SIZE", range_bytes,
                   "GDAL's /vsicurl/ range cache, bytes per process");
    }
    /* GDAL reads a bare GDAL_CACHEMAX under 100,000 as MiB and above as bytes */
    if (s->cachemax_mb > VT_SIZE_CACHEMAX_MB_LIMIT)
        rc |= putl(out, "GDAL_CACHEMAX", s->cachemax_mb * 1024L * 1024L,
                   "block cache in bytes (GDAL reads 100,000 and above as bytes), per "
                   "process: the tier's budget divided by processes");
    else
        rc |= putl(out, "GDAL_CACHEMAX", s->cachemax_mb,
                   "block cache in MiB, per process: the tier's budget divided by processes");
    rc |= putl(out, "GDAL_NUM_THREADS", s->gdal_num_threads,
               "GDAL's own threads per process; the pool is the parallelism");
    rc |= putl(out, "OMP_NUM_THREADS", s->gdal_num_threads,
               "stop OpenMP code spawning one thread per host core");
    if (s->threads > 1)
        rc |= put(out, "MALLOC_ARENA_MAX", "2",
                  "threaded reads: cap glibc arenas to slow RSS growth (seed 003)");
    rc |= put(out, "CPL_TMPDIR", plat->tmp_dir, "GDAL's temporary files");
    rc |= put(out, "GDAL_PAM_ENABLED", "NO", "no .aux.xml side files written or probed");
    rc |= putl(out, "TUNERD_WORKERS", s->processes, "worker processes for your pool");
    rc |= put(out, "TUNERD_WORKER_KIND", s->kind,
              "inline = no pool; processes = ProcessPoolExecutor (TUNERD_IPC=pool) or "
              "processes with pipes (TUNERD_IPC=pipe); threads = ThreadPoolExecutor");
    rc |= putl(out, "TUNERD_THREADS", s->threads, "threads per worker process");
    rc |= put(out, "TUNERD_START_METHOD", s->start_method,
              "multiprocessing start method (fork inherits the loaded libgdal)");
    rc |= put(out, "TUNERD_IPC", s->ipc,
              strcmp(s->ipc, "pipe") == 0
                  ? "no /dev/shm: no multiprocessing Pool, Queue or Lock (their semaphores "
                    "fail); processes with Pipes or threads (tunerd_plan.map)"
                  : "/dev/shm is there: multiprocessing pools and queues work");
    rc |= put(out, "TUNERD_WORKLOAD", vt_workload_name(workload), "the workload sized for");
    for (int i = 0; i < plat->n_env; i++)
        rc |= put(out, plat->env[i].name, plat->env[i].value, "platform profile");
    return rc ? -1 : 0;
}

const char *vt_envblock_get(const vt_envblock *b, const char *name)
{
    for (int i = 0; i < b->n; i++)
        if (strcmp(b->vars[i].name, name) == 0)
            return b->vars[i].value;
    return NULL;
}
