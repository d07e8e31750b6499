/* vt_fetch.c: drive the engine (engine.h) from the command line, so the
 * integration tests can exercise it against the lab's real servers before
 * (and independently of) the GDAL plugin.
 *
 * Runs T threads, each issuing N range GETs of random (seeded) or given
 * ranges of one URL, optionally K ranges per vt__engine_perform_many call,
 * compares every body with a local copy of the object, and prints one JSON
 * line of results and engine stats. --fork repeats the run in a fork()ed
 * child after the parent has used the engine; --shutdown-after stops the
 * engine while requests are in flight. Exit status: 0 all requests OK and
 * byte-exact, 1 some failed or differed, 2 bad usage. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http/engine.h"

#define MAX_HEADERS 16

static struct {
    const char *url;
    int threads, per_thread, per_call;
    uint64_t range_len, size;
    uint64_t fixed_first, fixed_last;
    int fixed;
    int whole;
    unsigned seed;
    const char *verify_path, *out_path;
    unsigned char *local;
    size_t local_len;
    int do_fork;
    long shutdown_after_ms;
    int max_retries;
    const char *headers[MAX_HEADERS + 2];
    int n_headers;
} cfg = {.threads = 1, .per_thread = 1, .per_call = 1, .range_len = 65536,
         .max_retries = -1};

struct result {
    pthread_mutex_t lock;
    long ok, errors, mismatches, shutdowns;
    long last_status;
    vt_err first_err;
    long first_status;
    char first_error[300];
};

static struct result res = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void usage(void)
{
    fprintf(stderr,
            "usage: vt_fetch [options] URL\n"
            "  -t N        threads (1)\n"
            "  -n N        requests per thread (1)\n"
            "  -k K        ranges per perform_many call (1)\n"
            "  -l LEN      range length (65536)\n"
            "  -s SIZE     object size (default: from -f, else asked)\n"
            "  -r A-B      fetch this one range (inclusive) every time\n"
            "  -w          whole-object GET without a Range header\n"
            "  -f FILE     local copy to compare bytes with\n"
            "  -o FILE     write the last body to FILE\n"
            "  -H LINE     extra request header (repeatable)\n"
            "  -R N        max retries for these requests\n"
            "  --seed N    random seed (1)\n"
            "  --fork      run again in a fork()ed child\n"
            "  --shutdown-after MS  shut the engine down MS ms into the run\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    uint64_t v;

    if (parse_u64(s, &v) || v < (uint64_t)lo || v > (uint64_t)hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int load_local(const char *path)
{
    FILE *f = fopen(path, "rb");
    long len;
    int rc = -1;

    if (!f) {
        fprintf(stderr, "vt_fetch: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
        goto out;
    cfg.local = malloc(len ? (size_t)len : 1);
    if (!cfg.local || fread(cfg.local, 1, (size_t)len, f) != (size_t)len)
        goto out;
    cfg.local_len = (size_t)len;
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "vt_fetch: cannot read %s\n", path);
    fclose(f);
    return rc;
}

static void record(const vt_http_resp *r, vt_err err, uint64_t first,
                   uint64_t len)
{
    int bad = 0;

    if (err == VT_OK && r->status != 200 && r->status != 206)
        bad = 1;
    if (err == VT_OK && !bad && cfg.local) {
        /* a range past the end comes back clipped at the end */
        if (first + len > cfg.local_len)
            len = first < cfg.local_len ? cfg.local_len - first : 0;
        if (r->body_len != len ||
            memcmp(r->body, cfg.local + first, len) != 0)
            bad = 2;
    }
    pthread_mutex_lock(&res.lock);
    res.last_status = r->status;
    if (err == VT_ESHUTDOWN) {
        res.shutdowns++;
    } else if (err != VT_OK || bad == 1) {
        if (res.errors++ == 0) {
            res.first_err = err;
            res.first_status = r->status;
            snprintf(res.first_error, sizeof(res.first_error), "%s",
                     err != VT_OK ? r->error : "unexpected HTTP status");
        }
    } else if (bad == 2) {
        if (res.mismatches++ == 0)
            snprintf(res.first_error, sizeof(res.first_error),
                     "bytes differ at range %" PRIu64 "+%" PRIu64
                     " (got %zu bytes)", first, len, r->body_len);
    } else {
        res.ok++;
    }
    pthread_mutex_unlock(&res.lock);
}

