/* test_stats.c: the counters document (stats.c), read back as a reader
 * (tunerd/statsfile.c) reads it: attempts counted by kind and status class,
 * the latency histogram cumulative with its sum and count, requests avoided,
 * the same by backend (the request's counter name; a name that is no
 * backend's counted in the totals only), a buffer too small left empty (never half a document) with the size it
 * needs, VSITUNE_STATS_DIR publication to vsitune-<pid>.json, and a fork()
 * child whose counters start from zero and say whose child it is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cpl_conv.h>
#include <cpl_vsi.h>

#include "stats/stats.h"

/* The number at keys[0] -> keys[1] -> ... in doc (each key searched after
 * the previous one: the document's sections are flat and ordered). */
static long long num_at(const char *doc, const char *const *keys, size_t n)
{
    const char *p = doc;
    char quoted[64];

    for (size_t i = 0; i < n; i++) {
        snprintf(quoted, sizeof quoted, "\"%s\": ", keys[i]);
        p = strstr(p, quoted);
        if (!p)
            fail_msg("no %s in %s", quoted, doc);
        p += strlen(quoted);
    }
    return strtoll(p, NULL, 10);
}

#define NUM(doc, ...) \
    num_at((doc), (const char *const[]){ __VA_ARGS__ }, \
           sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(const char *))

static char *doc_now(void)
{
    static char buf[VT_STATS_JSON_MAX];
    size_t n = vt__stats_json(buf, sizeof buf);

    assert_true(n > 0 && n < sizeof buf);
    assert_int_equal(strlen(buf), n);
    assert_true(buf[0] == '{' && buf[n - 1] == '}');
    return buf;
}

/* One finished attempt of no backend's, as the engine reports it. */
static void attempt(const char *method, int ranged, long status, double seconds)
{
    vt_http_attempt a = { method, ranged, status, seconds, 0, NULL };
    vt__stats_attempt(&a);
}

static void test_attempts_by_kind_and_class(void **state)
{
    static const struct { const char *method; int ranged; long status;
                          const char *kind, *cls; } cases[] = {
        { "GET", 1, 206, "get_range", "2xx" },
        { "GET", 0, 404, "get", "4xx" },
        { NULL, 0, 301, "get", "3xx" },
        { "HEAD", 0, 0, "head", "none" },
        { "PUT", 0, 200, "put", "2xx" },
        { "POST", 0, 503, "post", "5xx" },
        { "DELETE", 0, 204, "delete", "2xx" },
        { "PROPFIND", 0, 207, "other", "2xx" },
        { "GET", 1, 700, "get_range", "none" }, /* not an HTTP status */
    };
    enum { N = sizeof cases / sizeof cases[0] };
    long long before[N];

    (void)state;
    for (size_t i = 0; i < N; i++)
        before[i] = NUM(doc_now(), "http", cases[i].kind, cases[i].cls);
    for (size_t i = 0; i < N; i++)
        attempt(cases[i].method, cases[i].ranged, cases[i].status, 0.001);
    for (size_t i = 0; i < N; i++) {
        long long want = before[i] + 1;
        if (NUM(doc_now(), "http", cases[i].kind, cases[i].cls) != want)
            fail_msg("%s %s: %lld, want %lld", cases[i].kind, cases[i].cls,
                     NUM(doc_now(), "http", cases[i].kind, cases[i].cls), want);
    }
}

static void test_latency_histogram(void **state)
{
    char *d;
    long long count, sum, le5ms, le500ms, le30, inf;

    (void)state;
    d = doc_now();
    count = NUM(d, "latency", "count");
    sum = NUM(d, "latency", "sum_us");
    le5ms = NUM(d, "latency", "le_0.005");
    le500ms = NUM(d, "latency", "le_0.5");
    le30 = NUM(d, "latency", "le_30");
    inf = NUM(d, "latency", "le_inf");

    attempt("GET", 1, 206, 0.003); /* <= 5 ms */
    attempt("GET", 1, 206, 0.3);   /* <= 0.5 s */
    attempt("GET", 1, 206, 40.0);  /* over 30 s: +Inf only */
    attempt("GET", 1, 206, NAN);   /* counted as 0 s */

    d = doc_now();
    assert_int_equal(NUM(d, "latency", "count"), count + 4);
    assert_int_equal(NUM(d, "latency", "sum_us"), sum + 3000 + 300000 + 40000000);
    assert_int_equal(NUM(d, "latency", "le_0.005"), le5ms + 2);
    assert_int_equal(NUM(d, "latency", "le_0.5"), le500ms + 3); /* cumulative */
    assert_int_equal(NUM(d, "latency", "le_30"), le30 + 3);
    assert_int_equal(NUM(d, "latency", "le_inf"), inf + 4);
    assert_int_equal(NUM(d, "latency", "le_inf"), NUM(d, "latency", "count"));
}

