/* test_stats_oom.c: which cgroup file holds this process's oom_kill count
 * (vsiplugin/stats/stats_oom.c), on fake /sys trees: cgroup v1 (the memory line
 * wins on a hybrid host), v2, a container's namespaced mount that shows only
 * its own group, no memory cgroup at all; and the oom_kill line parser. */
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

#include "stats/stats_oom.h"

static char root[64];

static void put(const char *rel, const char *text)
{
    char path[512], dir[512];

    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = strchr(path + strlen(root) + 1, '/'); p; p = strchr(p + 1, '/')) {
        snprintf(dir, sizeof dir, "%.*s", (int)(p - path), path);
        if (mkdir(dir, 0755) && errno != EEXIST)
            fail_msg("mkdir %s", dir);
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/vt-oom-XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[128];

    (void)state;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static void expect_file(const char *cgroup, const char *rel)
{
    char file[512], want[512];

    assert_int_equal(vt__stats_oom_find(root, cgroup, file, sizeof file), 0);
    snprintf(want, sizeof want, "%s/%s", root, rel);
    assert_string_equal(file, want);
}

static void test_find(void **state)
{
    char file[512];

    (void)state;
    /* hybrid host: v1 controllers and an empty v2 tree: the v1 memory group */
    put("fs/cgroup/memory/jobs/a/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n"
        "oom_kill 2\n");
    put("fs/cgroup/memory/memory.oom_control", "oom_kill_disable 0\noom_kill 9\n");
    put("fs/cgroup/memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 5\n");
    const char *hybrid = "12:cpu,cpuacct:/jobs/a\n4:memory:/jobs/a\n0::/\n";
    expect_file(hybrid, "fs/cgroup/memory/jobs/a/memory.oom_control");
    /* a container's mount shows only its own group: the mount's top file */
    expect_file("4:memory:/docker/0123abcd\n0::/\n", "fs/cgroup/memory/memory.oom_control");
    /* pure v2 */
    put("fs/cgroup/system.slice/job.service/memory.events", "oom 1\noom_kill 1\n");
    expect_file("0::/system.slice/job.service\n", "fs/cgroup/system.slice/job.service/memory.events");
    expect_file("0::/\n", "fs/cgroup/memory.events");
    /* a group whose file has no oom_kill line (an old kernel): none */
    put("fs/cgroup/old/memory.events", "oom 1\n");
    expect_file("0::/old\n", "fs/cgroup/memory.events"); /* falls back to the top */
    /* nothing usable */
    assert_int_equal(vt__stats_oom_find(root, "", file, sizeof file), -1);
    assert_int_equal(vt__stats_oom_find(root, "garbage without colons\n", file, sizeof file), -1);
    assert_int_equal(vt__stats_oom_find("/nonexistent", hybrid, file, sizeof file), -1);
    /* a path with a quote is never written into the JSON document */
    put("fs/cgroup/we\"ird/memory.events", "oom_kill 1\n");
    char q[512];
    assert_int_equal(vt__stats_oom_find(root, "0::/we\"ird\n", q, sizeof q), 0);
    assert_null(strchr(q, '"'));
    /* too small an output buffer: refused, not truncated */
    assert_int_equal(vt__stats_oom_find(root, hybrid, file, 8), -1);
}

static void test_parse(void **state)
{
    uint64_t k = 77;

    (void)state;
    assert_int_equal(vt__stats_oom_parse("oom_kill_disable 0\nunder_oom 0\noom_kill 12\n", &k), 0);
    assert_int_equal(k, 12);
    assert_int_equal(vt__stats_oom_parse("low 0\noom_kill 3", &k), 0); /* no final newline */
    assert_int_equal(k, 3);
    assert_int_equal(vt__stats_oom_parse("oom_kill_disable 0\n", &k), -1);
    assert_int_equal(vt__stats_oom_parse("oom_kill x\n", &k), -1);
    assert_int_equal(vt__stats_oom_parse("oom_kill 4x\n", &k), -1);
    assert_int_equal(vt__stats_oom_parse("", &k), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_find, setup, teardown),
        cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