static void write_out(const vt_http_resp *r)
{
    FILE *f = fopen(cfg.out_path, "wb");

    if (!f || fwrite(r->body, 1, r->body_len, f) != r->body_len)
        fprintf(stderr, "vt_fetch: cannot write %s\n", cfg.out_path);
    if (f)
        fclose(f);
}

static void *worker(void *arg)
{
    unsigned seed = cfg.seed * 7919u + (unsigned)(uintptr_t)arg;
    int k = cfg.per_call;
    vt_http_req *reqs = calloc((size_t)k, sizeof(*reqs));
    vt_http_resp *resps = calloc((size_t)k, sizeof(*resps));
    vt_err *errs = calloc((size_t)k, sizeof(*errs));
    char (*range)[64] = calloc((size_t)k, sizeof(*range));
    const char *(*hdrs)[MAX_HEADERS + 2] = calloc((size_t)k, sizeof(*hdrs));
    uint64_t *firsts = calloc((size_t)k, sizeof(*firsts));
    uint64_t *lens = calloc((size_t)k, sizeof(*lens));

    if (!reqs || !resps || !errs || !range || !hdrs || !firsts || !lens) {
        fprintf(stderr, "vt_fetch: out of memory\n");
        goto out;
    }
    for (int done = 0; done < cfg.per_thread; done += k) {
        int m = cfg.per_thread - done < k ? cfg.per_thread - done : k;
        for (int i = 0; i < m; i++) {
            uint64_t len = cfg.range_len, first = 0;
            int h = 0;
            if (cfg.fixed) {
                first = cfg.fixed_first;
                len = cfg.fixed_last - cfg.fixed_first + 1;
            } else if (!cfg.whole) {
                if (len > cfg.size)
                    len = cfg.size;
                if (cfg.size > len)
                    first = ((uint64_t)rand_r(&seed) << 31 ^
                             (uint64_t)rand_r(&seed)) % (cfg.size - len + 1);
            } else {
                len = cfg.size;
            }
            for (int j = 0; j < cfg.n_headers; j++)
                hdrs[i][h++] = cfg.headers[j];
            if (!cfg.whole) {
                snprintf(range[i], sizeof(range[i]),
                         "Range: bytes=%" PRIu64 "-%" PRIu64, first,
                         first + len - 1);
                hdrs[i][h++] = range[i];
            }
            hdrs[i][h] = NULL;
            memset(&reqs[i], 0, sizeof(reqs[i]));
            reqs[i].method = "GET";
            reqs[i].url = cfg.url;
            reqs[i].headers = hdrs[i];
            reqs[i].expect_len = cfg.whole ? 0 : len;
            reqs[i].max_body = (size_t)(len > (4u << 20) ? len : (4u << 20));
            reqs[i].max_retries = cfg.max_retries;
            reqs[i].retry_delay = -1;
            firsts[i] = first;
            lens[i] = len;
        }
        int stopped = 0;
        vt__engine_perform_many((size_t)m, reqs, resps, errs);
        for (int i = 0; i < m; i++) {
            stopped |= errs[i] == VT_ESHUTDOWN;
            record(&resps[i], errs[i], firsts[i],
                   cfg.whole && cfg.size == 0 ? resps[i].body_len : lens[i]);
            if (cfg.out_path && errs[i] == VT_OK)
                write_out(&resps[i]);
            vt__http_resp_clear(&resps[i]);
        }
        if (stopped) /* the engine was shut down under us: we are done */
            break;
    }
out:
    free(reqs);
    free(resps);
    free(errs);
    free(range);
    free(hdrs);
    free(firsts);
    free(lens);
    return NULL;
}

