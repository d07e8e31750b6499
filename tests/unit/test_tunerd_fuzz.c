/* test_tunerd_fuzz.c: deterministic mutation fuzzing of tunerd's parsers of
 * outside input: profile files (hand edited), the command line, and the
 * /proc and /sys files detect reads (mountinfo, cgroup, limits, meminfo),
 * and the plugin's counters files `tunerd stats` reads (statsfile.c).
 * Each input must be accepted or refused with a "file:line:"-style message,
 * never crash or overrun (run under -DVT_ASAN=ON to make overruns fatal).
 * Seeded xorshift, so a failure replays. */
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

#include "cli.h"
#include "detect.h"
#include "platform.h"
#include "statsfile.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

static const char seed_profile[] =
    "name = cloudrun\ntitle = Google Cloud Run\ndetect_env = K_SERVICE, CLOUD_RUN_JOB\n"
    "memory_min_mb = 128\nmemory_max_mb = 32768\ncpu_rule = given\n"
    "cpus_allowed = 1, 2, 4, 6, 8\nmax_vcpu = 8\nmax_mb_per_vcpu = 4096\n"
    "tmp_dir = /tmp\nstart_method = fork\nenv.X = y\nnote = n\n";

static const char alphabet[] = "=#,\n \t.-0123456789abcdefgxyz_/env.memory_cpu\"'\\$";

/* Mutates src into dst (cap bytes): flips, inserts, deletes, splices. */
static size_t mutate(const char *src, size_t len, char *dst, size_t cap)
{
    size_t n = len < cap ? len : cap;
    int edits = 1 + (int)(next() % 8);

    memcpy(dst, src, n);
    for (int e = 0; e < edits; e++) {
        size_t at = n ? next() % n : 0;
        switch (next() % 5) {
        case 0: /* replace with an interesting byte */
            if (n)
                dst[at] = alphabet[next() % (sizeof alphabet - 1)];
            break;
        case 1: /* any byte, NUL included */
            if (n)
                dst[at] = (char)(next() & 0xff);
            break;
        case 2: /* insert */
            if (n < cap) {
                memmove(dst + at + 1, dst + at, n - at);
                dst[at] = alphabet[next() % (sizeof alphabet - 1)];
                n++;
            }
            break;
        case 3: /* delete a run */
            if (n) {
                size_t k = 1 + next() % 16;
                if (at + k > n)
                    k = n - at;
                memmove(dst + at, dst + at + k, n - at - k);
                n -= k;
            }
            break;
        default: /* duplicate a run (long lines, repeated keys) */
            if (n) {
                size_t k = 1 + next() % 64;
                if (at + k > n)
                    k = n - at;
                if (n + k <= cap) {
                    memmove(dst + at + k, dst + at, n - at);
                    n += k;
                }
            }
        }
    }
    return n;
}

static void test_profile_parser(void **state)
{
    char buf[4096], err[512];
    vt_platform p;
    int ok = 0;

    (void)state;
    for (int i = 0; i < 20000; i++) {
        size_t n = mutate(seed_profile, sizeof seed_profile - 1, buf, sizeof buf);
        int rc = vt_platform_parse("f/cloudrun.profile", buf, n, &p, err, sizeof err);
        if (rc == 0) {
            ok++;
            assert_string_equal(p.name, "cloudrun");
            assert_true(p.memory_min_mb <= p.memory_max_mb);
            assert_true(p.n_env <= VT_PLATFORM_MAX_ENV);
        } else {
            assert_int_equal(rc, -1);
            if (strncmp(err, "f/cloudrun.profile:", 19) != 0)
                fail_msg("iteration %d: message without file:line: '%s'", i, err);
        }
    }
    /* the mutations are not all fatal: the fuzzer exercises the success path */
    assert_true(ok > 100);
}

static void test_cli_parser(void **state)
{
    static const char *const words[] = {
        "profile", "detect", "exec", "watch", "check-profiles", "--memory", "10240", "0",
        "-5", "abc", "10^9", "--platform", "lambda", "cloudrun", "--cpus", "1.5", "--workers",
        "3", "--format", "json", "k8s-yaml", "--no-plugin", "--", "env", "--memory=", "=",
        "--count", "--interval", "0.1", "--json", "-v", "--help", "", "--workload", "tiles",
        "--format=json", "--memory=99999999999999999999", "--cpus=nan", "--interval=1e9",
        "stats", "--dir", "--clean", "--stats-dir", "--dir=", "/tmp"
    };
    const int nw = (int)(sizeof words / sizeof words[0]);
    char err[1024];
    vt_cli_opts o;

    (void)state;
    for (int i = 0; i < 20000; i++) {
        char *argv[12];
        int argc = 1 + (int)(next() % 10);
        argv[0] = "tunerd";
        for (int a = 1; a < argc; a++)
            argv[a] = (char *)words[next() % (unsigned)nw];
        argv[argc] = NULL;
        int rc = vt_cli_parse(argc, argv, &o, err, sizeof err);
        if (rc == VT_EXIT_OK) {
            assert_true(o.help || o.version || o.command != NULL);
            if (o.command && !strcmp(o.command, "exec") && !o.help)
                assert_non_null(o.cmd);
            assert_true(o.memory_mb >= 0 && o.memory_mb <= VT_SIZE_MAX_MEMORY_MB);
            if (o.clean && !o.help)
                assert_string_equal(o.command, "stats");
            if (o.stats_dir)
                assert_true(o.stats_dir[0] != '\0');
        } else {
            assert_int_equal(rc, VT_EXIT_USAGE);
            assert_true(err[0] != '\0');
            assert_null(strchr(err, '\n'));
        }
    }
}