static void test_avoided(void **state)
{
    long long lists, heads;

    (void)state;
    lists = NUM(doc_now(), "avoided", "lists");
    heads = NUM(doc_now(), "avoided", "heads");
    vt__stats_avoided(NULL, VT_AVOIDED_LIST);
    vt__stats_avoided(NULL, VT_AVOIDED_HEAD);
    vt__stats_avoided(NULL, VT_AVOIDED_HEAD);
    vt__stats_avoided(NULL, (vt_stats_avoided)7); /* no such counter: ignored */
    assert_int_equal(NUM(doc_now(), "avoided", "lists"), lists + 1);
    assert_int_equal(NUM(doc_now(), "avoided", "heads"), heads + 2);
}

static void test_by_backend(void **state)
{
    static const char *const names[] = { "s3", "gs", "az", "curl" };
    long long req[4], bytes[4], ok[4], c4[4], none[4], lists[4], heads[4];
    long long all, alllists;
    char *d = doc_now();

    (void)state;
    for (int i = 0; i < 4; i++) {
        req[i] = NUM(d, "backends", names[i], "requests");
        bytes[i] = NUM(d, "backends", names[i], "bytes_received");
        ok[i] = NUM(d, "backends", names[i], "2xx");
        c4[i] = NUM(d, "backends", names[i], "4xx");
        none[i] = NUM(d, "backends", names[i], "none");
        lists[i] = NUM(d, "backends", names[i], "avoided_lists");
        heads[i] = NUM(d, "backends", names[i], "avoided_heads");
    }
    all = NUM(d, "latency", "count");
    alllists = NUM(d, "avoided", "lists");
    {
        const vt_http_attempt a[] = {
            { "GET", 1, 206, 0.01, 16384, "gs" },
            { "GET", 1, 206, 0.01, 100, "gs" },
            { "GET", 0, 404, 0.01, 250, "az" },
            { "GET", 1, 0, 0.01, 0, "curl" },
            { "HEAD", 0, 200, 0.01, 0, "s3" },
            { "GET", 1, 206, 0.01, 77, "nosuch" }, /* no backend's: totals only */
            { "GET", 1, 206, 0.01, 77, NULL },
        };
        for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
            vt__stats_attempt(&a[i]);
    }
    vt__stats_avoided("az", VT_AVOIDED_HEAD);
    vt__stats_avoided("curl", VT_AVOIDED_LIST);
    vt__stats_avoided("curl", VT_AVOIDED_LIST);
    d = doc_now();
    assert_int_equal(NUM(d, "latency", "count"), all + 7);
    assert_int_equal(NUM(d, "avoided", "lists"), alllists + 2);
    {
        const long long dreq[4] = { 1, 2, 1, 1 }, dbytes[4] = { 0, 16484, 250, 0 },
                        dok[4] = { 1, 2, 0, 0 }, d4[4] = { 0, 0, 1, 0 },
                        dnone[4] = { 0, 0, 0, 1 }, dlists[4] = { 0, 0, 0, 2 },
                        dheads[4] = { 0, 0, 1, 0 };
        for (int i = 0; i < 4; i++) {
            assert_int_equal(NUM(d, "backends", names[i], "requests"), req[i] + dreq[i]);
            assert_int_equal(NUM(d, "backends", names[i], "bytes_received"),
                             bytes[i] + dbytes[i]);
            assert_int_equal(NUM(d, "backends", names[i], "2xx"), ok[i] + dok[i]);
            assert_int_equal(NUM(d, "backends", names[i], "4xx"), c4[i] + d4[i]);
            assert_int_equal(NUM(d, "backends", names[i], "none"), none[i] + dnone[i]);
            assert_int_equal(NUM(d, "backends", names[i], "avoided_lists"),
                             lists[i] + dlists[i]);
            assert_int_equal(NUM(d, "backends", names[i], "avoided_heads"),
                             heads[i] + dheads[i]);
        }
    }
}

