/* stats.c: counters from the cache and the engine as JSON (see stats.h).
 *
 * Besides gathering the cache's and the engine's counters, this file keeps
 * the ones nobody else needs: requests by kind and status class and a
 * latency histogram (one vt__stats_attempt per finished attempt, from the
 * engine's I/O thread), the same by backend (the service whose request it
 * was: the request's counter name), the requests avoided, and what tells a reader how
 * the process ended: whether it is a fork() child (forked after the plugin
 * loaded: child_reset; before: stats_fork.c) and its cgroup's OOM-kill
 * count when it last wrote (stats_oom.c). All counters are atomics: no lock
 * is taken on the request path. */
#include "stats/stats.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cpl_error.h>

#include "cache/cache.h"
#include "base/config.h"
#include "http/engine.h"
#include "base/forksafe.h"
#include "stats/stats_fork.h"
#include "stats/stats_oom.h"
#include "statsnames.h" /* the document's names, shared with tunerd */

/* Set by the exit dump: its document says "exited": true, which is how
 * `tunerd stats` tells a clean exit from a kill (OOM) or a crash. */
static atomic_int exiting;

/* ---- requests by kind and status class, latency ------------------------ */

/* In statsnames.h's order. */
enum { K_GET_RANGE, K_GET, K_HEAD, K_PUT, K_POST, K_DELETE, K_OTHER, N_KINDS };
static const char *const kind_names[N_KINDS] = { VT_STATS_HTTP_KINDS };
enum { N_CLASSES = VT_STATS_N_CLASSES }; /* 2xx 3xx 4xx 5xx, and none (no
                                            status received) */
static const char *const class_names[N_CLASSES] = { VT_STATS_HTTP_CLASSES };
_Static_assert(N_KINDS == VT_STATS_N_KINDS, "a kind per name");

/* Upper bounds in seconds, and their names (statsnames.h). */
#define BOUND(i, s) s,
#define BOUND_NAME(i, s) "le_" #s,
static const double lat_bounds[] = { VT_STATS_LAT_BOUNDS(BOUND) };
static const char *const lat_names[] = { VT_STATS_LAT_BOUNDS(BOUND_NAME) };
#undef BOUND
#undef BOUND_NAME
#define N_BOUNDS (sizeof(lat_bounds) / sizeof(lat_bounds[0]))

/* Field names of the sections written from a list of values. */
#define NAME(n) #n,
static const char *const cache_names[] = { VT_STATS_CACHE(NAME) };
static const char *const shared_names[] = { VT_STATS_SHARED(NAME) };
static const char *const engine_names[] = { VT_STATS_ENGINE(NAME) };
static const char *const avoided_names[] = { VT_STATS_AVOIDED(NAME) };
static const char *const backend_fields[] = { VT_STATS_BACKEND(NAME) };
#undef NAME
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static _Atomic uint64_t http_n[N_KINDS][N_CLASSES];
static _Atomic uint64_t lat_n[N_BOUNDS + 1]; /* per bucket; the last is +Inf */
static _Atomic uint64_t lat_sum_us, lat_count;
static _Atomic uint64_t avoided_n[2];

/* By backend, in statsnames.h's order: its fields (VT_STATS_BACKEND) and
 * its attempts by status class. */
enum { N_BACKENDS = VT_STATS_N_BACKENDS };
static const char *const backend_names[N_BACKENDS] = { VT_STATS_BACKEND_NAMES };
enum { BF_REQUESTS, BF_BYTES, BF_LISTS, BF_HEADS, N_BFIELDS };
_Static_assert(N_BFIELDS == sizeof(backend_fields) / sizeof(backend_fields[0]),
               "a backend counter per name");
static _Atomic uint64_t be_n[N_BACKENDS][N_BFIELDS];
static _Atomic uint64_t be_cls[N_BACKENDS][N_CLASSES];
static atomic_int pending; /* attempts finished since the last publication */

