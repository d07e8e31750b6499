/* test_tunerd_prom.c: the Prometheus exposition (prom.c) of counters files,
 * process memory and the cgroup: one HELP and TYPE per family, families
 * contiguous, pid labels only (no total series), bytes for MiB, a histogram
 * with cumulative buckets and +Inf; and --listen's address parser
 * (metricsd.c). promtool and a real Prometheus read the same output in
 * tests/integration/test_tunerd_metrics.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metricsd.h"
#include "prom.h"

static char *render(const vt_prom_in *in)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    assert_int_equal(vt_prom_write(f, in), 0);
    fclose(f);
    return buf;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static void rec(vt_stats_entry *e, int pid, vt_pstate st)
{
    memset(e, 0, sizeof *e);
    e->ok = 1;
    e->state = st;
    e->rec.pid = (uint64_t)pid;
    e->rec.time = 1700000000;
    e->rec.engine.requests = 3;
    e->rec.engine.retries = 1;
    e->rec.engine.bytes_received = 196608;
    e->rec.engine.connections = 1;
    e->rec.cache.budget = 67108864;
    e->rec.cache.retained_bytes = 131072;
    e->rec.cache.hits = 10;
    e->rec.cache.waits = 2;
    e->rec.http.present = 1;
    e->rec.http.n[0][0] = 2; /* get_range 2xx */
    e->rec.http.n[0][3] = 1; /* get_range 5xx (then retried) */
    e->rec.latency.present = 1;
    for (int b = 0; b <= VT_LAT_BOUNDS; b++)
        e->rec.latency.le[b] = b < 2 ? 0 : b < 5 ? 1 : 3;
    e->rec.latency.count = 3;
    e->rec.latency.sum_us = 250000;
    e->rec.avoided.present = 1;
    e->rec.avoided.lists = 1;
    e->rec.avoided.heads = 1;
}

static void test_counters(void **state)
{
    vt_stats_entry e[3];
    vt_prom_in in = { 0 };

    (void)state;
    rec(&e[0], 41, VT_PSTATE_RUNNING);
    rec(&e[1], 42, VT_PSTATE_ENDED);
    e[1].rec.http.present = 0; /* an older plugin's file: no requests by kind */
    e[1].rec.latency.present = 0;
    memset(&e[2], 0, sizeof e[2]); /* unreadable */
    in.stats = e;
    in.n_stats = 3;
    in.stats_dir_given = 1;
    char *out = render(&in);

    assert_int_equal(count(out, "# TYPE vsitune_requests_total counter\n"), 1);
    assert_int_equal(count(out, "# HELP vsitune_requests_total "), 1);
    assert_non_null(strstr(out, "vsitune_requests_total{pid=\"41\",kind=\"get_range\","
                                "status_class=\"2xx\"} 2\n"));
    assert_non_null(strstr(out, "vsitune_requests_total{pid=\"41\",kind=\"get_range\","
                                "status_class=\"5xx\"} 1\n"));
    assert_non_null(strstr(out, "vsitune_requests_total{pid=\"41\",kind=\"other\","
                                "status_class=\"none\"} 0\n"));
    assert_int_equal(count(out, "vsitune_requests_total{pid=\"41\""), 35);
    assert_int_equal(count(out, "vsitune_requests_total{pid=\"42\""), 0);
    assert_non_null(strstr(out, "vsitune_retries_total{pid=\"42\"} 1\n"));
    assert_non_null(strstr(out, "vsitune_received_bytes_total{pid=\"41\"} 196608\n"));
    assert_non_null(strstr(out, "vsitune_coalesced_waits_total{pid=\"41\"} 2\n"));
    assert_non_null(strstr(out, "vsitune_cache_held_bytes{pid=\"41\"} 131072\n"));
    assert_non_null(strstr(out, "vsitune_lists_avoided_total{pid=\"41\"} 1\n"));
    assert_non_null(strstr(out, "vsitune_heads_avoided_total{pid=\"42\"} 1\n"));
    /* the histogram: cumulative buckets, +Inf, sum in seconds, count */
    assert_non_null(strstr(out, "# TYPE vsitune_request_duration_seconds histogram\n"));
    assert_non_null(strstr(out, "vsitune_request_duration_seconds_bucket{pid=\"41\","
                                "le=\"0.01\"} 0\n"));
    assert_non_null(strstr(out, "vsitune_request_duration_seconds_bucket{pid=\"41\","
                                "le=\"0.025\"} 1\n"));
    assert_non_null(strstr(out, "vsitune_request_duration_seconds_bucket{pid=\"41\","
                                "le=\"+Inf\"} 3\n"));
    assert_non_null(strstr(out, "vsitune_request_duration_seconds_sum{pid=\"41\"} 0.250000\n"));
    assert_non_null(strstr(out, "vsitune_request_duration_seconds_count{pid=\"41\"} 3\n"));
    assert_null(strstr(out, "vsitune_request_duration_seconds_count{pid=\"42\"}"));
    /* the state set: one 1 per process */
    assert_non_null(strstr(out, "vsitune_process_state{pid=\"42\",state=\"ended\"} 1\n"));
    assert_non_null(strstr(out, "vsitune_process_state{pid=\"42\",state=\"running\"} 0\n"));
    assert_int_equal(count(out, "vsitune_process_state{pid=\"41\""), 4);
    assert_non_null(strstr(out, "vsitune_stats_unreadable_files 1\n"));
    /* no host total, no MiB, no memory without watch */
    assert_null(strstr(out, "total\""));
    assert_null(strstr(out, "pid=\"0\""));
    assert_null(strstr(out, "vsitune_process_rss_bytes"));
    /* each family's samples come right after its TYPE line */
    for (const char *p = out; (p = strstr(p, "# TYPE ")) != NULL; p++) {
        char name[128];
        assert_int_equal(sscanf(p, "# TYPE %127s", name), 1);
        const char *next = strstr(p + 1, "# HELP ");
        for (const char *q = strstr(p, "\n") + 1; q && *q && (!next || q < next);
             q = strchr(q, '\n') ? strchr(q, '\n') + 1 : NULL)
            assert_int_equal(strncmp(q, name, strlen(name)), 0);
    }
    free(out);
}

