/* vt_creds_probe.c: run the credentials chain (creds.h) and signed S3 GETs
 * (s3.h) from the command line, so tests/integration/test_creds*.py can point
 * them at local STS / container / IMDS / S3 servers and check what those
 * servers received. Options come from the environment (CPLGetConfigOption
 * reads it), exactly as GDAL users set them.
 *
 *   vt_creds_probe creds [--repeat N] [--sleep S] [--keep-going]
 *       calls vt__creds_get N times (S seconds apart) and prints one line
 *       per call: "source=S key=K token=0|1 expires=EPOCH"; with
 *       --keep-going a failed call prints "error=1" and the next one runs.
 *   vt_creds_probe get BUCKET/KEY [OFFSET LENGTH]
 *       vt__s3_get; prints "status=N bytes=N sha256=HEX" and exits 0 on 2xx.
 *   vt_creds_probe hold [--readers N]
 *       the refresh-without-stall check: thread A calls vt__creds_get and
 *       runs a refresh the test server holds; once the server reports that
 *       request arrived (GET $VT_PROBE_CONTROL/arrived answers "yes"), the
 *       main thread calls vt__creds_get N times and prints each key, then
 *       releases the server (GET $VT_PROBE_CONTROL/release) and prints the key
 *       thread A got. If readers stalled on the refresh this would never
 *       finish: an alarm turns that into exit 3.
 *   vt_creds_probe fork
 *       like hold, but while the refresh is held the process forks and the
 *       child (alarm: 10 s) calls vt__creds_get: it must not wait for a
 *       refresh that belongs to a parent thread. Prints "child ..." from the
 *       child and "child-exit=N" from the parent.
 *
 * Exit status: 0 success, 1 failure (message on stderr), 2 bad usage,
 * 3 stalled (hold). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth/creds.h"
#include "http/engine.h"
#include "backends/s3/s3.h"
#include "auth/sigv4.h"
#include "base/sha256.h"

static int usage(void)
{
    fprintf(stderr, "usage: vt_creds_probe creds [--repeat N] [--sleep S] [--keep-going]\n"
                    "       vt_creds_probe get BUCKET/KEY [OFFSET LENGTH]\n"
                    "       vt_creds_probe hold [--readers N]\n"
                    "       vt_creds_probe fork\n");
    return 2;
}

static int parse_int(const char *s, long min, long max, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static void print_creds(const vt_creds *c)
{
    printf("source=%s key=%s token=%d expires=%lld\n", c->source,
           c->access_key ? c->access_key : "-", c->session_token ? 1 : 0,
           (long long)c->expiration);
    fflush(stdout);
}

/* vt__creds_get and print one line, prefixed by who ("" for none). 0 on
 * success, -1 with the error on stderr. */
static int get_and_print(const char *who)
{
    vt_creds c;
    char err[1024];
    if (vt__creds_get(NULL, &c, err, sizeof(err))) {
        fprintf(stderr, "vt_creds_probe: %s%s%s\n", who, *who ? ": " : "", err);
        return -1;
    }
    if (*who)
        printf("%s ", who);
    print_creds(&c);
    vt__creds_clear(&c);
    return 0;
}

static int cmd_creds(int argc, char **argv)
{
    long repeat = 1, sleep_s = 0;
    int keep_going = 0, failed = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
            if (parse_int(argv[++i], 1, 100, &repeat))
                return usage();
        } else if (!strcmp(argv[i], "--sleep") && i + 1 < argc) {
            if (parse_int(argv[++i], 0, 60, &sleep_s))
                return usage();
        } else if (!strcmp(argv[i], "--keep-going")) {
            keep_going = 1;
        } else {
            return usage();
        }
    }
    for (long r = 0; r < repeat; r++) {
        if (r > 0 && sleep_s > 0)
            sleep((unsigned)sleep_s);
        vt_creds c;
        char err[1024];
        vt_err e = vt__creds_get(NULL, &c, err, sizeof(err));
        if (e) {
            fprintf(stderr, "vt_creds_probe: %s: %s\n", vt_strerror(e), err);
            if (!keep_going)
                return 1;
            printf("error=1\n");
            fflush(stdout);
            failed = 1;
            continue;
        }
        print_creds(&c);
        vt__creds_clear(&c);
    }
    return failed;
}