static int kind_of(const char *method, int ranged)
{
    if (!method || strcmp(method, "GET") == 0)
        return ranged ? K_GET_RANGE : K_GET;
    if (strcmp(method, "HEAD") == 0)
        return K_HEAD;
    if (strcmp(method, "PUT") == 0)
        return K_PUT;
    if (strcmp(method, "POST") == 0)
        return K_POST;
    if (strcmp(method, "DELETE") == 0)
        return K_DELETE;
    return K_OTHER;
}

/* The index of the backend named name, or -1 (NULL, or not one of ours). */
static int backend_of(const char *name)
{
    for (int i = 0; name && i < N_BACKENDS; i++)
        if (strcmp(name, backend_names[i]) == 0)
            return i;
    return -1;
}

void vt__stats_attempt(const vt_http_attempt *a)
{
    long status = a->status;
    int cls = status >= 200 && status <= 599 ? (int)(status / 100) - 2 : N_CLASSES - 1;
    int be = backend_of(a->counter);
    double seconds = a->seconds;
    size_t b = 0;

    if (!(seconds >= 0)) /* also NaN */
        seconds = 0;
    while (b < N_BOUNDS && seconds > lat_bounds[b])
        b++;
    atomic_fetch_add(&http_n[kind_of(a->method, a->ranged)][cls], 1);
    if (be >= 0) {
        atomic_fetch_add(&be_n[be][BF_REQUESTS], 1);
        atomic_fetch_add(&be_n[be][BF_BYTES], a->bytes);
        atomic_fetch_add(&be_cls[be][cls], 1);
    }
    atomic_fetch_add(&lat_n[b], 1);
    atomic_fetch_add(&lat_sum_us, (uint64_t)(seconds * 1e6 + 0.5));
    atomic_fetch_add(&lat_count, 1);
    atomic_store(&pending, 1);
}

void vt__stats_avoided(const char *backend, vt_stats_avoided what)
{
    int be = backend_of(backend);

    if ((unsigned)what >= 2)
        return;
    atomic_fetch_add(&avoided_n[what], 1);
    if (be >= 0)
        atomic_fetch_add(&be_n[be][what == VT_AVOIDED_LIST ? BF_LISTS : BF_HEADS], 1);
}

/* ---- fork: the child's counters describe the child ---------------------- */

static atomic_llong last_publish; /* unix s of the last publication */
static atomic_int forked;       /* this process is a fork() child */
static atomic_long fork_ppid;   /* ... of this process */
/* The cache's counters at the last fork(): a child reports what it did. The
 * snapshot is taken in the parent just before the fork (see fork_snapshot). */
static vt_cache_stats snap, base;

static void child_reset(void)
{
    for (int k = 0; k < N_KINDS; k++)
        for (int c = 0; c < N_CLASSES; c++)
            atomic_store(&http_n[k][c], 0);
    for (size_t b = 0; b <= N_BOUNDS; b++)
        atomic_store(&lat_n[b], 0);
    atomic_store(&lat_sum_us, 0);
    atomic_store(&lat_count, 0);
    atomic_store(&avoided_n[0], 0);
    atomic_store(&avoided_n[1], 0);
    for (int i = 0; i < N_BACKENDS; i++) {
        for (int f = 0; f < N_BFIELDS; f++)
            atomic_store(&be_n[i][f], 0);
        for (int c = 0; c < N_CLASSES; c++)
            atomic_store(&be_cls[i][c], 0);
    }
    atomic_store(&forked, 1);
    atomic_store(&fork_ppid, (long)getppid());
    atomic_store(&last_publish, 0); /* the child's first read publishes its file */
    atomic_store(&pending, 0);
    memset(&base, 0, sizeof(base));
}

/* ---- the block cache, found through the getter the layer above set ---- */

static _Atomic(vt_cache *(*)(void)) cache_source;

void vt__stats_set_cache_source(vt_cache *(*get)(void))
{
    atomic_store(&cache_source, get);
}