/* The families by backend: a sample per process and backend, from the
 * files that have the section only; valid label values and counter names. */
static void test_by_backend(void **state)
{
    vt_stats_entry e[2];
    vt_prom_in in = { 0 };

    (void)state;
    rec(&e[0], 41, VT_PSTATE_RUNNING);
    rec(&e[1], 42, VT_PSTATE_RUNNING); /* an older plugin's file */
    e[0].rec.backends.present = 1;
    e[0].rec.backends.b[1].requests = 3;
    e[0].rec.backends.b[1].status[0] = 2;
    e[0].rec.backends.b[1].status[2] = 1;
    e[0].rec.backends.b[1].bytes_received = 70000;
    e[0].rec.backends.b[0].avoided_lists = 1;
    e[0].rec.backends.b[1].avoided_heads = 1;
    in.stats = e;
    in.n_stats = 2;
    in.stats_dir_given = 1;
    char *out = render(&in);

    static const char *const lines[] = {
        "# TYPE vsitune_backend_requests_total counter\n",
        "vsitune_backend_requests_total{pid=\"41\",backend=\"gs\",status_class=\"2xx\"} 2\n",
        "vsitune_backend_requests_total{pid=\"41\",backend=\"gs\",status_class=\"4xx\"} 1\n",
        "vsitune_backend_requests_total{pid=\"41\",backend=\"curl\",status_class=\"none\"} 0\n",
        "# TYPE vsitune_backend_received_bytes_total counter\n",
        "vsitune_backend_received_bytes_total{pid=\"41\",backend=\"gs\"} 70000\n",
        "vsitune_backend_lists_avoided_total{pid=\"41\",backend=\"s3\"} 1\n",
        "vsitune_backend_heads_avoided_total{pid=\"41\",backend=\"gs\"} 1\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        if (count(out, lines[i]) != 1)
            fail_msg("not once: %s", lines[i]);
    assert_int_equal(count(out, "vsitune_backend_requests_total{pid=\"41\""), 20);
    assert_int_equal(count(out, "vsitune_backend_requests_total{pid=\"42\""), 0);
    assert_int_equal(count(out, "vsitune_backend_heads_avoided_total{pid=\"41\""), 4);
    assert_null(strstr(out, "backend=\"\""));
    /* the process-wide families are unchanged */
    assert_int_equal(count(out, "vsitune_requests_total{pid=\"41\""), 35);
    free(out);
}

static void shared_seg(vt_stats_entry *e, const char *path, uint64_t t, uint64_t hits)
{
    e->rec.cache.budget = 0; /* nothing kept privately */
    e->rec.cache.retained_bytes = 0;
    e->rec.time = t;
    e->rec.shared.present = 1;
    snprintf(e->rec.shared.path, sizeof e->rec.shared.path, "%s", path);
    e->rec.shared.size = 268435456;
    e->rec.shared.data_bytes = 264241152;
    e->rec.shared.used_bytes = 1048576;
    e->rec.shared.hits = hits;
    e->rec.shared.waits = 1;
    e->rec.shared.misses = 2;
    e->rec.shared.attached = 2;
    e->rec.shared.objects = 1;
}

/* The shared cache: one series per segment (from its newest file, never one
 * per process, so no double count), size, use, hits/waits/misses and the hit
 * ratio; a process on it has a budget that is the segment's block room, not 0. */
static void test_shared_cache(void **state)
{
    vt_stats_entry e[4];
    vt_prom_in in = { 0 };

    (void)state;
    rec(&e[0], 51, VT_PSTATE_RUNNING);
    rec(&e[1], 52, VT_PSTATE_RUNNING);
    rec(&e[2], 53, VT_PSTATE_EXITED);
    rec(&e[3], 54, VT_PSTATE_RUNNING); /* private cache only */
    shared_seg(&e[0], "/dev/shm/vsitune-0-default", 1700000000, 5);
    shared_seg(&e[1], "/dev/shm/vsitune-0-default", 1700000009, 7); /* the newest */
    shared_seg(&e[2], "/dev/shm/vsitune-0-\"odd\"", 1700000001, 0);
    e[2].rec.shared.waits = e[2].rec.shared.misses = 0;     /* no lookup yet */
    in.stats = e;
    in.n_stats = 4;
    in.stats_dir_given = 1;
    char *out = render(&in);

    assert_non_null(strstr(out, "vsitune_cache_budget_bytes{pid=\"51\"} 264241152\n"));
    assert_non_null(strstr(out, "vsitune_cache_budget_bytes{pid=\"54\"} 67108864\n"));
    assert_int_equal(count(out, "# TYPE vsitune_shared_cache_size_bytes gauge\n"), 1);
    assert_int_equal(count(out, "vsitune_shared_cache_size_bytes{"), 2);
    assert_non_null(strstr(out, "vsitune_shared_cache_size_bytes{segment=\""
                                "/dev/shm/vsitune-0-default\"} 268435456\n"));
    assert_non_null(strstr(out, "vsitune_shared_cache_used_bytes{segment=\""
                                "/dev/shm/vsitune-0-default\"} 1048576\n"));
    assert_non_null(strstr(out, "vsitune_shared_cache_hits_total{segment=\""
                                "/dev/shm/vsitune-0-default\"} 7\n"));
    assert_non_null(strstr(out, "vsitune_shared_cache_hit_ratio{segment=\""
                                "/dev/shm/vsitune-0-default\"} 0.80000000000000004\n"));
    /* a quote in a path is escaped; no ratio before the first lookup */
    assert_non_null(strstr(out, "vsitune_shared_cache_size_bytes{segment=\""
                                "/dev/shm/vsitune-0-\\\"odd\\\"\"} 268435456\n"));
    assert_int_equal(count(out, "vsitune_shared_cache_hit_ratio{"), 1);
    assert_non_null(strstr(out, "vsitune_shared_cache_attached_processes{segment=\""
                                "/dev/shm/vsitune-0-default\"} 2\n"));
    free(out);

    in.n_stats = 1; /* no segment at all: no shared families */
    e[0].rec.shared.present = 0;
    out = render(&in);
    assert_null(strstr(out, "vsitune_shared_cache_"));
    free(out);
}

static void test_memory_and_cgroup(void **state)
{
    vt_watch_proc p[2] = {
        { .pid = 7, .rss_kb = 2048, .pss_kb = 1024, .anon_kb = 512 },
        { .pid = 8, .rss_kb = 4096, .pss_kb = -1, .anon_kb = 100 },
    };
    vt_cgroup_mem cg = { .version = 1, .has_usage = 1, .usage_bytes = 5000,
                         .has_limit = 0, .has_oom = 1, .oom_kills = 2 };
    vt_prom_in in = { 0 };

    (void)state;
    in.procs = p;
    in.n_procs = 2;
    in.cg = &cg;
    char *out = render(&in);
    assert_non_null(strstr(out, "vsitune_process_rss_bytes{pid=\"7\"} 2097152\n"));
    assert_non_null(strstr(out, "vsitune_process_pss_bytes{pid=\"7\"} 1048576\n"));
    assert_null(strstr(out, "vsitune_process_pss_bytes{pid=\"8\"}")); /* unknown: no sample */
    assert_non_null(strstr(out, "vsitune_process_anonymous_bytes{pid=\"8\"} 102400\n"));
    assert_non_null(strstr(out, "vsitune_cgroup_memory_usage_bytes 5000\n"));
    assert_null(strstr(out, "vsitune_cgroup_memory_limit_bytes")); /* unlimited */
    assert_non_null(strstr(out, "# TYPE vsitune_cgroup_oom_kills_total counter\n"));
    assert_non_null(strstr(out, "vsitune_cgroup_oom_kills_total 2\n"));
    assert_null(strstr(out, "vsitune_requests_total")); /* no counters directory */
    free(out);
}

static void test_listen_parse(void **state)
{
    char host[64], err[256];
    int port;

    (void)state;
    assert_int_equal(vt_metrics_parse_listen("127.0.0.1:9464", host, sizeof host, &port, err,
                                             sizeof err), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 9464);
    assert_int_equal(vt_metrics_parse_listen("[::1]:0", host, sizeof host, &port, err,
                                             sizeof err), 0);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 0);
    const char *bad[] = { "9464", ":9464", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1",
                          "127.0.0.1:80x", "::1:80", "[::1]80", "[]:80", NULL };
    for (int i = 0; bad[i]; i++)
        if (vt_metrics_parse_listen(bad[i], host, sizeof host, &port, err, sizeof err) == 0)
            fail_msg("accepted '%s'", bad[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counters),
        cmocka_unit_test(test_by_backend),
        cmocka_unit_test(test_shared_cache),
        cmocka_unit_test(test_memory_and_cgroup),
        cmocka_unit_test(test_listen_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
