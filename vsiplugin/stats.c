/* stats.c: counters from the cache and the engine as JSON (see stats.h). */
#include "stats.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cache.h"
#include "config.h"
#include "engine.h"
#include "object.h"

size_t vt__stats_json(char *buf, size_t len)
{
    vt_cache_stats cs;
    vt_engine_stats es;
    int n;

    vt__cache_get_stats(vt__object_cache(), &cs);
    vt__engine_get_stats(&es);
    n = snprintf(buf, len,
                 "{\"pid\": %ld, "
                 "\"cache\": {\"budget\": %zu, \"retained_bytes\": %zu, "
                 "\"peak_retained_bytes\": %zu, \"transient_bytes\": %zu, "
                 "\"hits\": %" PRIu64 ", \"misses\": %" PRIu64
                 ", \"waits\": %" PRIu64 ", \"evictions\": %" PRIu64
                 ", \"blocks\": %" PRIu64 "}, "
                 "\"engine\": {\"requests\": %" PRIu64 ", \"retries\": %" PRIu64
                 ", \"bytes_received\": %" PRIu64 ", \"connections\": %" PRIu64
                 ", \"in_flight\": %" PRIu64 ", \"h2_responses\": %" PRIu64 "}}",
                 (long)getpid(), cs.budget, cs.retained_bytes,
                 cs.peak_retained_bytes, cs.transient_bytes, cs.hits, cs.misses,
                 cs.waits, cs.evictions, cs.blocks, es.requests, es.retries,
                 es.bytes_received, es.connections, es.in_flight,
                 es.h2_responses);
    if (n < 0) {
        if (len)
            buf[0] = '\0';
        return 0;
    }
    return (size_t)n;
}

static pid_t dump_owner;

static void exit_dump(void)
{
    const char *path = vt__cfg_str("VSITUNE_STATS_FILE");
    char buf[2048];
    FILE *f;

    if (!path || !*path || getpid() != dump_owner)
        return; /* a fork()ed child does not overwrite its parent's dump */
    vt__stats_json(buf, sizeof(buf));
    f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f, "%s\n", buf);
    fclose(f);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void install(void)
{
    dump_owner = getpid();
    atexit(exit_dump);
}

void vt__stats_install_exit_dump(void)
{
    pthread_once(&once, install);
}