static int cmd_get(int argc, char **argv)
{
    long long off = 0, len = 0;
    char *bucket = NULL, *key = NULL, err[1024];
    vt_http_resp resp;
    int rc = 1;
    if (argc != 1 && argc != 3)
        return usage();
    if (argc == 3) {
        char *e1, *e2;
        off = strtoll(argv[1], &e1, 10);
        len = strtoll(argv[2], &e2, 10);
        if (*e1 || *e2 || off < 0 || len < 0)
            return usage();
    }
    if (vt__s3_split(argv[0], &bucket, &key))
        return usage();
    vt_err e = vt__s3_get(bucket, key, (uint64_t)off, (uint64_t)len, NULL, &resp,
                          err, sizeof(err));
    char hash[65];
    vt__sha256_hex(resp.body ? (const void *)resp.body : "", resp.body_len, hash);
    printf("status=%ld bytes=%zu sha256=%s\n", resp.status, resp.body_len, hash);
    if (e)
        fprintf(stderr, "vt_creds_probe: %s: %s\n", vt_strerror(e), err);
    else
        rc = 0;
    vt__http_resp_clear(&resp);
    free(bucket);
    free(key);
    return rc;
}

/* ---- hold ------------------------------------------------------------- */

static void *refresher(void *arg)
{
    vt_creds *c = arg;
    char err[1024];
    if (vt__creds_get(NULL, c, err, sizeof(err)))
        fprintf(stderr, "vt_creds_probe: refresher: %s\n", err);
    return NULL;
}

/* GET control/what through the engine; 1 when the body starts with "yes". */
static int control(const char *what)
{
    const char *base = getenv("VT_PROBE_CONTROL");
    char url[512];
    vt_http_resp r;
    snprintf(url, sizeof(url), "%s/%s", base, what);
    vt_http_req q = {.method = "GET", .url = url, .max_retries = 0,
                     .retry_delay = -1, .timeout_ms = 5000};
    int yes = vt__engine_perform(&q, &r) == VT_OK && r.status == 200 &&
              r.body_len >= 3 && !memcmp(r.body, "yes", 3);
    vt__http_resp_clear(&r);
    return yes;
}

/* Start thread *t refreshing into *later and wait until the server holds
 * that request. 0 on success. */
static int start_held_refresh(pthread_t *t, vt_creds *later)
{
    sleep(6); /* past the minimum refresh interval */
    if (pthread_create(t, NULL, refresher, later))
        return -1;
    for (int i = 0; i < 200; i++) {
        if (control("arrived"))
            return 0;
        usleep(50000);
    }
    fprintf(stderr, "vt_creds_probe: the refresh never reached the server\n");
    return -1;
}

static int cmd_hold(int argc, char **argv)
{
    long readers = 3;
    vt_creds later = {0};
    pthread_t t;
    if (argc == 2 && !strcmp(argv[0], "--readers")) {
        if (parse_int(argv[1], 1, 100, &readers))
            return usage();
    } else if (argc != 0) {
        return usage();
    }
    if (!getenv("VT_PROBE_CONTROL"))
        return usage();
    alarm(20); /* a stalled reader never returns: fail, don't hang */
    /* 1. Initial credentials (the server answers at once). */
    if (get_and_print(""))
        return 1;
    /* 2. After the refresh interval, a refresh the server holds. */
    if (start_held_refresh(&t, &later))
        return 1;
    /* 3. Readers while the refresh is held: they must not wait for it. */
    for (long i = 0; i < readers; i++)
        if (get_and_print("reader"))
            return 1;
    control("release");
    pthread_join(t, NULL);
    printf("refresher ");
    print_creds(&later);
    vt__creds_clear(&later);
    return 0;
}

static int cmd_fork(void)
{
    vt_creds later = {0};
    pthread_t t;
    int status = 0;
    if (!getenv("VT_PROBE_CONTROL"))
        return usage();
    alarm(40);
    if (get_and_print(""))
        return 1;
    if (start_held_refresh(&t, &later))
        return 1;
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        alarm(10);
        int rc = get_and_print("child") ? 1 : 0;
        vt__engine_shutdown();
        _exit(rc);
    }
    waitpid(pid, &status, 0);
    printf("child-exit=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128);
    fflush(stdout);
    control("release");
    pthread_join(t, NULL);
    vt__creds_clear(&later);
    return 0;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char m[] = "vt_creds_probe: stalled (alarm)\n";
    if (write(2, m, sizeof(m) - 1) < 0) {
        /* nothing more to do */
    }
    _exit(3);
}

int main(int argc, char **argv)
{
    int rc;
    signal(SIGALRM, on_alarm);
    if (argc < 2)
        return usage();
    if (!strcmp(argv[1], "creds"))
        rc = cmd_creds(argc - 2, argv + 2);
    else if (!strcmp(argv[1], "get"))
        rc = cmd_get(argc - 2, argv + 2);
    else if (!strcmp(argv[1], "hold"))
        rc = cmd_hold(argc - 2, argv + 2);
    else if (!strcmp(argv[1], "fork") && argc == 2)
        rc = cmd_fork();
    else
        rc = usage();
    vt__engine_shutdown();
    return rc;
}
