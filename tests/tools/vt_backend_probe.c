/* vt_backend_probe.c: drive a backend's table (backends/backend.h) from the
 * command line, with no GDAL VSI layer in between, so the integration tests
 * can point it at the lab and read what the server saw. Options come from
 * the environment (CPLGetConfigOption reads it), as GDAL users set them.
 * Shared by the backends: one row each in `backends` below.
 *
 *   vt_backend_probe --backend NAME CMD ARGS [CMD ARGS ...]
 *
 * Commands run in order in one process (so kept tokens, remembered
 * failures and forget are seen across them), one output line each:
 *   get PATH OFF LEN   "get status=N bytes=N sha256=HEX http=V"
 *   head PATH          "head status=N size=N etag=E"
 *   list BUCKET PREFIX DIR MAX
 *                      "list n=N truncated=T" then "entry NAME SIZE DIR"
 *   ident PATH         "ident <identity with '\n' as '|'>"
 *   endpoint PATH      "endpoint URL"
 *   build PATH OFF LEN "build URL" then "header LINE" each
 *   fail PATH          "fail err=E status=N where=W message=M" and
 *                      "report vsie=N GDAL's words" (vt__gdal_error_for_open)
 *   forget PREFIX      "forget" ("-": everything)
 *   sleep SECONDS      "sleep" (to outlive a short-lived token)
 * A failed get/head/list prints "error err=E: <errbuf>" and the next
 * command runs; the exit status is 1 when any failed, 2 on bad usage. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth/sigv4.h"
#include "backends/backend.h"
#include "compat/gdal_error.h"
#include "http/engine.h"

static const struct {
    const char *name;
    const vt_backend *be;
} backends[] = {
    {"s3", &vt__backend_s3},
    {"gs", &vt__backend_gs},
    {"curl", &vt__backend_curl},
};

static int usage(void)
{
    fprintf(stderr, "usage: vt_backend_probe --backend NAME CMD ARGS...\n");
    return 2;
}

/* How many arguments each command takes. */
static int nargs(const char *cmd)
{
    static const struct {
        const char *cmd;
        int n;
    } t[] = {{"get", 3},   {"head", 1},     {"list", 4},  {"ident", 1},
             {"endpoint", 1}, {"build", 3}, {"fail", 1}, {"forget", 1},
             {"sleep", 1}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (!strcmp(cmd, t[i].cmd))
            return t[i].n;
    return -1;
}

static int split(const vt_backend *be, const char *path, char **c, char **k)
{
    if (be->split(path, c, k) != VT_OK) {
        printf("error err=%s: cannot split %s\n", vt_strerror(VT_EINVAL), path);
        return -1;
    }
    return 0;
}

static int run(const vt_backend *be, char **a)
{
    char err[2048] = "", *c = NULL, *k = NULL;
    vt_http_resp r;
    vt_err e = VT_OK;
    int rc = 0;

    memset(&r, 0, sizeof(r));
    if (!strcmp(a[0], "get") || !strcmp(a[0], "build")) {
        uint64_t off = strtoull(a[2], NULL, 10), len = strtoull(a[3], NULL, 10);
        if (split(be, a[1], &c, &k))
            return 1;
        if (!strcmp(a[0], "build")) {
            vt_backend_req q;
            e = be->build_get(c, k, off, len, NULL, &q, err, sizeof err);
            if (e == VT_OK) {
                printf("build %s\n", q.url);
                for (char **h = q.headers; h && *h; h++)
                    printf("header %s\n", *h);
                be->req_clear(&q);
            }
        } else {
            e = be->get(c, k, off, len, NULL, &r, err, sizeof err);
            if (e == VT_OK) {
                char h[65];
                vt__sha256_hex(r.body, r.body_len, h);
                printf("get status=%ld bytes=%zu sha256=%s http=%d\n",
                       r.status, r.body_len, h, r.http_version);
            }
        }
    } else if (!strcmp(a[0], "head")) {
        if (split(be, a[1], &c, &k))
            return 1;
        e = be->head(c, k, &r, err, sizeof err);
        if (e == VT_OK)
            printf("head status=%ld size=%" PRIu64 " etag=%s\n", r.status,
                   r.total_size, r.etag ? r.etag : "-");
    } else if (!strcmp(a[0], "list")) {
        vt_list_page p;
        e = be->list(a[1], a[2], a[3], atoi(a[4]), &p, err, sizeof err);
        if (e == VT_OK) {
            printf("list n=%zu truncated=%d\n", p.n, p.truncated);
            for (size_t i = 0; i < p.n; i++)
                printf("entry %s %" PRIu64 " %d\n", p.e[i].name, p.e[i].size,
                       p.e[i].is_dir);
            vt__list_page_clear(&p);
        }
    } else if (!strcmp(a[0], "ident")) {
        char id[512];
        if (be->access_identity(a[1], id, sizeof id) != 0) {
            printf("ident -\n");
            return 1;
        }
        for (char *p = id; *p; p++)
            if (*p == '\n')
                *p = '|';
        printf("ident %s\n", id);
    } else if (!strcmp(a[0], "endpoint")) {
        char *ep = be->endpoint(a[1]);
        printf("endpoint %s\n", ep ? ep : "-");
        rc = ep ? 0 : 1;
        free(ep);
    } else if (!strcmp(a[0], "fail")) {
        vt_gdal_fail f;
        if (split(be, a[1], &c, &k))
            return 1;
        if (be->last_failure(c, k, &f)) {
            vt_gdal_report g;
            printf("fail err=%s status=%ld where=%s message=%s\n",
                   vt_strerror(f.err), f.status, f.where,
                   f.message ? f.message : "-");
            vt__gdal_error_for_open(&f, &g);
            printf("report vsie=%d %s\n", g.vsie, g.message);
        } else
            printf("fail none\n");
    } else if (!strcmp(a[0], "sleep")) {
        sleep((unsigned)atoi(a[1]));
        printf("sleep\n");
    } else if (!strcmp(a[0], "forget")) {
        be->forget(strcmp(a[1], "-") ? a[1] : NULL);
        printf("forget\n");
    }
    if (e != VT_OK) {
        printf("error err=%s: %s\n", vt_strerror(e), err);
        rc = 1;
    }
    vt__http_resp_clear(&r);
    free(c);
    free(k);
    return rc;
}

int main(int argc, char **argv)
{
    const vt_backend *be = NULL;
    int i = 3, rc = 0;

    if (argc < 4 || strcmp(argv[1], "--backend"))
        return usage();
    for (size_t b = 0; b < sizeof(backends) / sizeof(backends[0]); b++)
        if (!strcmp(argv[2], backends[b].name))
            be = backends[b].be;
    if (!be)
        return usage();
    while (i < argc) {
        int n = nargs(argv[i]);
        if (n < 0 || i + n >= argc)
            return usage();
        rc |= run(be, argv + i);
        fflush(stdout);
        i += n + 1;
    }
    vt__engine_shutdown();
    return rc;
}