/* Wait until every thread's transfers are in flight (at most 10 s), then MS
 * more, then shut down. */
static void *shutdown_timer(void *arg)
{
    struct timespec ts = {cfg.shutdown_after_ms / 1000,
                          (cfg.shutdown_after_ms % 1000) * 1000000L};
    struct timespec tick = {0, 10000000L};
    uint64_t want = (uint64_t)cfg.threads * (uint64_t)cfg.per_call;
    vt_engine_stats st;

    for (int i = 0; i < 1000; i++) {
        nanosleep(&tick, NULL);
        vt__engine_get_stats(&st);
        if (st.in_flight >= want)
            break;
    }
    nanosleep(&ts, NULL);
    vt__engine_shutdown();
    return arg;
}

/* Ask for the size with a one-byte range GET (no -s, no -f). */
static int discover_size(void)
{
    const char *h[MAX_HEADERS + 2];
    vt_http_req req = {0};
    vt_http_resp resp;
    vt_err err;
    int n = 0;

    for (int j = 0; j < cfg.n_headers; j++)
        h[n++] = cfg.headers[j];
    h[n++] = "Range: bytes=0-0";
    h[n] = NULL;
    req.url = cfg.url;
    req.headers = h;
    req.max_retries = cfg.max_retries;
    req.retry_delay = -1;
    err = vt__engine_perform(&req, &resp);
    if (err == VT_OK && resp.status == 206 && resp.has_content_range)
        cfg.size = resp.total_size;
    else if (err == VT_OK && resp.status == 200)
        cfg.size = resp.body_len;
    else {
        fprintf(stderr, "vt_fetch: cannot learn the size: %s (HTTP %ld)\n",
                err ? resp.error : "no Content-Range", resp.status);
        record(&resp, err != VT_OK ? err : VT_EHTTP, 0, 0);
        vt__http_resp_clear(&resp);
        return -1;
    }
    vt__http_resp_clear(&resp);
    return 0;
}

static void run(void)
{
    pthread_t *tids = calloc((size_t)cfg.threads, sizeof(*tids));
    pthread_t stopper;
    int have_stopper = 0;

    if (!tids) {
        fprintf(stderr, "vt_fetch: out of memory\n");
        exit(1);
    }
    if (cfg.shutdown_after_ms > 0 &&
        pthread_create(&stopper, NULL, shutdown_timer, NULL) == 0)
        have_stopper = 1;
    for (int i = 0; i < cfg.threads; i++) {
        if (pthread_create(&tids[i], NULL, worker, (void *)(uintptr_t)i)) {
            fprintf(stderr, "vt_fetch: cannot start thread %d\n", i);
            exit(1);
        }
    }
    for (int i = 0; i < cfg.threads; i++)
        pthread_join(tids[i], NULL);
    if (have_stopper)
        pthread_join(stopper, NULL);
    free(tids);
}

static void report(const char *who)
{
    vt_engine_stats st;

    vt__engine_get_stats(&st);
    printf("{\"who\": \"%s\", \"ok\": %ld, \"errors\": %ld, \"mismatches\": %ld, "
           "\"shutdowns\": %ld, \"last_status\": %ld, \"first_err\": \"%s\", "
           "\"first_status\": %ld, \"requests\": %" PRIu64
           ", \"retries\": %" PRIu64 ", \"bytes\": %" PRIu64
           ", \"connections\": %" PRIu64 ", \"in_flight\": %" PRIu64
           ", \"h2\": %" PRIu64 ", \"size\": %" PRIu64 ", \"message\": \"",
           who, res.ok, res.errors, res.mismatches, res.shutdowns,
           res.last_status, res.errors ? vt_strerror(res.first_err) : "",
           res.first_status, st.requests, st.retries, st.bytes_received,
           st.connections, st.in_flight, st.h2_responses, cfg.size);
    for (const char *p = res.first_error; *p; p++) {
        if (*p == '"' || *p == '\\')
            putchar('\\');
        putchar((unsigned char)*p < 0x20 ? ' ' : *p);
    }
    printf("\"}\n");
    fflush(stdout);
}

