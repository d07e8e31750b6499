/* test_tunerd_sizing.c: known answers of the sizing model (docs/tuning.md's
 * table, including the headline 10,240 MB Lambda -> 5 workers x 384 MB),
 * the ledger's invariants over every Lambda tier, and the refusals.
 * Loads the real profiles/ files from VT_SOURCE_DIR. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envblock.h"
#include "kept.h"
#include "platform.h"
#include "sizing.h"
#include "size_forms.h"

static const char *profiles_dir(void)
{
    static char dir[4096];
    const char *src = getenv("VT_SOURCE_DIR");

    assert_non_null(src);
    snprintf(dir, sizeof dir, "%s/profiles", src);
    return dir;
}

static void load(const char *name, vt_platform *p)
{
    char err[512];
    int rc = vt_platform_load(profiles_dir(), name, p, err, sizeof err);
    if (rc)
        fail_msg("%s", err);
}

typedef struct known {
    const char *platform;
    long memory;
    double cpus;       /* 0 = not given */
    vt_workload workload;
    int workers, threads;
    const char *kind;
    long cachemax, range;
    int gdal_threads;
    long total;
} known;

/* The table in docs/tuning.md ("Known answers"). */
static const known table[] = {
    { "lambda", 512, 0, VT_WORKLOAD_BATCH, 1, 1, "inline", 96, 16, 1, 356 },
    { "lambda", 1769, 0, VT_WORKLOAD_BATCH, 1, 1, "inline", 352, 64, 1, 785 },
    { "lambda", 3538, 0, VT_WORKLOAD_BATCH, 2, 1, "processes", 352, 64, 1, 1698 },
    { "lambda", 5307, 0, VT_WORKLOAD_BATCH, 3, 1, "processes", 352, 64, 1, 2483 },
    { "lambda", 10240, 0, VT_WORKLOAD_BATCH, 5, 1, "processes", 384, 64, 1, 4352 },
    { "lambda", 10240, 0, VT_WORKLOAD_TILES, 1, 4, "threads", 2048, 64, 1, 3328 },
    { "azure-functions", 1536, 0, VT_WORKLOAD_BATCH, 1, 1, "inline", 288, 64, 1, 698 },
    { "cloudrun", 2048, 1, VT_WORKLOAD_BATCH, 1, 1, "inline", 384, 64, 1, 845 },
    { "cloudrun", 8192, 2, VT_WORKLOAD_BATCH, 2, 1, "processes", 800, 64, 1, 3060 },
    { "cloudrun", 32768, 8, VT_WORKLOAD_BATCH, 8, 1, "processes", 800, 64, 1, 11853 },
    { "cloudrun", 32768, 8, VT_WORKLOAD_TILES, 2, 4, "processes-of-threads", 3264, 64, 1,
      10445 },
    { "kubernetes", 4096, 2, VT_WORKLOAD_BATCH, 2, 1, "processes", 384, 64, 1, 1818 },
    { "host", 768, 2, VT_WORKLOAD_BATCH, 2, 1, "processes", 64, 16, 1, 749 },
};

static void test_known_answers(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const known *k = &table[i];
        vt_platform p;
        vt_sizing s;
        char err[512];
        load(k->platform, &p);
        vt_sizing_in in = { &p, k->memory, k->cpus, k->cpus > 0, k->workload, 0, 1, 0 };
        vt_size_rc rc = vt_sizing_compute(&in, &s, err, sizeof err);
        if (rc != VT_SIZE_OK)
            fail_msg("%s %ld: %s", k->platform, k->memory, err);
        if (s.processes != k->workers || s.threads != k->threads ||
            strcmp(s.kind, k->kind) != 0 || s.cachemax_mb != k->cachemax ||
            s.range_cache_mb != k->range || s.gdal_num_threads != k->gdal_threads ||
            s.total_mb != k->total)
            fail_msg("%s %ld MB %s: got %d x %d %s cache %ld range %ld gdal %d total %ld",
                     k->platform, k->memory, vt_workload_name(k->workload), s.processes,
                     s.threads, s.kind, s.cachemax_mb, s.range_cache_mb, s.gdal_num_threads,
                     s.total_mb);
    }
}