/* The process's block cache (created on first use by the getter), or NULL. */
static vt_cache *stats_cache(void)
{
    vt_cache *(*get)(void) = atomic_load(&cache_source);
    return get ? get() : NULL;
}

/* Registered after object.c's fork handlers (from the first tick, which
 * follows an object open), so in the parent this runs before they take the
 * cache lock, and in the child after they released it. Between the snapshot
 * and the fork another thread's few hits may be counted in both. */
static void fork_snapshot(void)
{
    vt_cache *c = stats_cache();
    if (c)
        vt__cache_get_stats(c, &snap);
}

static void fork_adopt(void)
{
    base = snap;
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void register_fork_snapshot(void)
{
    (void)stats_cache(); /* exists from now on: the handler creates nothing */
    pthread_atfork(fork_snapshot, NULL, fork_adopt);
}

static uint64_t minus(uint64_t v, uint64_t b)
{
    return v > b ? v - b : 0;
}

/* ---- the document -------------------------------------------------------- */

typedef struct out {
    char *buf;
    size_t len, n; /* n: bytes the whole document needs */
} out;

static void put(out *o, const char *fmt, ...)
{
    va_list ap;
    int w;

    va_start(ap, fmt);
    w = vsnprintf(o->n < o->len ? o->buf + o->n : NULL,
                  o->n < o->len ? o->len - o->n : 0, fmt, ap);
    va_end(ap);
    if (w > 0)
        o->n += (size_t)w;
}

/* "name": v, ... for n names and values, comma-separated. */
static void put_fields(out *o, const char *const *names, const uint64_t *v,
                       size_t n)
{
    for (size_t i = 0; i < n; i++)
        put(o, "%s\"%s\": %" PRIu64, i ? ", " : "", names[i], v[i]);
}

/* The host-wide shared cache this process uses, if any: the same figures
 * in every attached process's document (readers count it once, by path). */
static void put_shared(out *o)
{
    vt_shm_info in;
    const char *p;
    vt_cache *c = stats_cache();

    if (!c || !vt__cache_shared_info(c, &in))
        return;
    for (p = in.path; *p; p++)
        if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
            return; /* not a plain string: leave the section out */
    {
        const uint64_t v[] = { in.size, in.data_bytes, in.used_bytes, in.reserved_bytes,
                               in.procs_attached, in.objects, in.hits, in.misses, in.waits,
                               in.wait_timeouts, in.evictions, in.takeovers, in.repairs };
        _Static_assert(N_OF(v) == N_OF(shared_names), "shared: a value per name");
        put(o, "\"shared\": {\"path\": \"%s\", ", in.path);
        put_fields(o, shared_names, v, N_OF(v));
        put(o, "}, ");
    }
}

/* "backends": {"s3": {requests, bytes_received, avoided_lists,
 * avoided_heads, "2xx" ... "none"}, ...}, every backend, in order. */
static void put_backends(out *o)
{
    put(o, "\"backends\": {");
    for (int i = 0; i < N_BACKENDS; i++) {
        uint64_t v[N_BFIELDS], c[N_CLASSES];
        for (int f = 0; f < N_BFIELDS; f++)
            v[f] = atomic_load(&be_n[i][f]);
        for (int k = 0; k < N_CLASSES; k++)
            c[k] = atomic_load(&be_cls[i][k]);
        put(o, "%s\"%s\": {", i ? ", " : "", backend_names[i]);
        put_fields(o, backend_fields, v, N_BFIELDS);
        put(o, ", ");
        put_fields(o, class_names, c, N_CLASSES);
        put(o, "}");
    }
    put(o, "}, ");
}

size_t vt__stats_json(char *buf, size_t len)
{
    vt_cache_stats cs;
    vt_engine_stats es;
    char oom_file[512], prefix[64];
    uint64_t oom_kills, cum = 0;
    out o = { buf, len, 0 };
    vt_cache *cache = stats_cache();

    if (len)
        buf[0] = '\0';
    memset(&cs, 0, sizeof(cs));
    if (cache)
        vt__cache_get_stats(cache, &cs);
    vt__engine_get_stats(&es);
    if (!vt__cfg_gdal_path(NULL, prefix, sizeof(prefix)))
        snprintf(prefix, sizeof(prefix), "?");
    put(&o, "{\"pid\": %ld, \"time\": %lld, \"prefix\": \"%s\", \"cache\": {",
        (long)getpid(), (long long)time(NULL), prefix);
    {
        const uint64_t v[] = { cs.budget, cs.retained_bytes, cs.peak_retained_bytes,
                               cs.transient_bytes, minus(cs.hits, base.hits),
                               minus(cs.misses, base.misses), minus(cs.waits, base.waits),
                               minus(cs.evictions, base.evictions), cs.blocks };
        _Static_assert(N_OF(v) == N_OF(cache_names), "cache: a value per name");
        put_fields(&o, cache_names, v, N_OF(v));
    }
    put(&o, "}, ");
    put_shared(&o);
    put(&o, "\"engine\": {");
    {
        const uint64_t v[] = { es.requests, es.retries, es.bytes_received, es.connections,
                               es.in_flight, es.h2_responses };
        _Static_assert(N_OF(v) == N_OF(engine_names), "engine: a value per name");
        put_fields(&o, engine_names, v, N_OF(v));
    }
    put(&o, "}, \"http\": {");
    for (int k = 0; k < N_KINDS; k++) {
        put(&o, "%s\"%s\": {", k ? ", " : "", kind_names[k]);
        for (int c = 0; c < N_CLASSES; c++)
            put(&o, "%s\"%s\": %" PRIu64, c ? ", " : "", class_names[c],
                atomic_load(&http_n[k][c]));
        put(&o, "}");
    }
    put(&o, "}, \"latency\": {");
    for (size_t b = 0; b < N_BOUNDS; b++) {
        cum += atomic_load(&lat_n[b]);
        put(&o, "\"%s\": %" PRIu64 ", ", lat_names[b], cum);
    }
    cum += atomic_load(&lat_n[N_BOUNDS]);
    put(&o, "\"le_inf\": %" PRIu64 ", \"sum_us\": %" PRIu64 ", \"count\": %" PRIu64 "}, ",
        cum, atomic_load(&lat_sum_us), atomic_load(&lat_count));
    put(&o, "\"avoided\": {");
    {
        const uint64_t v[] = { atomic_load(&avoided_n[VT_AVOIDED_LIST]),
                               atomic_load(&avoided_n[VT_AVOIDED_HEAD]) };
        _Static_assert(N_OF(v) == N_OF(avoided_names), "avoided: a value per name");
        put_fields(&o, avoided_names, v, N_OF(v));
    }
    put(&o, "}, ");
    put_backends(&o);
    put(&o, "\"process\": {\"ppid\": %ld, \"forked\": %s",
        atomic_load(&forked) ? atomic_load(&fork_ppid) : (long)getppid(),
        atomic_load(&forked) ? "true" : "false");
    if (vt__stats_oom_read(oom_file, sizeof(oom_file), &oom_kills) == 0)
        put(&o, ", \"oom_kills\": %" PRIu64 ", \"oom_file\": \"%s\"", oom_kills, oom_file);
    put(&o, "}, \"exited\": %s}", atomic_load(&exiting) ? "true" : "false");
    if (o.n >= len && len) /* never half a document */
        buf[0] = '\0';
    return o.n;
}

static pid_t dump_owner;

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

/* Publications are numbered when their document is about to be made;
 * pub_mu (a leaf: only the write and rename of one small local file happen
 * under it, never a network request) keeps the newest one written: a
 * publication whose number is not above the last one written leaves the
 * file alone. So when a publish returns, the file holds a document made
 * after it began (its own or a later one), whatever the order in which
 * threads (a reader's, the engine's I/O thread) got there. */
static pthread_mutex_t pub_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t pub_seq;
static uint64_t pub_written; /* pub_mu */

/* Write the document to path through path.tmp + rename, so a reader never
 * sees half a file. ordered: the published file (numbered, above); else
 * VSITUNE_STATS_FILE, written once at exit. */
static void write_atomically(const char *path, int ordered)
{
    char buf[VT_STATS_JSON_MAX], tmp[4200];
    uint64_t seq = ordered ? atomic_fetch_add(&pub_seq, 1) + 1 : 0;
    FILE *f;

    if (vt__stats_json(buf, sizeof(buf)) >= sizeof(buf))
        return;
    /* per thread: an interrupted write of another process leaves its own */
    if (snprintf(tmp, sizeof(tmp), "%s.%ld.%ld.tmp", path, (long)getpid(), (long)gettid()) >=
        (int)sizeof(tmp))
        return;
    pthread_mutex_lock(&pub_mu);
    if (ordered && seq <= pub_written)
        goto out; /* a document made later is there already */
    f = fopen(tmp, "w");
    if (!f)
        goto out;
    fprintf(f, "%s\n", buf);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        unlink(tmp);
    else if (ordered)
        pub_written = seq;
out:
    pthread_mutex_unlock(&pub_mu);
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
    write_atomically(path, 1);
}

void vt__stats_tick(void)
{
    long long now = (long long)time(NULL), last = atomic_load(&last_publish);
    char *dir;
    int want;

    pthread_once(&fork_once, register_fork_snapshot);
    dir = vt__cfg_dup(NULL, "VSITUNE_STATS_DIR");
    want = dir != NULL;
    free(dir);
    if (!want)
        return;
    if (atomic_load(&forked)) {
        /* A fork() child leaves through _exit() (Python's pool workers do):
         * no exit dump, so its file is kept current after every read. */
        atomic_store(&last_publish, now);
        remember_options();
        atomic_store(&pending, 0);
        publish();
        return;
    }
    if (now - last < 1) {
        atomic_store(&pending, 1); /* the I/O thread publishes it (vt__stats_idle) */
        return;
    }
    if (atomic_compare_exchange_strong(&last_publish, &last, now)) {
        remember_options();
        atomic_store(&pending, 0);
        publish(); /* one thread publishes; the others go on */
    }
}

void vt__stats_idle(void)
{
    long long now, last;

    if (!atomic_load(&pending))
        return;
    now = (long long)time(NULL);
    if (atomic_load(&forked)) {
        /* a fork() child's file is kept whole: also the requests no read
         * ticks after (listings, stats of names not opened) */
        atomic_store(&pending, 0);
        atomic_store(&last_publish, now);
        publish();
        return;
    }
    last = atomic_load(&last_publish);
    if (now - last < 1 || !atomic_compare_exchange_strong(&last_publish, &last, now))
        return;
    atomic_store(&pending, 0);
    publish(); /* the directory remembered while GDAL was alive ("" : nothing) */
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
        write_atomically(path, 0);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

/* At the plugin's load. A process that loads it after its fork (a pool
 * worker whose parent never called GDAL) is a fork child all the same: it
 * too leaves through _exit(), so it publishes as child_reset's children do
 * and never writes VSITUNE_STATS_FILE, which is its parent's. */
static void install(void)
{
    remember_options();
    if (vt__stats_fork_child()) {
        atomic_store(&fork_ppid, (long)getppid());
        atomic_store(&forked, 1);
        dump_owner = 0;
        CPLDebug("VSITUNE", "loaded in a fork() child of %ld: counters published "
                 "after every read", atomic_load(&fork_ppid));
    } else {
        dump_owner = getpid();
    }
    vt__forksafe_register(&pub_mu);
    pthread_atfork(NULL, NULL, child_reset);
    atexit(exit_dump);
}

void vt__stats_install_exit_dump(void)
{
    pthread_once(&once, install);
}
