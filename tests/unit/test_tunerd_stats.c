/* test_tunerd_stats.c: `tunerd stats`'s parser of the plugin's counters file
 * (valid, every truncation, garbage, huge and malformed numbers, unknown
 * keys), the running / exited / killed-or-gone rule on a fake /proc (start
 * time against the counters' time, zombies, a /proc/stat whose btime comes
 * after a long intr line), the directory scan (unreadable files named,
 * FIFOs not waited on), --clean, and watch's counters columns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "statsdir.h"
#include "statsfile.h"
#include "watch.h"

static const char doc[] =
    "{\"pid\": 4242, \"time\": 1700000100, \"cache\": {\"budget\": 67108864, "
    "\"retained_bytes\": 3145728, \"peak_retained_bytes\": 4194304, \"transient_bytes\": 0, "
    "\"hits\": 6, \"misses\": 3, \"waits\": 1, \"evictions\": 2, \"blocks\": 3}, "
    "\"engine\": {\"requests\": 5, \"retries\": 1, \"bytes_received\": 2621440, "
    "\"connections\": 2, \"in_flight\": 0, \"h2_responses\": 4}}\n";

static int parse(const char *text, vt_stats_rec *r, char *err, size_t errlen)
{
    return vt_stats_parse(text, strlen(text), r, err, errlen);
}

/* doc with the first occurrence of `from` replaced by `to`. */
static const char *edit(const char *from, const char *to)
{
    static char buf[8192];
    const char *at = strstr(doc, from);

    assert_non_null(at);
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - doc), doc, to, at + strlen(from));
    return buf;
}

static void expect_error(const char *text, const char *needle)
{
    vt_stats_rec r;
    char err[256];

    if (parse(text, &r, err, sizeof err) == 0)
        fail_msg("accepted: %s", text);
    if (!strstr(err, needle))
        fail_msg("error '%s' does not say '%s' for: %s", err, needle, text);
    assert_int_equal(r.pid, 0); /* nothing half-filled on failure */
}

static void test_valid(void **state)
{
    vt_stats_rec r;
    char err[256];

    (void)state;
    assert_int_equal(parse(doc, &r, err, sizeof err), 0);
    assert_int_equal(r.pid, 4242);
    assert_int_equal(r.time, 1700000100);
    assert_int_equal(r.exited, -1);
    assert_int_equal(r.cache.budget, 67108864);
    assert_int_equal(r.cache.retained_bytes, 3145728);
    assert_int_equal(r.cache.peak_retained_bytes, 4194304);
    assert_int_equal(r.cache.hits, 6);
    assert_int_equal(r.cache.misses, 3);
    assert_int_equal(r.cache.waits, 1);
    assert_int_equal(r.cache.evictions, 2);
    assert_int_equal(r.cache.blocks, 3);
    assert_int_equal(r.engine.requests, 5);
    assert_int_equal(r.engine.retries, 1);
    assert_int_equal(r.engine.bytes_received, 2621440);
    assert_int_equal(r.engine.connections, 2);
    assert_int_equal(r.engine.h2_responses, 4);
    /* (hits + waits) / (hits + waits + misses) */
    assert_true(vt_stats_hit_ratio(&r) > 0.699 && vt_stats_hit_ratio(&r) < 0.701);

    /* the exit dump's marker, in either place */
    assert_int_equal(parse(edit("}}\n", "}, \"exited\": true}"), &r, err, sizeof err), 0);
    assert_int_equal(r.exited, 1);
    assert_int_equal(parse(edit("{\"pid\"", "{\"exited\": false, \"pid\""), &r, err,
                           sizeof err), 0);
    assert_int_equal(r.exited, 0);

    /* a newer plugin's extra keys are skipped, known ones still read */
    assert_int_equal(parse(edit("\"engine\": {", "\"extra\": {\"a\": 1, \"b\": {\"c\": "
                                "true}, \"d\": \"x y\", \"e\": null}, \"engine\": {\"new\": 7, "),
                           &r, err, sizeof err), 0);
    assert_int_equal(r.engine.requests, 5);

    /* no whitespace at all is the same document */
    char tight[1024];
    size_t k = 0;
    for (const char *p = doc; *p; p++)
        if (*p != ' ' && *p != '\n')
            tight[k++] = *p;
    tight[k] = '\0';
    assert_int_equal(parse(tight, &r, err, sizeof err), 0);
    assert_int_equal(r.engine.bytes_received, 2621440);
    assert_true(vt_stats_hit_ratio(&(vt_stats_rec){ 0 }) < 0); /* no lookups: unknown */
}