static int outcome(void)
{
    return res.errors == 0 && res.mismatches == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        {"seed", required_argument, NULL, 1},
        {"fork", no_argument, NULL, 2},
        {"shutdown-after", required_argument, NULL, 3},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int c, rc;

    while ((c = getopt_long(argc, argv, "t:n:k:l:s:r:wf:o:H:R:h", longs,
                            NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 't': bad = parse_int(optarg, 1, 1024, &cfg.threads); break;
        case 'n': bad = parse_int(optarg, 1, 10000000, &cfg.per_thread); break;
        case 'k': bad = parse_int(optarg, 1, 10000, &cfg.per_call); break;
        case 'l':
            bad = parse_u64(optarg, &cfg.range_len) || cfg.range_len == 0;
            break;
        case 's': bad = parse_u64(optarg, &cfg.size); break;
        case 'r': {
            char *dash = strchr(optarg, '-');
            bad = !dash;
            if (!bad) {
                *dash = '\0';
                bad = parse_u64(optarg, &cfg.fixed_first) ||
                      parse_u64(dash + 1, &cfg.fixed_last) ||
                      cfg.fixed_first > cfg.fixed_last;
            }
            cfg.fixed = 1;
            break;
        }
        case 'w': cfg.whole = 1; break;
        case 'f': cfg.verify_path = optarg; break;
        case 'o': cfg.out_path = optarg; break;
        case 'H':
            bad = cfg.n_headers >= MAX_HEADERS;
            if (!bad)
                cfg.headers[cfg.n_headers++] = optarg;
            break;
        case 'R': bad = parse_int(optarg, 0, 100, &cfg.max_retries); break;
        case 1: {
            int s = 0;
            bad = parse_int(optarg, 0, 1 << 30, &s);
            cfg.seed = (unsigned)s;
            break;
        }
        case 2: cfg.do_fork = 1; break;
        case 3: {
            int ms = 0;
            bad = parse_int(optarg, 1, 3600000, &ms);
            cfg.shutdown_after_ms = ms;
            break;
        }
        case 'h': usage(); return 0;
        default: usage(); return 2;
        }
        if (bad) {
            fprintf(stderr, "vt_fetch: bad value for -%c: %s\n",
                    c > 32 ? c : '-', optarg ? optarg : "");
            return 2;
        }
    }
    if (optind != argc - 1) {
        usage();
        return 2;
    }
    cfg.url = argv[optind];
    if (cfg.verify_path) {
        if (load_local(cfg.verify_path))
            return 2;
        if (!cfg.size)
            cfg.size = cfg.local_len;
    }
    if (!cfg.size && !cfg.fixed && discover_size()) {
        report("main");
        return 1;
    }
    run();
    report("main");
    rc = outcome();
    if (cfg.do_fork) {
        pid_t pid;
        int status = 0;
        fflush(stdout);
        pid = fork();
        if (pid < 0) {
            perror("vt_fetch: fork");
            return 1;
        }
        if (pid == 0) {
            memset(&res, 0, sizeof(res));
            pthread_mutex_init(&res.lock, NULL);
            cfg.seed += 1000;
            run();
            report("child");
            vt__engine_shutdown();
            _exit(outcome());
        }
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            rc = 1;
        /* the parent's engine still works after the fork */
        memset(&res, 0, sizeof(res));
        pthread_mutex_init(&res.lock, NULL);
        cfg.seed += 2000;
        run();
        report("parent-after-fork");
        if (outcome())
            rc = 1;
    }
    vt__engine_shutdown();
    free(cfg.local);
    return rc;
}
