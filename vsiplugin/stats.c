/* stats.c: counters from the cache and the engine as JSON (see stats.h). */
#include "stats.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cache.h"
#include "config.h"
#include "engine.h"
#include "object.h"

/* Set by the exit dump: its document says "exited": true, which is how
 * `tunerd stats` tells a clean exit from a kill (OOM) or a crash. */
static atomic_int exiting;

size_t vt__stats_json(char *buf, size_t len)
{
    vt_cache_stats cs;
    vt_engine_stats es;
    int n;

    vt__cache_get_stats(vt__object_cache(), &cs);
    vt__engine_get_stats(&es);
    n = snprintf(buf, len,
                 "{\"pid\": %ld, \"time\": %lld, "
                 "\"cache\": {\"budget\": %zu, \"retained_bytes\": %zu, "
                 "\"peak_retained_bytes\": %zu, \"transient_bytes\": %zu, "
                 "\"hits\": %" PRIu64 ", \"misses\": %" PRIu64
                 ", \"waits\": %" PRIu64 ", \"evictions\": %" PRIu64
                 ", \"blocks\": %" PRIu64 "}, "
                 "\"engine\": {\"requests\": %" PRIu64 ", \"retries\": %" PRIu64
                 ", \"bytes_received\": %" PRIu64 ", \"connections\": %" PRIu64
                 ", \"in_flight\": %" PRIu64 ", \"h2_responses\": %" PRIu64 "}, "
                 "\"exited\": %s}",
                 (long)getpid(), (long long)time(NULL), cs.budget, cs.retained_bytes,
                 cs.peak_retained_bytes, cs.transient_bytes, cs.hits, cs.misses,
                 cs.waits, cs.evictions, cs.blocks, es.requests, es.retries,
                 es.bytes_received, es.connections, es.in_flight,
                 es.h2_responses, atomic_load(&exiting) ? "true" : "false");
    if (n < 0) {
        if (len)
            buf[0] = '\0';
        return 0;
    }
    return (size_t)n;
}

static pid_t dump_owner;
static atomic_llong last_publish;

/* The options as last read while GDAL was alive. The exit hook must not call
 * CPLGetConfigOption: after GDALDestroy() its thread-local storage is gone
 * (GDAL prints "CPLGetTLSList(): pthread_setspecific() failed!"). */
static pthread_mutex_t opt_mu = PTHREAD_MUTEX_INITIALIZER;
static char opt_dir[4096], opt_file[4096];

static void remember_options(void)
{
    char *d = vt__cfg_dup(NULL, "VSITUNE_STATS_DIR");
    char *f = vt__cfg_dup(NULL, "VSITUNE_STATS_FILE");
    pthread_mutex_lock(&opt_mu);
    snprintf(opt_dir, sizeof(opt_dir), "%s", d ? d : "");
    snprintf(opt_file, sizeof(opt_file), "%s", f ? f : "");
    pthread_mutex_unlock(&opt_mu);
    free(d);
    free(f);
}

/* Write the document to path through path.tmp + rename, so a reader never
 * sees half a file. */
static void write_atomically(const char *path)
{
    char buf[2048], tmp[4200];
    FILE *f;

    vt__stats_json(buf, sizeof(buf));
    if (snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid()) >=
        (int)sizeof(tmp))
        return;
    f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f, "%s\n", buf);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        unlink(tmp);
}

static void publish(void)
{
    char path[4200];
    int n;

    pthread_mutex_lock(&opt_mu);
    n = opt_dir[0] ? snprintf(path, sizeof(path), "%s/vsitune-%ld.json",
                              opt_dir, (long)getpid())
                   : -1;
    pthread_mutex_unlock(&opt_mu);
    if (n < 0 || n >= (int)sizeof(path))
        return;
    write_atomically(path);
}

void vt__stats_tick(void)
{
    long long now = (long long)time(NULL), last = atomic_load(&last_publish);
    char *dir = vt__cfg_dup(NULL, "VSITUNE_STATS_DIR");
    int want = dir != NULL;

    free(dir);
    if (!want || now - last < 1)
        return;
    if (atomic_compare_exchange_strong(&last_publish, &last, now)) {
        remember_options();
        publish(); /* one thread publishes; the others go on */
    }
}

static void exit_dump(void)
{
    char path[4096];

    atomic_store(&exiting, 1);
    publish(); /* a fork()ed child writes its own pid's file */
    if (getpid() != dump_owner)
        return; /* ...but never the parent's VSITUNE_STATS_FILE */
    pthread_mutex_lock(&opt_mu);
    snprintf(path, sizeof(path), "%s", opt_file);
    pthread_mutex_unlock(&opt_mu);
    if (path[0])
        write_atomically(path);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void install(void)
{
    dump_owner = getpid();
    remember_options();
    atexit(exit_dump);
}

void vt__stats_install_exit_dump(void)
{
    pthread_once(&once, install);
}