static void test_partial(void **state)
{
    size_t len = strlen(doc);
    vt_stats_rec r;
    char err[256];

    (void)state;
    /* every proper prefix is refused; the cut ones say so */
    for (size_t n = 0; n < len - 1; n++) { /* len - 1: without the final newline is whole */
        if (vt_stats_parse(doc, n, &r, err, sizeof err) == 0)
            fail_msg("prefix of %zu bytes accepted", n);
        if (!strstr(err, "truncated") && !strstr(err, "missing") && n > 0)
            fail_msg("prefix of %zu bytes: '%s'", n, err);
        assert_null(strchr(err, '\n'));
    }
    assert_int_equal(vt_stats_parse(doc, len - 1, &r, err, sizeof err), 0);
    expect_error("", "truncated at offset 0");
    expect_error(edit(", \"blocks\": 3", ""), "missing cache.blocks");
    expect_error(edit("\"time\": 1700000100, ", ""), "missing time");
}

static void test_garbage(void **state)
{
    (void)state;
    expect_error("garbage", "unexpected 'g' at offset 0");
    expect_error("[1, 2]", "unexpected '['");
    expect_error("\x01\x02", "unexpected byte 0x01");
    expect_error(edit("}}\n", "}} {}"), "trailing data");
    expect_error(edit("\"hits\": 6", "\"hits\": 6, \"hits\": 7"), "duplicate key cache.hits");
    expect_error(edit("\"cache\": {", "\"cache\": {}, \"cache\": {"), "duplicate key cache");
    expect_error(edit("\"requests\"", "\"req\\u0075ests\""), "plain string");
    expect_error(edit("\"pid\": 4242", "\"pid\": \"4242\""), "whole number");
    expect_error(edit("\"pid\": 4242", "\"pid\": 0"), "pid 0 out of range");
    expect_error(edit("\"pid\": 4242", "\"pid\": 4294967296"), "out of range");
    expect_error(edit("}}\n", "}, \"exited\": 1}"), "true or false");
}

static void test_numbers(void **state)
{
    vt_stats_rec r;
    char err[256];

    (void)state;
    /* the largest a uint64_t holds is accepted exactly; one more is refused */
    assert_int_equal(parse(edit("\"bytes_received\": 2621440",
                                "\"bytes_received\": 18446744073709551615"), &r, err,
                           sizeof err), 0);
    assert_true(r.engine.bytes_received == UINT64_MAX);
    expect_error(edit("\"bytes_received\": 2621440", "\"bytes_received\": 18446744073709551616"),
                 "engine.bytes_received: number too large");
    expect_error(edit("\"hits\": 6", "\"hits\": 99999999999999999999999999999999"),
                 "cache.hits: number too large");
    expect_error(edit("\"misses\": 3", "\"misses\": -3"), "cache.misses: negative");
    expect_error(edit("\"misses\": 3", "\"misses\": 3.5"), "not a whole number");
    expect_error(edit("\"misses\": 3", "\"misses\": 3e2"), "not a whole number");
    expect_error(edit("\"misses\": 3", "\"misses\": 03"), "leading zero");
    expect_error(edit("\"misses\": 3", "\"misses\": true"), "whole number");
}

static void test_bounds(void **state)
{
    vt_stats_rec r;
    char err[256];
    static char big[VT_STATS_FILE_MAX + 64];

    (void)state;
    /* a NUL inside is not the end of the document */
    char nul[1024];
    size_t n = strlen(doc);
    memcpy(nul, doc, n);
    nul[10] = '\0';
    assert_int_equal(vt_stats_parse(nul, n, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "0x00"));
    /* larger than the bound: refused before parsing */
    memset(big, ' ', sizeof big);
    memcpy(big, doc, n);
    assert_int_equal(vt_stats_parse(big, sizeof big, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "larger than"));
    /* nesting is bounded */
    assert_int_equal(parse(edit("\"engine\": {", "\"x\": {\"y\": {\"z\": {}}}, \"engine\": {"),
                           &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "nested deeper"));
    /* keys are bounded */
    assert_int_equal(parse(edit("\"engine\": {",
                                "\"a_key_much_longer_than_thirty_two_bytes\": 1, \"engine\": {"),
                           &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "longer than 31"));
    /* a tiny error buffer is never overrun */
    char tiny[8];
    assert_int_equal(vt_stats_parse("garbage", 7, &r, tiny, sizeof tiny), -1);
    assert_int_equal(strlen(tiny), sizeof tiny - 1);
}