static void test_small_buffer_never_half(void **state)
{
    char small[100];
    size_t need;

    (void)state;
    memset(small, 'x', sizeof small);
    need = vt__stats_json(small, sizeof small);
    assert_true(need >= sizeof small);
    assert_int_equal(small[0], '\0');
    assert_int_equal(vt__stats_json(NULL, 0) > 0, 1);
}

static void test_published_to_stats_dir(void **state)
{
    char dir[] = "/tmp/vt-stats-XXXXXX", path[256], *text = NULL;
    vsi_l_offset len = 0;

    (void)state;
    assert_non_null(mkdtemp(dir));
    CPLSetConfigOption("VSITUNE_STATS_DIR", dir);
    attempt("DELETE", 0, 404, 0.01);
    vt__stats_tick(); /* the first publication of the process */
    snprintf(path, sizeof path, "%s/vsitune-%ld.json", dir, (long)getpid());
    assert_true(VSIIngestFile(NULL, path, (GByte **)&text, &len, -1));
    assert_true(len > 0 && text[len - 1] == '\n');
    assert_int_equal(NUM(text, "pid"), getpid());
    assert_true(NUM(text, "http", "delete", "4xx") >= 1);
    assert_non_null(strstr(text, "\"exited\": false}"));
    VSIFree(text);
    CPLSetConfigOption("VSITUNE_STATS_DIR", NULL);
    unlink(path);
    rmdir(dir);
}

static void test_fork_child_starts_from_zero(void **state)
{
    int fds[2];
    pid_t pid;
    char got[VT_STATS_JSON_MAX] = "";
    ssize_t n, have = 0;
    int status;

    (void)state;
    vt__stats_install_exit_dump(); /* registers the fork handler */
    attempt("GET", 1, 206, 0.01);
    {
        vt_http_attempt a = { "GET", 1, 206, 0.01, 10, "s3" };
        vt__stats_attempt(&a);
    }
    assert_true(NUM(doc_now(), "http", "get_range", "2xx") >= 1);
    assert_true(NUM(doc_now(), "backends", "s3", "requests") >= 1);
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char buf[VT_STATS_JSON_MAX];
        size_t len = vt__stats_json(buf, sizeof buf);
        if (write(fds[1], buf, len) != (ssize_t)len)
            _exit(2);
        _exit(0);
    }
    close(fds[1]);
    while ((n = read(fds[0], got + have, sizeof got - 1 - (size_t)have)) > 0)
        have += n;
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    got[have] = '\0';
    assert_int_equal(NUM(got, "http", "get_range", "2xx"), 0);
    assert_int_equal(NUM(got, "latency", "count"), 0);
    assert_int_equal(NUM(got, "avoided", "heads"), 0);
    assert_int_equal(NUM(got, "backends", "s3", "requests"), 0);
    assert_int_equal(NUM(got, "pid"), pid);
    assert_int_equal(NUM(got, "process", "ppid"), getpid());
    assert_non_null(strstr(got, "\"forked\": true"));
    /* the parent's own counters are untouched */
    assert_true(NUM(doc_now(), "http", "get_range", "2xx") >= 1);
    assert_non_null(strstr(doc_now(), "\"forked\": false"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attempts_by_kind_and_class),
        cmocka_unit_test(test_latency_histogram),
        cmocka_unit_test(test_avoided),
        cmocka_unit_test(test_by_backend),
        cmocka_unit_test(test_small_buffer_never_half),
        cmocka_unit_test(test_published_to_stats_dir),
        cmocka_unit_test(test_fork_child_starts_from_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
