/* test_tunerd_watch.c: `tunerd watch`'s scanner on a fake /proc: only
 * processes mapping libgdal are listed, memory comes from smaps_rollup (or
 * status when that is absent, PSS then unknown), the cap bounds the output
 * and the total row adds up. */
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

#include "watch.h"

static char root[64];

static void put(const char *rel, const char *text)
{
    char path[512], dir[512];

    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    if (mkdir(dir, 0755) && errno != EEXIST)
        fail_msg("mkdir %s", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const char gdal_maps[] =
    "55d0c0000000-55d0c0001000 r--p 00000000 08:01 1 /usr/bin/python3.11\n"
    "7f0000000000-7f0000100000 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libgdal.so.32.3.6.2\n"
    "7fff00000000-7fff00021000 rw-p 00000000 00:00 0 [stack]\n";
static const char plain_maps[] =
    "55d0c0000000-55d0c0001000 r--p 00000000 08:01 1 /usr/bin/sleep\n"
    "7f0000000000-7f0000100000 r-xp 00000000 08:01 3 /usr/lib/x86_64-linux-gnu/libc.so.6\n";

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/tunerd-watch-XXXXXX");
    if (!mkdtemp(root))
        return -1;
    put("200/maps", gdal_maps);
    put("200/comm", "python3\n");
    put("200/smaps_rollup", "00400000-7fff ---p 00000000 00:00 0 [rollup]\n"
        "Rss:              204800 kB\nPss:              102400 kB\n"
        "Pss_Anon:          51200 kB\nAnonymous:         51200 kB\n");
    put("31/maps", gdal_maps);
    put("31/comm", "worker\n");
    put("31/status", "Name:\tworker\nVmRSS:\t   10240 kB\nRssAnon:\t    2048 kB\n");
    put("77/maps", plain_maps);
    put("77/comm", "sleep\n");
    put("77/smaps_rollup", "Rss: 999 kB\n");
    put("self/maps", gdal_maps); /* not a pid directory: ignored */
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];

    (void)state;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_scan(void **state)
{
    vt_watch_proc p[8];
    char err[256];
    int found;

    (void)state;
    int n = vt_watch_scan(root, "libgdal", p, 8, &found, err, sizeof err);
    assert_int_equal(n, 2);
    assert_int_equal(found, 2);
    assert_int_equal(p[0].pid, 31); /* sorted by pid */
    assert_string_equal(p[0].comm, "worker");
    assert_int_equal(p[0].rss_kb, 10240);
    assert_int_equal(p[0].pss_kb, -1);
    assert_int_equal(p[0].anon_kb, 2048);
    assert_int_equal(p[1].pid, 200);
    assert_int_equal(p[1].rss_kb, 204800);
    assert_int_equal(p[1].pss_kb, 102400);
    assert_int_equal(p[1].anon_kb, 51200);

    /* another library name finds the other process only */
    n = vt_watch_scan(root, "libc.so", p, 8, &found, err, sizeof err);
    assert_int_equal(n, 1);
    assert_int_equal(p[0].pid, 77);

    /* bounded */
    n = vt_watch_scan(root, "libgdal", p, 1, &found, err, sizeof err);
    assert_int_equal(n, 1);
    assert_int_equal(found, 2);

    /* a root that does not exist is an error, not an empty answer */
    n = vt_watch_scan("/nonexistent/proc", "libgdal", p, 8, &found, err, sizeof err);
    assert_int_equal(n, -1);
    assert_non_null(strstr(err, "/nonexistent/proc"));
}

static void test_print(void **state)
{
    vt_watch_proc p[8];
    char err[256], *buf = NULL;
    size_t len = 0;
    int found;

    (void)state;
    int n = vt_watch_scan(root, "libgdal", p, 8, &found, err, sizeof err);
    FILE *f = open_memstream(&buf, &len);
    vt_watch_print(f, "12:00:00", p, n, found, 0);
    fclose(f);
    assert_non_null(strstr(buf, "12:00:00       200     200.0     100.0      50.0  python3\n"));
    assert_non_null(strstr(buf, "12:00:00        31      10.0         -       2.0  worker\n"));
    /* one PSS unknown: the PSS total is unknown too, not an undercount */
    assert_non_null(strstr(buf, "12:00:00     total     210.0         -      52.0  2 process(es)\n"));
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_scan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_print, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