/* The plugin's whole document (vsiplugin/stats/stats.c), as it wrote it in a run. */
static const char full[] =
    "{\"pid\": 1824, \"time\": 1796077027, \"cache\": {\"budget\": 67108864, "
    "\"retained_bytes\": 196608, \"peak_retained_bytes\": 196608, \"transient_bytes\": 0, "
    "\"hits\": 10, \"misses\": 3, \"waits\": 0, \"evictions\": 0, \"blocks\": 3}, "
    "\"engine\": {\"requests\": 2, \"retries\": 0, \"bytes_received\": 196608, "
    "\"connections\": 1, \"in_flight\": 0, \"h2_responses\": 0}, \"http\": {\"get_range\": "
    "{\"2xx\": 2, \"3xx\": 0, \"4xx\": 0, \"5xx\": 0, \"none\": 0}, \"get\": {\"2xx\": 0, "
    "\"3xx\": 0, \"4xx\": 1, \"5xx\": 0, \"none\": 0}, \"head\": {\"2xx\": 0, \"3xx\": 0, "
    "\"4xx\": 0, \"5xx\": 0, \"none\": 0}, \"put\": {\"2xx\": 0, \"3xx\": 0, \"4xx\": 0, "
    "\"5xx\": 0, \"none\": 0}, \"post\": {\"2xx\": 0, \"3xx\": 0, \"4xx\": 0, \"5xx\": 0, "
    "\"none\": 0}, \"delete\": {\"2xx\": 0, \"3xx\": 0, \"4xx\": 0, \"5xx\": 0, \"none\": 0}, "
    "\"other\": {\"2xx\": 0, \"3xx\": 0, \"4xx\": 0, \"5xx\": 0, \"none\": 7}}, "
    "\"latency\": {\"le_0.005\": 0, \"le_0.01\": 1, \"le_0.025\": 1, \"le_0.05\": 1, "
    "\"le_0.1\": 2, \"le_0.25\": 2, \"le_0.5\": 2, \"le_1\": 2, \"le_2.5\": 2, \"le_5\": 2, "
    "\"le_10\": 2, \"le_30\": 2, \"le_inf\": 2, \"sum_us\": 75597, \"count\": 2}, "
    "\"avoided\": {\"lists\": 1, \"heads\": 1}, \"process\": {\"ppid\": 1540, "
    "\"forked\": false, \"oom_kills\": 0, \"oom_file\": "
    "\"/sys/fs/cgroup/memory/x/memory.oom_control\"}, \"exited\": false}\n";

/* full with the first occurrence of `from` replaced by `to`. */
static const char *edit_full(const char *from, const char *to)
{
    static char buf[8192];
    const char *at = strstr(full, from);

    assert_non_null(at);
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - full), full, to, at + strlen(from));
    return buf;
}