static char root[64];

static void put(const char *rel, const char *text, size_t n)
{
    char path[512];

    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fwrite(text, 1, n, f);
    fclose(f);
}

static void test_detect_inputs(void **state)
{
    static const char *const seeds[][2] = {
        { "proc/self/mountinfo",
          "34 30 0:31 /a /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
          "31 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
          "40 30 0:37 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n" },
        { "proc/self/cgroup", "4:memory:/a/b\n3:cpu:/a\n0::/a/b\n" },
        { "proc/self/status", "Cpus_allowed_list:\t0-3,8,10-11\n" },
        { "proc/meminfo", "MemTotal: 1000 kB\nMemAvailable: 500 kB\n" },
        { "sys/fs/cgroup/memory/a/b/memory.limit_in_bytes", "1073741824\n" },
        { "sys/fs/cgroup/cpu/a/cpu.cfs_quota_us", "150000\n" },
        { "sys/fs/cgroup/cpu/a/cpu.cfs_period_us", "100000\n" },
        { "sys/fs/cgroup/a/b/memory.max", "max\n" },
        { "sys/fs/cgroup/a/b/cpu.max", "200000 100000\n" },
    };
    const char *dirs[] = { "proc", "proc/self", "sys", "sys/fs", "sys/fs/cgroup",
                           "sys/fs/cgroup/memory", "sys/fs/cgroup/memory/a",
                           "sys/fs/cgroup/memory/a/b", "sys/fs/cgroup/cpu",
                           "sys/fs/cgroup/cpu/a", "sys/fs/cgroup/a", "sys/fs/cgroup/a/b" };
    char sysdir[128], procdir[128], profiles[4096], buf[2048], err[512];
    const char *src = getenv("VT_SOURCE_DIR");

    (void)state;
    assert_non_null(src);
    snprintf(profiles, sizeof profiles, "%s/profiles", src);
    snprintf(root, sizeof root, "/tmp/tunerd-fuzz-XXXXXX");
    assert_non_null(mkdtemp(root));
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char d[256];
        snprintf(d, sizeof d, "%s/%s", root, dirs[i]);
        assert_true(mkdir(d, 0755) == 0 || errno == EEXIST);
    }
    snprintf(sysdir, sizeof sysdir, "%s/sys", root);
    snprintf(procdir, sizeof procdir, "%s/proc", root);
    unsetenv("KUBERNETES_SERVICE_HOST");
    vt_detect_opts o = { sysdir, procdir, profiles };
    for (int i = 0; i < 600; i++) {
        for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
            size_t n = (next() % 3 == 0)
                ? mutate(seeds[s][1], strlen(seeds[s][1]), buf, sizeof buf)
                : strlen(strcpy(buf, seeds[s][1]));
            put(seeds[s][0], buf, n);
        }
        vt_detect d;
        assert_int_equal(vt_detect_run(&o, &d, err, sizeof err), 0);
        assert_true(d.memory_mb >= 0);
        assert_true(d.cpus >= 0);
        assert_true(d.cgroup_version >= 0 && d.cgroup_version <= 2);
        assert_non_null(memchr(d.memory_src, '\0', sizeof d.memory_src));
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

static const char seed_stats[] =
    "{\"pid\": 4242, \"time\": 1700000100, \"cache\": {\"budget\": 67108864, "
    "\"retained_bytes\": 3145728, \"peak_retained_bytes\": 4194304, \"transient_bytes\": 0, "
    "\"hits\": 6, \"misses\": 3, \"waits\": 1, \"evictions\": 2, \"blocks\": 3}, "
    "\"engine\": {\"requests\": 5, \"retries\": 1, \"bytes_received\": 2621440, "
    "\"connections\": 2, \"in_flight\": 0, \"h2_responses\": 4}, \"exited\": true}\n";

static void test_stats_parser(void **state)
{
    static char buf[VT_STATS_FILE_MAX + 256];
    char err[256];
    vt_stats_rec r;
    int ok = 0;

    (void)state;
    for (int i = 0; i < 50000; i++) {
        size_t n = mutate(seed_stats, sizeof seed_stats - 1, buf, sizeof buf);
        /* exactly n bytes: a parser reading past them trips ASan */
        char *exact = malloc(n ? n : 1);
        assert_non_null(exact);
        memcpy(exact, buf, n);
        int rc = vt_stats_parse(exact, n, &r, err, sizeof err);
        free(exact);
        if (rc == 0) {
            ok++;
            assert_true(r.pid >= 1 && r.pid <= INT32_MAX);
            assert_true(r.exited >= -1 && r.exited <= 1);
        } else {
            assert_int_equal(rc, -1);
            assert_true(err[0] != '\0');
            assert_null(strchr(err, '\n'));
            assert_int_equal(r.pid, 0);
        }
    }
    assert_true(ok > 100); /* the success path is exercised too */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_parser),
        cmocka_unit_test(test_cli_parser),
        cmocka_unit_test(test_detect_inputs),
        cmocka_unit_test(test_stats_parser),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