/* The headline, spelled out: 5 worker processes at GDAL_CACHEMAX=384. */
static void test_headline_env(void **state)
{
    vt_platform p;
    vt_sizing s;
    vt_envblock e;
    char err[256];

    (void)state;
    load("lambda", &p);
    vt_sizing_in in = { &p, 10240, 0, 0, VT_WORKLOAD_BATCH, 0, 1, 0 };
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);
    assert_int_equal(vt_envblock_build(&p, &s, VT_WORKLOAD_BATCH, 1, "/opt/lib/gdalplugins", &e), 0);
    assert_string_equal(vt_envblock_get(&e, "GDAL_CACHEMAX"), "384");
    assert_string_equal(vt_envblock_get(&e, "TUNERD_WORKERS"), "5");
    assert_string_equal(vt_envblock_get(&e, "TUNERD_WORKER_KIND"), "processes");
    assert_string_equal(vt_envblock_get(&e, "TUNERD_START_METHOD"), "fork");
    assert_string_equal(vt_envblock_get(&e, "GDAL_NUM_THREADS"), "1");
    assert_string_equal(vt_envblock_get(&e, "GDAL_DRIVER_PATH"), "/opt/lib/gdalplugins");
    assert_string_equal(vt_envblock_get(&e, "VSITUNE_CACHE_SIZE"), "67108864");
    assert_null(vt_envblock_get(&e, "VSI_CACHE"));
    assert_null(vt_envblock_get(&e, "MALLOC_ARENA_MAX")); /* no threads */
    assert_null(vt_envblock_get(&e, "GDAL_DISABLE_READDIR_ON_OPEN"));

    /* --no-plugin: the stock fallback, still no VSI_CACHE */
    assert_int_equal(vt_envblock_build(&p, &s, VT_WORKLOAD_BATCH, 0, "/x", &e), 0);
    assert_string_equal(vt_envblock_get(&e, "GDAL_DISABLE_READDIR_ON_OPEN"), "EMPTY_DIR");
    assert_string_equal(vt_envblock_get(&e, "CPL_VSIL_CURL_ALLOWED_EXTENSIONS"),
                        ".tif,.tiff,.vrt,.ovr");
    assert_string_equal(vt_envblock_get(&e, "CPL_VSIL_CURL_CACHE_SIZE"), "67108864");
    assert_null(vt_envblock_get(&e, "GDAL_DRIVER_PATH"));
    assert_null(vt_envblock_get(&e, "VSI_CACHE"));
}

/* Several processes where /dev/shm exists: their range caches become one
 * shared budget for the host (the same total, one ledger row, counted
 * once); Lambda (no /dev/shm), a single process and stock GDAL keep
 * per-process caches. */
static void test_shared_range_cache(void **state)
{
    vt_platform p;
    vt_sizing s;
    vt_envblock e;
    char err[256];
    int i, shared_rows = 0;

    (void)state;
    load("cloudrun", &p);
    assert_int_equal(p.shared_memory, 1);
    vt_sizing_in in = { &p, 8192, 2, 1, VT_WORKLOAD_BATCH, 0, 1, 0 };
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);
    assert_int_equal(s.processes, 2);
    assert_int_equal(s.shared_cache_mb, 2 * s.range_cache_mb);
    for (i = 0; i < s.n_rows; i++) {
        assert_null(strstr(s.rows[i].item, "range cache (VSITUNE_CACHE_SIZE)"));
        if (strstr(s.rows[i].item, "VSITUNE_SHARED_CACHE_SIZE")) {
            shared_rows++;
            assert_int_equal(s.rows[i].count, 1);
            assert_int_equal(s.rows[i].total_mb, s.shared_cache_mb);
        }
    }
    assert_int_equal(shared_rows, 1);
    assert_int_equal(s.total_mb, 3060); /* the known answer: the same total */
    assert_int_equal(vt_envblock_build(&p, &s, VT_WORKLOAD_BATCH, 1, "/x", &e), 0);
    assert_string_equal(vt_envblock_get(&e, "VSITUNE_SHARED_CACHE"), "YES");
    assert_string_equal(vt_envblock_get(&e, "VSITUNE_SHARED_CACHE_SIZE"), "134217728");
    assert_string_equal(vt_envblock_get(&e, "VSITUNE_CACHE_SIZE"), "67108864");

    in.plugin = 0;                     /* stock GDAL: nothing to share */
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);
    assert_int_equal(s.shared_cache_mb, 0);
    in.plugin = 1;
    in.cpus = 1;                       /* one process (at most 4 GiB per vCPU) */
    in.memory_mb = 2048;
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);
    assert_int_equal(s.shared_cache_mb, 0);

    load("lambda", &p);                /* no /dev/shm */
    assert_int_equal(p.shared_memory, 0);
    vt_sizing_in lin = { &p, 10240, 0, 0, VT_WORKLOAD_BATCH, 0, 1, 0 };
    assert_int_equal(vt_sizing_compute(&lin, &s, err, sizeof err), VT_SIZE_OK);
    assert_int_equal(s.processes, 5);
    assert_int_equal(s.shared_cache_mb, 0);
    assert_int_equal(vt_envblock_build(&p, &s, VT_WORKLOAD_BATCH, 1, "/x", &e), 0);
    assert_null(vt_envblock_get(&e, "VSITUNE_SHARED_CACHE"));
}