static void test_sections(void **state)
{
    vt_stats_rec r;
    char err[256];

    (void)state;
    assert_int_equal(parse(full, &r, err, sizeof err), 0);
    assert_int_equal(r.http.present, 1);
    assert_int_equal(r.http.n[0][0], 2);   /* get_range 2xx */
    assert_int_equal(r.http.n[1][2], 1);   /* get 4xx */
    assert_int_equal(r.http.n[6][4], 7);   /* other none */
    assert_int_equal(r.latency.present, 1);
    assert_int_equal(r.latency.le[0], 0);
    assert_int_equal(r.latency.le[1], 1);
    assert_int_equal(r.latency.le[VT_LAT_BOUNDS], 2);
    assert_int_equal(r.latency.sum_us, 75597);
    assert_int_equal(r.avoided.lists, 1);
    assert_int_equal(r.avoided.heads, 1);
    assert_int_equal(r.process.present, 1);
    assert_int_equal(r.process.ppid, 1540);
    assert_int_equal(r.process.forked, 0);
    assert_int_equal(r.process.has_oom, 1);
    assert_string_equal(r.process.oom_file, "/sys/fs/cgroup/memory/x/memory.oom_control");
    assert_int_equal(r.exited, 0);

    /* an older plugin's document has none of the sections: still readable */
    assert_int_equal(parse(doc, &r, err, sizeof err), 0);
    assert_int_equal(r.http.present + r.latency.present + r.avoided.present +
                     r.process.present, 0);
    /* a section that is there must be whole */
    expect_error(edit_full("\"heads\": 1", "\"headz\": 1"), "missing avoided.heads");
    expect_error(edit_full("\"delete\": {\"2xx\": 0, ", "\"delete\": {"),
                 "missing http.delete.2xx");
    expect_error(edit_full("\"other\": {\"2xx\": 0, \"3xx\": 0, \"4xx\": 0, \"5xx\": 0, "
                           "\"none\": 7}", "\"others\": {}"), "missing http.other");
    expect_error(edit_full("\"le_0.1\": 2", "\"le_0.1\": 0"), "not cumulative");
    expect_error(edit_full("\"le_inf\": 2", "\"le_inf\": 3"), "le_inf 3 is not the count 2");
    expect_error(edit_full(", \"oom_file\": \"/sys/fs/cgroup/memory/x/memory.oom_control\"", ""),
                 "oom_kills and oom_file come together");
    expect_error(edit_full("\"forked\": false", "\"forked\": 0"), "true or false");
    expect_error(edit_full("\"get\": {\"2xx\": 0", "\"get\": {\"2xx\": 0, \"2xx\": 1"),
                 "duplicate key http.get.2xx");
    /* the oom fields are optional (no memory cgroup found) */
    assert_int_equal(parse(edit_full(", \"oom_kills\": 0, \"oom_file\": "
                                     "\"/sys/fs/cgroup/memory/x/memory.oom_control\"", ""),
                           &r, err, sizeof err), 0);
    assert_int_equal(r.process.has_oom, 0);
    /* every proper prefix of the whole document is refused */
    for (size_t n = 0; n + 1 < strlen(full); n++)
        if (vt_stats_parse(full, n, &r, err, sizeof err) == 0)
            fail_msg("prefix of %zu bytes accepted", n);
}

/* The "backends" section (a plugin with it writes every backend), as the
 * plugin writes it after "avoided". */
#define BE(name, req, bytes, lists, heads, ok, c4) \
    "\"" name "\": {\"requests\": " #req ", \"bytes_received\": " #bytes \
    ", \"avoided_lists\": " #lists ", \"avoided_heads\": " #heads ", \"2xx\": " #ok \
    ", \"3xx\": 0, \"4xx\": " #c4 ", \"5xx\": 0, \"none\": 0}"
static const char backends_sec[] =
    "\"backends\": {" BE("s3", 2, 196608, 1, 1, 2, 0) ", " BE("gs", 3, 70000, 0, 1, 2, 1)
    ", " BE("az", 0, 0, 0, 0, 0, 0) ", " BE("curl", 0, 0, 0, 0, 0, 0) "}, ";

