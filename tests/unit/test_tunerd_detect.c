/* test_tunerd_detect.c: `tunerd detect` on fake /sys and /proc trees built
 * in a temporary directory: Lambda (env), Cloud Run (env + cgroup v2),
 * Kubernetes on cgroup v1 (a parent's limit binds), cgroup v2 inside a
 * cgroup namespace, and a bare host (meminfo + Cpus_allowed_list). The real
 * cgroup v1 of this machine is checked by tests/integration/test_tunerd_cli.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "defaults.h" /* VT_DEFAULT_SHARED_CACHE_SIZE: the default asked */
#include "detect.h"

static char root[256];
static char sysdir[300], procdir[300], profiles[4096];

static void write_file(const char *rel, const char *text)
{
    char path[1024], dir[1024];

    snprintf(path, sizeof path, "%s/%s", root, rel);
    /* mkdir -p the parent */
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(dir, 0755) && errno != EEXIST)
                fail_msg("mkdir %s: %s", dir, strerror(errno));
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    if (!f)
        fail_msg("open %s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

static const char *const platform_vars[] = {
    "AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "K_SERVICE",
    "CLOUD_RUN_JOB", "FUNCTIONS_WORKER_RUNTIME", "FUNCTIONS_EXTENSION_VERSION",
    "WEBSITE_MEMORY_LIMIT_MB", "KUBERNETES_SERVICE_HOST", "TUNERD_SYSFS_ROOT",
    "TUNERD_PROCFS_ROOT", NULL
};

static int setup(void **state)
{
    (void)state;
    const char *src = getenv("VT_SOURCE_DIR");
    if (!src)
        return -1;
    snprintf(profiles, sizeof profiles, "%s/profiles", src);
    snprintf(root, sizeof root, "/tmp/tunerd-detect-XXXXXX");
    if (!mkdtemp(root))
        return -1;
    snprintf(sysdir, sizeof sysdir, "%s/sys", root);
    snprintf(procdir, sizeof procdir, "%s/proc", root);
    for (int i = 0; platform_vars[i]; i++)
        unsetenv(platform_vars[i]);
    write_file("proc/meminfo", "MemTotal:       16384000 kB\nMemFree:  1000 kB\n"
               "MemAvailable:   12288000 kB\n");
    write_file("proc/self/status", "Name:\tx\nCpus_allowed_list:\t0-3\n");
    return 0;
}

static int teardown(void **state)
{
    char cmd[512];

    (void)state;
    for (int i = 0; platform_vars[i]; i++)
        unsetenv(platform_vars[i]);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static void run(vt_detect *d)
{
    char err[512];
    vt_detect_opts o = { sysdir, procdir, profiles };

    if (vt_detect_run(&o, d, err, sizeof err))
        fail_msg("%s", err);
}

static const char v1_mountinfo[] =
    "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

static void test_lambda(void **state)
{
    vt_detect d;

    (void)state;
    setenv("AWS_LAMBDA_FUNCTION_NAME", "fn", 1);
    setenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "3008", 1);
    write_file("proc/self/cgroup", "4:memory:/sandbox\n3:cpu,cpuacct:/sandbox\n0::/\n");
    write_file("proc/self/mountinfo", v1_mountinfo);
    write_file("sys/fs/cgroup/memory/sandbox/memory.limit_in_bytes", "9223372036854771712\n");
    write_file("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    write_file("sys/fs/cgroup/cpu,cpuacct/sandbox/cpu.cfs_quota_us", "-1\n");
    run(&d);
    assert_string_equal(d.platform, "lambda");
    assert_string_equal(d.platform_src, "env AWS_LAMBDA_FUNCTION_NAME is set");
    assert_int_equal(d.memory_mb, 3008);
    assert_string_equal(d.memory_src, "env AWS_LAMBDA_FUNCTION_MEMORY_SIZE");
    assert_int_equal(d.cgroup_version, 1);
    assert_int_equal(d.cg_memory_mb, -1);
    assert_true(d.cg_cpus < 0);
    assert_int_equal(d.affinity_cpus, 4);
    /* the tier's vCPU (3008 / 1769), never the host's 4 cores (seed 000) */
    assert_true(fabs(d.cpus - 3008.0 / 1769.0) < 1e-9);
    assert_non_null(strstr(d.cpus_src, "lambda rule"));
    assert_non_null(strstr(d.cpus_src, "not the host's 4 cores"));
    setenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "10240", 1);
    run(&d);
    assert_true(fabs(d.cpus - 10240.0 / 1769.0) < 1e-9);

    /* a memory variable that is not a number is reported, not trusted */
    setenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "3GB", 1);
    run(&d);
    assert_int_equal(d.platform_memory_mb, 0);
    assert_non_null(strstr(d.warning, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=3GB"));
    assert_int_equal(d.memory_mb, 16000); /* falls back to MemTotal */
}

static const char v2_mountinfo[] =
    "30 22 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";

static void test_cloudrun_v2(void **state)
{
    vt_detect d;

    (void)state;
    setenv("K_SERVICE", "tiles", 1);
    write_file("proc/self/cgroup", "0::/\n");
    write_file("proc/self/mountinfo", v2_mountinfo);
    write_file("sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n");
    write_file("sys/fs/cgroup/memory.max", "2147483648\n");
    write_file("sys/fs/cgroup/cpu.max", "200000 100000\n");
    run(&d);
    assert_string_equal(d.platform, "cloudrun");
    assert_string_equal(d.platform_src, "env K_SERVICE is set");
    assert_int_equal(d.cgroup_version, 2);
    assert_int_equal(d.cg_memory_mb, 2048);
    assert_int_equal(d.memory_mb, 2048);
    assert_non_null(strstr(d.memory_src, "cgroup v2"));
    assert_non_null(strstr(d.memory_src, "/sys/fs/cgroup/memory.max"));
    assert_true(fabs(d.cpus - 2.0) < 1e-9);
    assert_non_null(strstr(d.cpus_src, "cpu.max"));
}

/* Kubernetes on cgroup v1: the pod's limit (a parent) is tighter than the
 * container's own group; quota 150000/100000 is 1.5 CPUs. */
static void test_kubernetes_v1(void **state)
{
    vt_detect d;

    (void)state;
    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    write_file("proc/self/cgroup",
               "12:memory:/kubepods/pod1/c1\n4:cpu,cpuacct:/kubepods/pod1/c1\n"
               "1:name=systemd:/kubepods/pod1/c1\n");
    write_file("proc/self/mountinfo", v1_mountinfo);
    write_file("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    write_file("sys/fs/cgroup/memory/kubepods/memory.limit_in_bytes", "9223372036854771712\n");
    write_file("sys/fs/cgroup/memory/kubepods/pod1/memory.limit_in_bytes", "1073741824\n");
    write_file("sys/fs/cgroup/memory/kubepods/pod1/c1/memory.limit_in_bytes", "4294967296\n");
    write_file("sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/c1/cpu.cfs_quota_us", "150000\n");
    write_file("sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/c1/cpu.cfs_period_us", "100000\n");
    write_file("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
    run(&d);
    assert_string_equal(d.platform, "kubernetes");
    assert_int_equal(d.cgroup_version, 1);
    assert_int_equal(d.cg_memory_mb, 1024);
    assert_non_null(strstr(d.cg_memory_src, "kubepods/pod1/memory.limit_in_bytes"));
    assert_int_equal(d.memory_mb, 1024);
    assert_true(fabs(d.cg_cpus - 1.5) < 1e-9);
    assert_true(fabs(d.cpus - 1.5) < 1e-9); /* tighter than 4 CPUs of affinity */
}

/* cgroup v2 in a cgroup namespace: mountinfo's root is our own group, so
 * /proc/self/cgroup's path is relative to it; "max" means unlimited. */
static void test_v2_namespace_unlimited(void **state)
{
    vt_detect d;

    (void)state;
    write_file("proc/self/cgroup", "0::/kubepods/x\n");
    write_file("proc/self/mountinfo",
               "30 22 0:27 /kubepods/x /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
    write_file("sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
    write_file("sys/fs/cgroup/memory.max", "max\n");
    write_file("sys/fs/cgroup/cpu.max", "max 100000\n");
    run(&d);
    assert_string_equal(d.platform, "host");
    assert_int_equal(d.cgroup_version, 2);
    assert_int_equal(d.cg_memory_mb, -1);
    assert_true(d.cg_cpus < 0);
    assert_int_equal(d.memory_mb, 16000);
    assert_non_null(strstr(d.memory_src, "MemTotal"));
    assert_int_equal(d.cpus, 4);
}

static void test_bare_host(void **state)
{
    vt_detect d;

    (void)state;
    /* no /proc/self/cgroup, no mountinfo */
    write_file("proc/self/status", "Name:\tx\nCpus_allowed_list:\t0-3,6,8-9\n");
    run(&d);
    assert_string_equal(d.platform, "host");
    assert_string_equal(d.platform_src, "no platform variable set");
    assert_int_equal(d.cgroup_version, 0);
    assert_int_equal(d.affinity_cpus, 7);
    assert_non_null(strstr(d.affinity_src, "Cpus_allowed_list"));
    assert_int_equal(d.mem_total_mb, 16000);
    assert_int_equal(d.mem_available_mb, 12000);
    assert_int_equal(d.memory_mb, 16000);
    assert_int_equal(d.cpus, 7);

    /* the printed report names every source */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    vt_detect_print(f, &d);
    fclose(f);
    assert_non_null(strstr(buf, "platform:            host (no platform variable set)"));
    assert_non_null(strstr(buf, "=> memory:           16000 MiB ("));
    assert_non_null(strstr(buf, "/proc/meminfo MemTotal)"));
    assert_non_null(strstr(buf, "=> cpus:             7.00 ("));
    free(buf);
}

/* VSITUNE_SHARED_CACHE_SIZE as the plugin takes it (sizeparse.c, the
 * plugin's parser and range): a value the plugin refuses is its default
 * here too, never a wrapped "-1" or a saturated overflow. */
#define DEF_MB ((long)(VT_DEFAULT_SHARED_CACHE_SIZE >> 20))
static void test_shared_size_as_the_plugin_reads_it(void **state)
{
    static const struct {
        const char *value;
        long mb;
    } rows[] = {
        {"64M", 64}, {"1GB", 1024}, {"268435456", 256}, {"-1", DEF_MB},
        {"99999999999999999999", DEF_MB}, {"nan", DEF_MB}, {"inf", DEF_MB},
        {"1e3M", DEF_MB}, {"16777216G", DEF_MB}, {"64Mx", DEF_MB},
    };
    vt_detect d;

    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
        setenv("VSITUNE_SHARED_CACHE_SIZE", rows[i].value, 1);
        run(&d);
        if (d.shared_asked_mb != rows[i].mb)
            fail_msg("%s: %ld MiB asked", rows[i].value, d.shared_asked_mb);
    }
    unsetenv("VSITUNE_SHARED_CACHE_SIZE");
}

/* The env roots work like the options. */
static void test_env_roots(void **state)
{
    vt_detect d;
    char err[256];
    vt_detect_opts o = { NULL, NULL, profiles };

    (void)state;
    setenv("TUNERD_SYSFS_ROOT", sysdir, 1);
    setenv("TUNERD_PROCFS_ROOT", procdir, 1);
    assert_int_equal(vt_detect_run(&o, &d, err, sizeof err), 0);
    assert_int_equal(d.mem_total_mb, 16000);
    assert_non_null(strstr(d.meminfo_src, root));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lambda, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cloudrun_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kubernetes_v1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_namespace_unlimited, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bare_host, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_roots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_size_as_the_plugin_reads_it, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