/* Where there is no /dev/shm (Lambda's profile, or a missing or read-only
 * one detected here) the plan's processes talk through pipes: multiprocessing
 * pools, queues and locks cannot make their semaphores there. The numbers
 * stay the same; the shared range cache goes. */
static void test_ipc_without_dev_shm(void **state)
{
    vt_platform p;
    vt_sizing s;
    vt_envblock e;
    char err[256];
    long total;

    (void)state;
    load("lambda", &p);
    vt_sizing_in lin = { &p, 10240, 0, 0, VT_WORKLOAD_BATCH, 0, 1, 0 };
    assert_int_equal(vt_sizing_compute(&lin, &s, err, sizeof err), VT_SIZE_OK);
    assert_string_equal(s.ipc, "pipe");
    assert_int_equal(vt_envblock_build(&p, &s, VT_WORKLOAD_BATCH, 1, "/x", &e), 0);
    assert_string_equal(vt_envblock_get(&e, "TUNERD_IPC"), "pipe");
    assert_string_equal(vt_envblock_get(&e, "TUNERD_WORKER_KIND"), "processes");

    load("cloudrun", &p);
    vt_sizing_in in = { &p, 8192, 2, 1, VT_WORKLOAD_BATCH, 0, 1, 0 };
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);
    assert_string_equal(s.ipc, "pool");
    assert_true(s.shared_cache_mb > 0);
    total = s.total_mb;
    assert_int_equal(vt_envblock_build(&p, &s, VT_WORKLOAD_BATCH, 1, "/x", &e), 0);
    assert_string_equal(vt_envblock_get(&e, "TUNERD_IPC"), "pool");

    in.no_shm = 1;                     /* the same platform, /dev/shm read-only here */
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);
    assert_string_equal(s.ipc, "pipe");
    assert_int_equal(s.processes, 2);
    assert_int_equal(s.shared_cache_mb, 0);
    assert_int_equal(s.total_mb, total);
    assert_int_equal(vt_envblock_build(&p, &s, VT_WORKLOAD_BATCH, 1, "/x", &e), 0);
    assert_string_equal(vt_envblock_get(&e, "TUNERD_IPC"), "pipe");
    assert_null(vt_envblock_get(&e, "VSITUNE_SHARED_CACHE"));
}

/* Over every Lambda tier the ledger fits, the cache is divided (never
 * repeated), workers never exceed the whole vCPU, and more memory never
 * means fewer workers. */
static void test_lambda_invariants(void **state)
{
    vt_platform p;
    int prev_workers = 0;

    (void)state;
    load("lambda", &p);
    for (long mb = 272; mb <= 10240; mb += 1) {
        vt_sizing s;
        char err[256];
        vt_sizing_in in = { &p, mb, 0, 0, VT_WORKLOAD_BATCH, 0, 1, 0 };
        if (vt_sizing_compute(&in, &s, err, sizeof err) != VT_SIZE_OK)
            fail_msg("%ld: %s", mb, err);
        assert_true(s.total_mb <= mb);
        assert_int_equal(s.free_mb, mb - s.total_mb);
        assert_true(s.processes <= (int)floor((double)mb / 1769.0) || s.processes == 1);
        assert_true(s.processes * s.cachemax_mb <= mb * VT_SIZE_CACHE_PCT / 100 ||
                    s.cachemax_mb == VT_SIZE_CACHE_GRANULE_MB);
        assert_true(s.processes >= prev_workers);
        prev_workers = s.processes;
        long sum = 0;
        for (int i = 0; i < s.n_rows; i++)
            sum += s.rows[i].total_mb;
        assert_int_equal(sum, s.total_mb);
    }
}