static void test_backends_section(void **state)
{
    vt_stats_rec r;
    char err[256], with[8192];
    const char *at = strstr(full, "\"process\": ");

    (void)state;
    snprintf(with, sizeof with, "%.*s%s%s", (int)(at - full), full, backends_sec, at);
    assert_int_equal(parse(with, &r, err, sizeof err), 0);
    assert_int_equal(r.backends.present, 1);
    assert_string_equal(vt_backend_names[0], "s3");
    assert_string_equal(vt_backend_names[3], "curl");
    assert_int_equal(r.backends.b[0].requests, 2);
    assert_int_equal(r.backends.b[0].bytes_received, 196608);
    assert_int_equal(r.backends.b[0].avoided_lists, 1);
    assert_int_equal(r.backends.b[1].requests, 3);
    assert_int_equal(r.backends.b[1].avoided_heads, 1);
    assert_int_equal(r.backends.b[1].status[0], 2);
    assert_int_equal(r.backends.b[1].status[2], 1);
    assert_int_equal(r.backends.b[2].requests, 0);
    /* to a reader older than the section it is an unknown key: skipped whole
     * (three levels deep), the rest read */
    {
        char renamed[8192];
        const char *b = strstr(with, "\"backends\"");
        snprintf(renamed, sizeof renamed, "%.*s\"backendz\"%s", (int)(b - with), with,
                 b + strlen("\"backends\""));
        assert_int_equal(parse(renamed, &r, err, sizeof err), 0);
        assert_int_equal(r.backends.present, 0);
        assert_int_equal(r.avoided.heads, 1);
    }
    /* a file without it (an older plugin): readable, not present */
    assert_int_equal(parse(full, &r, err, sizeof err), 0);
    assert_int_equal(r.backends.present, 0);
    /* a section that is there must be whole */
    {
        char cut[8192];
        const char *az = strstr(with, "\"az\": {");
        const char *end = strstr(az, "}, ") + 3;
        snprintf(cut, sizeof cut, "%.*s%s", (int)(az - with), with, end);
        expect_error(cut, "missing backends.az");
        az = strstr(with, "\"bytes_received\": 70000, ");
        snprintf(cut, sizeof cut, "%.*s%s", (int)(az - with), with,
                 az + strlen("\"bytes_received\": 70000, "));
        expect_error(cut, "missing backends.gs.bytes_received");
    }
    /* a later plugin's unknown backend is skipped */
    {
        char more[8192];
        const char *c = strstr(with, "\"curl\": {");
        snprintf(more, sizeof more, "%.*s\"ftp\": {\"requests\": 5}, %s",
                 (int)(c - with), with, c);
        assert_int_equal(parse(more, &r, err, sizeof err), 0);
        assert_int_equal(r.backends.b[3].requests, 0);
    }
}

/* -- a fake /proc and a stats directory ------------------------------------ */
static char root[64], proc[96], dir[96];

