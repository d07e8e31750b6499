/* tunerd_bench.c: the cost of one `tunerd profile`, without process start.
 *
 * On this project's CI VM a fork+exec of /bin/true alone costs tens of ms,
 * which would drown tunerd's own work; this harness calls vt_cli_main (the
 * whole command: find the profiles, detect, load, size, render) N times in
 * one process with stdout sent to /dev/null, and prints the mean per run.
 * Built and run by bench/tunerd_bench.sh. Single-threaded; allocates nothing
 * that outlives a run. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli.h"

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int bench(const char *label, int n, int argc, char **argv)
{
    double t0, t1;

    if (vt_cli_main(argc, argv) != 0) {
        fprintf(stderr, "tunerd_bench: %s failed\n", label);
        return 1;
    }
    t0 = now_ms();
    for (int i = 0; i < n; i++)
        if (vt_cli_main(argc, argv) != 0)
            return 1;
    t1 = now_ms();
    fprintf(stderr, "%-44s %5d runs  %7.3f ms/run (in process)\n", label, n, (t1 - t0) / n);
    return 0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    char *json[] = { "tunerd", "profile", "--memory", "10240", "--format", "json", NULL };
    char *host[] = { "tunerd", "profile", NULL };
    char *detect[] = { "tunerd", "detect", NULL };

    if (n < 1) {
        fprintf(stderr, "tunerd_bench: N must be a positive whole number\n");
        return 2;
    }
    if (!freopen("/dev/null", "w", stdout))
        return 1;
    if (bench("tunerd profile --memory 10240 --format json", n, 6, json) ||
        bench("tunerd profile (detect, host, env)", n, 2, host) ||
        bench("tunerd detect", n, 2, detect))
        return 1;
    return 0;
}