static void test_refusals(void **state)
{
    vt_platform lam, cr, az, k8s;
    vt_sizing s;
    char err[512];

    (void)state;
    load("lambda", &lam);
    load("cloudrun", &cr);
    load("azure-functions", &az);
    load("kubernetes", &k8s);

    /* a tier below one process's ledger (272 MB for batch), inside the
     * platform's range: the minimal profile, not a refusal */
    long tiers[] = { 128, 256, 271 };
    for (size_t i = 0; i < sizeof tiers / sizeof tiers[0]; i++) {
        vt_sizing_in in = { &lam, tiers[i], 0, 0, VT_WORKLOAD_BATCH, 0, 1, 0 };
        assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);
        assert_int_equal(s.minimal, 1);
        assert_int_equal(s.min_ledger_mb, 272);
        assert_int_equal(s.processes, 1);
        assert_int_equal(s.threads, 1);
        assert_string_equal(s.kind, "inline");
        assert_int_equal(s.cachemax_mb, VT_SIZE_MIN_CACHE_MB);
        assert_int_equal(s.range_cache_mb, VT_SIZE_MIN_RANGE_MB);
        /* 128 runtime + 16 + 8 + 64 arrays + 32 headroom = 248 */
        assert_int_equal(s.total_mb, 248);
        assert_int_equal(s.free_mb, tiers[i] - 248); /* negative at 128: it says so */
        in.workers = 1;             /* --workers 1: the same */
        assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);
        assert_int_equal(s.minimal, 1);
    }
    vt_sizing_in in = { &lam, 272, 0, 0, VT_WORKLOAD_BATCH, 0, 1, 0 };
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);
    assert_int_equal(s.minimal, 0);
    assert_int_equal(s.free_mb, 0);

    /* outside the platform's range */
    in.memory_mb = 10241;
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_EINPUT);
    assert_non_null(strstr(err, "128..10240"));

    /* --workers contradicting the tier */
    in.memory_mb = 10240;
    in.workers = 6;
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_EINPUT);
    assert_non_null(strstr(err, "valid 1..5"));
    in.workers = 3;
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);
    assert_int_equal(s.processes, 3);
    assert_int_equal(s.cachemax_mb, 672); /* 2048 / 3 = 682.7 -> 672 */

    /* --cpus on a platform whose vCPU follow memory */
    vt_sizing_in in2 = { &lam, 10240, 8, 1, VT_WORKLOAD_BATCH, 0, 1, 0 };
    assert_int_equal(vt_sizing_compute(&in2, &s, err, sizeof err), VT_SIZE_EINPUT);
    assert_non_null(strstr(err, "drop --cpus"));

    /* Cloud Run: 4 GiB per vCPU, CPU counts it sells */
    vt_sizing_in in3 = { &cr, 32768, 4, 1, VT_WORKLOAD_BATCH, 0, 1, 0 };
    assert_int_equal(vt_sizing_compute(&in3, &s, err, sizeof err), VT_SIZE_EINPUT);
    assert_non_null(strstr(err, "at least 8 vCPU"));
    in3.cpus = 3;
    in3.memory_mb = 4096;
    assert_int_equal(vt_sizing_compute(&in3, &s, err, sizeof err), VT_SIZE_EINPUT);
    assert_non_null(strstr(err, "valid: 1, 2, 4, 6, 8"));
    /* no --cpus: the fewest vCPU allowed for that memory */
    vt_sizing_in in4 = { &cr, 12288, 0, 0, VT_WORKLOAD_BATCH, 0, 1, 0 };
    assert_int_equal(vt_sizing_compute(&in4, &s, err, sizeof err), VT_SIZE_OK);
    assert_true(fabs(s.vcpu - 4) < 1e-9);

    /* Azure Consumption caps at 1536 MB and one vCPU */
    vt_sizing_in in5 = { &az, 2048, 0, 0, VT_WORKLOAD_BATCH, 0, 1, 0 };
    assert_int_equal(vt_sizing_compute(&in5, &s, err, sizeof err), VT_SIZE_EINPUT);
    assert_non_null(strstr(err, "128..1536"));

    /* Kubernetes needs CPUs (detected by the caller, or --cpus) */
    vt_sizing_in in6 = { &k8s, 4096, 0, 0, VT_WORKLOAD_BATCH, 0, 1, 0 };
    assert_int_equal(vt_sizing_compute(&in6, &s, err, sizeof err), VT_SIZE_EINPUT);
    assert_non_null(strstr(err, "--cpus"));
}