static void put(const char *base, const char *rel, const char *text)
{
    char path[512], d[512];

    snprintf(path, sizeof path, "%s/%s", base, rel);
    snprintf(d, sizeof d, "%s", path);
    *strrchr(d, '/') = '\0';
    if (mkdir(d, 0755) && errno != EEXIST)
        fail_msg("mkdir %s", d);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* /proc/<pid>/stat of a process in state st that started `secs` after boot */
static void put_pid(int pid, char st, long secs)
{
    char rel[64], text[512];
    long tck = sysconf(_SC_CLK_TCK);

    snprintf(rel, sizeof rel, "%d/stat", pid);
    snprintf(text, sizeof text, "%d (py (worker) 1) %c 1 1 1 0 -1 4194304 100 0 0 0 10 5 0 0 "
             "20 0 1 0 %ld 1000 100 18446744073709551615\n", pid, st, secs * tck);
    put(proc, rel, text);
}

/* the counters file of pid written at time t, exited or not; through a
 * temporary file and rename(), as the plugin writes it */
static void put_counters(int pid, long long t, int exited)
{
    const char *rest = doc + strlen("{\"pid\": 4242, \"time\": 1700000100");
    char rel[64], text[1024];

    snprintf(rel, sizeof rel, "vsitune-%d.json", pid);
    snprintf(text, sizeof text, "{\"pid\": %d, \"time\": %lld%.*s%s", pid, t,
             (int)strlen(rest) - 2, rest, exited ? ", \"exited\": true}\n" : "}\n");
    put(dir, "counters.tmp", text);
    char from[256], to[256];
    snprintf(from, sizeof from, "%s/counters.tmp", dir);
    snprintf(to, sizeof to, "%s/%s", dir, rel);
    assert_int_equal(rename(from, to), 0);
}

static int setup(void **state)
{
    char intr[2048];
    size_t k;

    (void)state;
    snprintf(root, sizeof root, "/tmp/tunerd-stats-XXXXXX");
    if (!mkdtemp(root))
        return -1;
    snprintf(proc, sizeof proc, "%s/proc", root);
    snprintf(dir, sizeof dir, "%s/stats", root);
    if (mkdir(proc, 0755) || mkdir(dir, 0755))
        return -1;
    /* btime after an intr line longer than the reader's chunk, with a decoy
     * "btime " where the second chunk of that line starts */
    k = (size_t)snprintf(intr, sizeof intr, "cpu  1 2 3\nintr 123");
    size_t line_start = strlen("cpu  1 2 3\n");
    for (; k < line_start + 511; k++)
        intr[k] = k % 2 ? ' ' : '7';
    k += (size_t)snprintf(intr + k, sizeof intr - k, "btime 42 0 0 0 0 0 0 0 0 0 0 0\n"
                          "ctxt 99\nbtime 1700000000\nprocesses 5\n");
    put(proc, "stat", intr);
    put_pid(100, 'S', 10);   /* started at 1700000010 */
    put_pid(101, 'Z', 10);   /* a zombie */
    put_pid(102, 'R', 500);  /* started at 1700000500 */
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];

    (void)state;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_state_rule(void **state)
{
    vt_stats_rec r = { .pid = 100, .time = 1700000100, .exited = -1 };

    (void)state;
    assert_int_equal(vt_stats_state(&r, proc), VT_PSTATE_RUNNING);
    r.exited = 0;
    assert_int_equal(vt_stats_state(&r, proc), VT_PSTATE_RUNNING);
    r.exited = 1; /* the exit dump ran: exited, whatever /proc says */
    assert_int_equal(vt_stats_state(&r, proc), VT_PSTATE_EXITED);
    r.exited = 0;
    r.time = 1700000011; /* within the rounding second of the start */
    assert_int_equal(vt_stats_state(&r, proc), VT_PSTATE_RUNNING);
    r.time = 1700000005; /* counters older than the process: pid reused */
    assert_int_equal(vt_stats_state(&r, proc), VT_PSTATE_GONE);
    r.pid = 101; /* zombie without the exit dump */
    r.time = 1700000100;
    assert_int_equal(vt_stats_state(&r, proc), VT_PSTATE_GONE);
    r.pid = 103; /* no such process */
    assert_int_equal(vt_stats_state(&r, proc), VT_PSTATE_GONE);
    assert_string_equal(vt_pstate_name(VT_PSTATE_GONE), "killed-or-gone");
    assert_string_equal(vt_pstate_name(VT_PSTATE_EXITED), "exited");
    assert_string_equal(vt_pstate_name(VT_PSTATE_RUNNING), "running");
    assert_string_equal(vt_pstate_name(VT_PSTATE_ENDED), "ended");

    /* a fork() child gone without the exit dump: "ended" while its cgroup's
     * oom_kill count is the one it recorded, "killed-or-gone" once it grew */
    char oom[256];
    snprintf(oom, sizeof oom, "%s/memory.oom_control", root);
    put(root, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
    vt_stats_rec c = { .pid = 103, .time = 1700000100, .exited = 0 };
    c.process.present = 1;
    c.process.forked = 1;
    c.process.has_oom = 1;
    c.process.oom_kills = 3;
    snprintf(c.process.oom_file, sizeof c.process.oom_file, "%s", oom);
    assert_int_equal(vt_stats_state(&c, proc), VT_PSTATE_ENDED);
    c.pid = 101; /* a zombie child: the same */
    assert_int_equal(vt_stats_state(&c, proc), VT_PSTATE_ENDED);
    put(root, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 4\n");
    assert_int_equal(vt_stats_state(&c, proc), VT_PSTATE_GONE);
    put(root, "memory.oom_control", "oom_kill 3\n");
    c.process.forked = 0; /* not a fork child: no exit dump means killed or crashed */
    assert_int_equal(vt_stats_state(&c, proc), VT_PSTATE_GONE);
    c.process.forked = 1;
    c.process.has_oom = 0; /* no cgroup count recorded: cannot tell */
    assert_int_equal(vt_stats_state(&c, proc), VT_PSTATE_GONE);
    c.process.has_oom = 1; /* the file is gone, or not a regular file */
    snprintf(c.process.oom_file, sizeof c.process.oom_file, "%s", proc);
    assert_int_equal(vt_stats_state(&c, proc), VT_PSTATE_GONE);
    c.pid = 100; /* alive: running, whatever the cgroup says */
    assert_int_equal(vt_stats_state(&c, proc), VT_PSTATE_RUNNING);
}

static void test_scan_print_clean(void **state)
{
    static vt_stats_entry e[16];
    char err[256], path[256], *buf = NULL;
    size_t len = 0;
    int found;

    (void)state;
    put_counters(100, 1700000100, 0); /* running */
    put_counters(102, 1700000100, 0); /* pid reused by a younger process */
    put_counters(7, 1700000200, 1);   /* exited */
    put_counters(8, 1700000200, 0);   /* killed */
    put(dir, "vsitune-9.json", "{\"pid\": 9, \"time\": 1");              /* partial */
    put_counters(11, 1700000200, 0); /* ...under another pid's name */
    char from[256], to[256];
    snprintf(from, sizeof from, "%s/vsitune-11.json", dir);
    snprintf(to, sizeof to, "%s/vsitune-10.json", dir);
    assert_int_equal(rename(from, to), 0);
    put(dir, "vsitune-12.json.12.tmp", "{");                             /* a write */
    put(dir, "notes.txt", "x");
    snprintf(path, sizeof path, "%s/vsitune-13.json", dir);
    assert_int_equal(mkfifo(path, 0600), 0); /* must not block the scan */

    int n = vt_stats_scan(dir, proc, e, 16, &found, err, sizeof err);
    assert_int_equal(n, 7);
    assert_int_equal(found, 7);
    /* readable first, by pid */
    assert_int_equal(e[0].rec.pid, 7);
    assert_int_equal(e[0].state, VT_PSTATE_EXITED);
    assert_int_equal(e[1].rec.pid, 8);
    assert_int_equal(e[1].state, VT_PSTATE_GONE);
    assert_int_equal(e[2].rec.pid, 100);
    assert_int_equal(e[2].state, VT_PSTATE_RUNNING);
    assert_int_equal(e[3].rec.pid, 102);
    assert_int_equal(e[3].state, VT_PSTATE_GONE);
    for (int i = 0; i < 4; i++)
        assert_int_equal(e[i].ok, 1);
    assert_string_equal(e[4].file, "vsitune-10.json");
    assert_non_null(strstr(e[4].error, "holds pid 11"));
    assert_string_equal(e[5].file, "vsitune-13.json");
    assert_string_equal(e[5].error, "not a regular file");
    assert_string_equal(e[6].file, "vsitune-9.json");
    assert_non_null(strstr(e[6].error, "truncated"));

    /* bounded: cap 2 reads two, counts all */
    static vt_stats_entry few[2];
    assert_int_equal(vt_stats_scan(dir, proc, few, 2, &found, err, sizeof err), 2);
    assert_int_equal(found, 7);
    assert_int_equal(vt_stats_scan("/nonexistent/dir", proc, e, 16, &found, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/dir"));

    /* watch's lookup: only a running writer's counters */
    vt_stats_rec r;
    assert_int_equal(vt_stats_lookup(dir, proc, 100, &r), 0);
    assert_int_equal(r.engine.requests, 5);
    assert_int_equal(vt_stats_lookup(dir, proc, 102, &r), -1);
    assert_int_equal(vt_stats_lookup(dir, proc, 8, &r), -1);
    assert_int_equal(vt_stats_lookup(dir, proc, 55, &r), -1);

    /* --clean: every file of a process not running, nothing else; but not
     * one rewritten since the scan (a new process under that pid) */
    put_counters(8, 1700000300, 0);
    assert_int_equal(vt_stats_clean(dir, e, n, err, sizeof err), 0);
    assert_int_equal(e[0].removed, 1);
    assert_int_equal(e[1].removed, 0);
    assert_int_equal(e[2].removed, 0);
    assert_int_equal(e[3].removed, 1);
    for (int i = 4; i < n; i++)
        assert_int_equal(e[i].removed, 0);
    snprintf(path, sizeof path, "%s/vsitune-7.json", dir);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof path, "%s/vsitune-8.json", dir);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/vsitune-100.json", dir);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/vsitune-9.json", dir);
    assert_int_equal(access(path, F_OK), 0);

    FILE *f = open_memstream(&buf, &len);
    vt_stats_print(f, "D", e, n, found, (time_t)1700000110, NULL);
    fclose(f);
    assert_non_null(strstr(buf, "# tunerd stats: D: 4 process(es), 3 unreadable file(s)\n"));
    assert_non_null(strstr(buf, "# cgroup oom_kill: unknown (no memory cgroup found)\n"));
    assert_non_null(strstr(buf, "recv_mib conns cache_mib budget_mib  peak_mib"));
    assert_non_null(strstr(buf, "     100 running            10         5       1       2.5"
                                "     2       3.0       64.0       4.0   70.0\n"));
    assert_non_null(strstr(buf, "       7 exited              0 "));
    assert_non_null(strstr(buf, "     102 killed-or-gone     10 "));
    assert_non_null(strstr(buf, "unreadable D/vsitune-9.json: truncated"));
    assert_non_null(strstr(buf, "removed D/vsitune-7.json (exited)\n"));
    assert_null(strstr(buf, "removed D/vsitune-8.json"));
    free(buf);
}

/* The shared cache's section: parsed, and printed once per segment from the
 * newest record that names it, whatever the number of processes. */
static void test_shared_section(void **state)
{
    static const char shared[] =
        ", \"shared\": {\"path\": \"/dev/shm/vsitune-0-default\", \"size\": 268435456, "
        "\"data_bytes\": 264175616, \"used_bytes\": 20971520, \"reserved_bytes\": 25165824, "
        "\"attached\": 3, \"objects\": 2, \"hits\": 90, \"misses\": 10, \"waits\": 0, "
        "\"wait_timeouts\": 0, \"evictions\": 4, \"takeovers\": 1, \"repairs\": 0}}\n";
    vt_stats_rec a, b, c;
    const vt_stats_rec *recs[3] = {&a, &b, &c};
    char err[256], out[4096], text[8192];
    FILE *f;

    (void)state;
    snprintf(text, sizeof text, "%.*s%s", (int)(strrchr(doc, '}') - doc), doc, shared);
    assert_int_equal(parse(text, &a, err, sizeof err), 0);
    assert_int_equal(a.shared.present, 1);
    assert_string_equal(a.shared.path, "/dev/shm/vsitune-0-default");
    assert_int_equal(a.shared.attached, 3);
    assert_int_equal(a.shared.hits, 90);
    b = a;
    b.time += 5;
    b.shared.hits = 95;             /* newer: this one is printed */
    assert_int_equal(parse(doc, &c, err, sizeof err), 0);
    assert_int_equal(c.shared.present, 0);
    f = fmemopen(out, sizeof out, "w");
    assert_non_null(f);
    vt_stats_print_shared(f, recs, 3);
    fclose(f);
    assert_non_null(strstr(out, "# shared cache /dev/shm/vsitune-0-default: 256.0 MiB"));
    assert_non_null(strstr(out, "hit 90.5%"));   /* (95 + 0) / (95 + 0 + 10) */
    assert_non_null(strstr(out, "3 process(es) attached"));
    assert_null(strstr(strstr(out, "# shared") + 1, "# shared")); /* once */
    expect_error(edit("\"cache\"", "\"shared\": {\"path\": 3}, \"cache\""), "expected");
}

static void test_watch_columns(void **state)
{
    vt_watch_proc p[2] = {
        { .pid = 31, .comm = "worker", .rss_kb = 10240, .pss_kb = 5120, .anon_kb = 2048,
          .has_stats = 1, .requests = 12, .cache_bytes = 3 * 1048576 },
        { .pid = 32, .comm = "other", .rss_kb = 1024, .pss_kb = 1024, .anon_kb = 1024 },
    };
    char *buf = NULL;
    size_t len = 0;

    (void)state;
    FILE *f = open_memstream(&buf, &len);
    vt_watch_print(f, "12:00:00", p, 2, 2, 1);
    fclose(f);
    assert_non_null(strstr(buf, "12:00:00        31      10.0       5.0       2.0        12"
                                "       3.0  worker\n"));
    assert_non_null(strstr(buf, "12:00:00        32       1.0       1.0       1.0         -"
                                "         -  other\n"));
    assert_non_null(strstr(buf, "12:00:00     total      11.0       6.0       3.0        12"
                                "       3.0  2 process(es)\n"));
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_partial),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_sections),
        cmocka_unit_test(test_backends_section),
        cmocka_unit_test_setup_teardown(test_state_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scan_print_clean, setup, teardown),
        cmocka_unit_test(test_watch_columns),
        cmocka_unit_test(test_shared_section),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
