/* test_stats_fork.c: telling a fork() child that did not exec from any other
 * process (vsiplugin/stats/stats_fork.c), with real processes: this test (exec'd by
 * ctest) is not one; its fork() child is; the same program exec'd again by
 * that child is not (same binary, same parent); a child with address
 * randomisation turned off says no. And the comparison itself on files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stats/stats_fork.h"

static char root[64];

static int randomised(void)
{
    FILE *f = fopen("/proc/sys/kernel/randomize_va_space", "r");
    int c = f ? fgetc(f) : EOF;

    if (f)
        fclose(f);
    return c != EOF && c != '0';
}

/* The exit status of a child that runs fn: 0 or 1 (its answer), else 99. */
static int in_child(int (*fn)(void))
{
    int status = 0;
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0)
        _exit(fn());
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

static int plain_child(void)
{
    return vt__stats_fork_child();
}

/* This program again, through execve: it prints nothing and exits with the
 * answer (main's --check). */
static int exec_again(void)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

    if (n <= 0)
        return 98;
    self[n] = '\0';
    execl(self, self, "--check", (char *)NULL);
    return 97;
}

static int unrandomised_child(void)
{
    if (personality(ADDR_NO_RANDOMIZE) == -1)
        return 96;
    return vt__stats_fork_child();
}

static void test_processes(void **state)
{
    (void)state;
    if (!randomised())
        skip(); /* the answer is always no there: nothing to tell apart */
    assert_int_equal(vt__stats_fork_child(), 0); /* ctest exec'd this test */
    assert_int_equal(in_child(plain_child), 1);
    assert_int_equal(in_child(exec_again), 0);
    assert_int_equal(in_child(unrandomised_child), 0);
}

static void put(const char *name, const char *bytes, size_t n)
{
    char path[128];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", root, name);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

static int same(const char *a, const char *b, const char *r)
{
    char pa[128], pb[128], pr[128];

    snprintf(pa, sizeof pa, "%s/%s", root, a);
    snprintf(pb, sizeof pb, "%s/%s", root, b);
    snprintf(pr, sizeof pr, "%s/%s", root, r ? r : "");
    return vt__stats_fork_same_image(pa, pb, r ? pr : NULL);
}

static void test_files(void **state)
{
    char big[5000];

    (void)state;
    snprintf(root, sizeof root, "/tmp/vt-forkc-XXXXXX");
    assert_non_null(mkdtemp(root));
    put("a", "\x21\0\0\0\0\0\0\0\x01\x02", 10);
    put("a2", "\x21\0\0\0\0\0\0\0\x01\x02", 10);
    put("b", "\x21\0\0\0\0\0\0\0\x01\x03", 10);
    put("short", "\x21\0\0\0\0\0\0\0\x01", 9);
    put("empty", "", 0);
    put("on", "2\n", 2);
    put("off", "0\n", 2);
    memset(big, 7, sizeof big);
    put("big", big, sizeof big);
    put("big2", big, sizeof big);
    assert_int_equal(same("a", "a2", "on"), 1);
    assert_int_equal(same("a", "a2", NULL), 1);
    assert_int_equal(same("a", "a2", "off"), 0);
    assert_int_equal(same("a", "a2", "empty"), 0);
    assert_int_equal(same("a", "a2", "missing"), 0);
    assert_int_equal(same("a", "b", "on"), 0);
    assert_int_equal(same("a", "short", "on"), 0);
    assert_int_equal(same("empty", "empty", "on"), 0);
    assert_int_equal(same("a", "missing", "on"), 0);
    assert_int_equal(same("big", "big2", "on"), 0); /* not an auxiliary vector */
    {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_processes),
        cmocka_unit_test(test_files),
    };
    if (argc > 1 && strcmp(argv[1], "--check") == 0)
        return vt__stats_fork_child();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