/* Many cores, little memory: memory, not cores, bounds the workers. */
static void test_memory_bounds_workers(void **state)
{
    vt_platform host;
    vt_sizing s;
    char err[256];

    (void)state;
    load("host", &host);
    vt_sizing_in in = { &host, 2048, 64, 1, VT_WORKLOAD_BATCH, 0, 1, 0 };
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);
    assert_true(s.processes < 64);
    assert_true(s.processes >= 2);
    assert_true(s.total_mb <= 2048);
    /* one more worker would not fit */
    in.workers = s.processes + 1;
    vt_sizing s2;
    assert_int_equal(vt_sizing_compute(&in, &s2, err, sizeof err), VT_SIZE_EINPUT);
    assert_non_null(strstr(err, "ledger needs"));
    /* GDAL threads get the cores the pool leaves idle */
    assert_int_equal(s.gdal_num_threads, 64 / s.processes);
}

/* Tiles: threads share one cache; arenas capped; small tiers shed threads. */
static void test_tiles(void **state)
{
    vt_platform lam;
    vt_sizing s;
    vt_envblock e;
    char err[256];

    (void)state;
    load("lambda", &lam);
    vt_sizing_in in = { &lam, 512, 0, 0, VT_WORKLOAD_TILES, 0, 1, 0 };
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);
    assert_int_equal(s.processes, 1);
    assert_int_equal(s.threads, 4);
    assert_int_equal(vt_envblock_build(&lam, &s, VT_WORKLOAD_TILES, 1, "/x", &e), 0);
    assert_string_equal(vt_envblock_get(&e, "MALLOC_ARENA_MAX"), "2");
    assert_string_equal(vt_envblock_get(&e, "TUNERD_THREADS"), "4");
    assert_string_equal(vt_envblock_get(&e, "TUNERD_WORKER_KIND"), "threads");
    /* 250 MB: 4 threads need 128+32+16+4x16+32 = 272, 3 need 256, 2 need 240 */
    in.memory_mb = 250;
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);
    assert_int_equal(s.threads, 2);
    assert_int_equal(s.total_mb, 240);
    /* and below one thread's ledger (224 MB) the minimal profile: no threads */
    in.memory_mb = 223;
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);
    assert_int_equal(s.minimal, 1);
    assert_int_equal(s.min_ledger_mb, 224);
    assert_int_equal(s.threads, 1);
    assert_int_equal(vt_envblock_build(&lam, &s, VT_WORKLOAD_TILES, 1, "/x", &e), 0);
    assert_null(vt_envblock_get(&e, "MALLOC_ARENA_MAX"));
    assert_string_equal(vt_envblock_get(&e, "TUNERD_THREADS"), "1");
}

/* GDAL reads a bare GDAL_CACHEMAX of 100,000 or more as bytes: above
 * 99,999 MiB tunerd emits bytes, below it MiB. */
static void test_cachemax_bytes(void **state)
{
    vt_platform host;
    vt_sizing s;
    vt_envblock e;
    char err[256];

    (void)state;
    load("host", &host);
    vt_sizing_in in = { &host, 1048576, 1, 1, VT_WORKLOAD_BATCH, 0, 1, 0 };
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);
    assert_int_equal(s.cachemax_mb, 209696); /* floor32(20% of 1 TiB) */
    assert_int_equal(vt_envblock_build(&host, &s, VT_WORKLOAD_BATCH, 1, "/x", &e), 0);
    assert_string_equal(vt_envblock_get(&e, "GDAL_CACHEMAX"), "219882192896");
    /* 499,999 MiB: 99,968 MiB stays MiB (under 100,000) */
    in.memory_mb = 499999;
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);
    assert_int_equal(s.cachemax_mb, 99968);
    assert_int_equal(vt_envblock_build(&host, &s, VT_WORKLOAD_BATCH, 1, "/x", &e), 0);
    assert_string_equal(vt_envblock_get(&e, "GDAL_CACHEMAX"), "99968");
}

static const char *kept_env[16];

static const char *kept_get(const char *name)
{
    for (int i = 0; kept_env[i]; i += 2)
        if (strcmp(kept_env[i], name) == 0)
            return kept_env[i + 1];
    return NULL;
}

/* A value the caller keeps is checked against the ledger. */
static void test_kept(void **state)
{
    vt_platform lam;
    vt_sizing s;
    char err[256], warn[1024];
    long mib;
    uint64_t b;

    (void)state;
    load("lambda", &lam);
    vt_sizing_in in = { &lam, 10240, 0, 0, VT_WORKLOAD_BATCH, 0, 1, 0 };
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);

    /* the case: 1000 MiB kept under a plan of 5 x 384 */
    kept_env[0] = "GDAL_CACHEMAX";
    kept_env[1] = "1000";
    kept_env[2] = NULL;
    assert_int_equal(vt_kept_check(&in, &s, kept_get, warn, sizeof warn), 1);
    assert_non_null(strstr(warn, "kept GDAL_CACHEMAX=1000 breaks the ledger"));
    assert_non_null(strstr(warn, "5 process(es) x 1000 MiB block cache where the plan has "
                                 "5 x 384 MiB"));
    /* 5 x (128 + 1000 + 64 + 64) + 128 + 1024 = 7432 */
    assert_non_null(strstr(warn, "grows from 4352 to 7432 MiB and leaves 2808 MiB of the "
                                 "10240 MiB tier for your data instead of 5888"));
    /* so much that it cannot fit */
    kept_env[1] = "2048";
    assert_int_equal(vt_kept_check(&in, &s, kept_get, warn, sizeof warn), 2);
    assert_non_null(strstr(warn, "more than the 10240 MiB tier"));
    /* a smaller cache is kept silently */
    kept_env[1] = "200";
    assert_int_equal(vt_kept_check(&in, &s, kept_get, warn, sizeof warn), 0);
    /* equal to the plan: nothing kept */
    kept_env[1] = "384";
    assert_int_equal(vt_kept_check(&in, &s, kept_get, warn, sizeof warn), 0);
    /* more workers than planned with the planned caches */
    kept_env[0] = "TUNERD_WORKERS";
    kept_env[1] = "16";
    assert_int_equal(vt_kept_check(&in, &s, kept_get, warn, sizeof warn), 2);
    assert_non_null(strstr(warn, "TUNERD_WORKERS=16"));

    /* GDAL_CACHEMAX as GDAL reads it */
    assert_int_equal(vt_kept_cachemax_mib("1000", 10240, &mib), 0);
    assert_int_equal(mib, 1000);
    assert_int_equal(vt_kept_cachemax_mib("2147483648", 10240, &mib), 0); /* bytes */
    assert_int_equal(mib, 2048);
    assert_int_equal(vt_kept_cachemax_mib("50%", 10240, &mib), 0);
    assert_int_equal(mib, 5120);
    assert_int_equal(vt_kept_cachemax_mib("2GB", 10240, &mib), 0);
    assert_int_equal(mib, 2048);
    assert_int_equal(vt_kept_cachemax_mib("512MiB", 10240, &mib), 0);
    assert_int_equal(mib, 512);
    assert_int_equal(vt_kept_cachemax_mib("lots", 10240, &mib), -1);
    assert_int_equal(vt_kept_cachemax_mib("150%", 10240, &mib), -1);
    assert_int_equal(vt_kept_bytes("64M", &b), 0);
    assert_int_equal(b, 64u << 20);
    assert_int_equal(vt_kept_bytes("67108864", &b), 0);
    assert_int_equal(b, 64u << 20);
    assert_int_equal(vt_kept_bytes("64%", &b), -1);
}

/* A kept VSITUNE_CACHE_SIZE is read as the plugin reads it: every form
 * of size_forms.h (test_config.c holds the plugin to the same list). */
static void test_kept_bytes_as_the_plugin(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SIZE_FORMS; i++) {
        uint64_t b = 0;
        int r = vt_kept_bytes(size_forms[i].text, &b);
        if ((r == 0) != size_forms[i].ok || (r == 0 && b != size_forms[i].value)) {
            print_error("\"%s\": tunerd %s %llu, the plugin %s %llu\n", size_forms[i].text,
                        r == 0 ? "takes" : "refuses", (unsigned long long)b,
                        size_forms[i].ok ? "takes" : "refuses",
                        (unsigned long long)size_forms[i].value);
            fail();
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_headline_env),
        cmocka_unit_test(test_shared_range_cache),
        cmocka_unit_test(test_ipc_without_dev_shm),
        cmocka_unit_test(test_lambda_invariants),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_memory_bounds_workers),
        cmocka_unit_test(test_tiles),
        cmocka_unit_test(test_cachemax_bytes),
        cmocka_unit_test(test_kept),
        cmocka_unit_test(test_kept_bytes_as_the_plugin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
