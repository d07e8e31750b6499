/* vt_backend_probe.c: drive a backend's table (backends/backend.h) from the
 * command line, with no GDAL VSI layer in between, so the integration tests
 * (test_backend_<service>.py) can point it at the lab and read what the
 * server saw. Options come from the environment (CPLGetConfigOption reads
 * it), as GDAL users set them. One program for every backend: one row each
 * in `backends` below, with the steps only that service has (probe_<svc>.c).
 *
 *   vt_backend_probe --backend NAME CMD ARGS [CMD ARGS ...]
 *
 * Commands run in order in one process (so kept tokens, remembered
 * failures, redirects and forget are seen across them); each prints one
 * JSON object on one line, its "op" the command:
 *   split PATH            err, container, key
 *   endpoint PATH         endpoint (null: bad options)
 *   ident PATH            rc, ident (null when rc is not 0)
 *   build PATH OFF LEN ETAG  (ETAG "-": none) err, errbuf, url,
 *                         max_retries, timeout_ms, headers
 *   get PATH OFF LEN      err, strerror, errbuf, status, body_len, sha256,
 *                         etag, http_version, ... and fail: the last
 *                         failure as GDAL would report an open of it
 *   pin PATH OFF LEN ETAG the same GET with If-Match: ETAG
 *   head PATH             err, strerror, errbuf, status, size, etag
 *   list CONTAINER PREFIX DIR MAX
 *                         err, strerror, errbuf, n, truncated, marker,
 *                         entries [{name, size, is_dir, etag, mtime}]
 *   fail PATH, report PATH  fail: the last failure of PATH with its report
 *                         (vt__gdal_error_for_open), or null
 *   forget PREFIX         ("-": everything)
 *   sleep SECONDS         (to outlive a short-lived token)
 * and a service's own (az: batch; curl: curl-note).
 * PATH is the object's path as it follows the backend's GDAL prefix
 * ("bucket/key"; for /vsicurl/ the URL). The exit status is 1 when an
 * operation failed (err not 0, ident or endpoint refused), 2 on bad usage. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth/sigv4.h"
#include "base/sha256.h"
#include "backends/backend.h"
#include "compat/gdal_error.h"
#include "http/engine.h"
#include "probe.h"

/* The backends, by name, with the steps only that service has. */
static const struct {
    const char *name;
    const vt_backend *be;
    const vt_probe_step *steps;
} backends[] = {
    {"s3", &vt__backend_s3, NULL},
    {"gs", &vt__backend_gs, NULL},
    {"az", &vt__backend_az, vt__probe_steps_az},
    {"curl", &vt__backend_curl, vt__probe_steps_curl},
};

void vt__probe_str(const char *s)
{
    if (!s) {
        fputs("null", stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

void vt__probe_kv(const char *k, const char *v, int last)
{
    vt__probe_str(k);
    putchar(':');
    vt__probe_str(v);
    if (!last)
        putchar(',');
}

/* "err", "strerror" and "errbuf" closing an object. */
static int close_err(vt_err e, const char *errbuf)
{
    printf("\"err\":%d,", (int)e);
    vt__probe_kv("strerror", vt_strerror(e), 0);
    vt__probe_kv("errbuf", errbuf, 1);
    puts("}");
    return e != VT_OK;
}

/* close_err for an operation on a split PATH, freeing its parts. */
static int close_path(char *c, char *k, vt_err e, const char *errbuf)
{
    free(c);
    free(k);
    return close_err(e, errbuf);
}

/* Opens {"op":CMD, and splits PATH; on failure closes the object. */
static int open_split(const vt_backend *be, char **a, char **c, char **k)
{
    char why[1024];
    vt_err e;

    printf("{\"op\":");
    vt__probe_str(a[0]);
    putchar(',');
    e = be->split(a[1], c, k);
    if (e == VT_OK)
        return 0;
    snprintf(why, sizeof why, "cannot split %s", a[1]);
    close_err(e, why);
    return -1;
}

static void print_fail(const vt_backend *be, const char *c, const char *k)
{
    vt_gdal_fail f;
    vt_gdal_report rep;

    if (!be->last_failure(c, k, &f)) {
        fputs("\"fail\":null", stdout);
        return;
    }
    vt__gdal_error_for_open(&f, &rep);
    printf("\"fail\":{\"status\":%ld,\"err\":%d,\"vsie\":%d,\"cple\":%d,",
           f.status, (int)f.err, rep.vsie, rep.cple);
    vt__probe_kv("strerror", vt_strerror(f.err), 0);
    vt__probe_kv("transport", f.transport, 0);
    vt__probe_kv("where", f.where, 0);
    vt__probe_kv("url", f.url, 0);
    vt__probe_kv("fail_message", f.message, 0);
    vt__probe_kv("message", rep.message, 0);
    vt__probe_kv("warning", rep.warn ? rep.warning : NULL, 1);
    putchar('}');
}

/* get PATH OFF LEN, pin PATH OFF LEN ETAG */
static int op_get(const vt_backend *be, char **a)
{
    char *c = NULL, *k = NULL, errbuf[2048] = "", hex[65];
    uint64_t off = strtoull(a[2], NULL, 10), len = strtoull(a[3], NULL, 10);
    vt_http_resp r;
    vt_err e;

    memset(&r, 0, sizeof r);
    if (open_split(be, a, &c, &k))
        return 1;
    e = be->get(c, k, off, len, !strcmp(a[0], "pin") ? a[4] : NULL, &r,
                errbuf, sizeof errbuf);
    vt__sha256_hex(r.body, r.body_len, hex);
    printf("\"off\":%" PRIu64 ",\"len\":%" PRIu64 ",\"status\":%ld,"
           "\"body_len\":%zu,\"has_total\":%d,\"total\":%" PRIu64
           ",\"has_content_range\":%d,\"attempts\":%d,\"http_version\":%d,",
           off, len, r.status, r.body_len, r.has_total, r.total_size,
           r.has_content_range, r.attempts, r.http_version);
    vt__probe_kv("sha256", hex, 0);
    vt__probe_kv("etag", r.etag, 0);
    if (e != VT_OK)
        print_fail(be, c, k);
    else
        fputs("\"fail\":null", stdout);
    putchar(',');
    vt__http_resp_clear(&r);
    return close_path(c, k, e, errbuf);
}

/* build PATH OFF LEN ETAG */
static int op_build(const vt_backend *be, char **a)
{
    char *c = NULL, *k = NULL, errbuf[2048] = "";
    vt_backend_req q;
    vt_err e;

    memset(&q, 0, sizeof q);
    if (open_split(be, a, &c, &k))
        return 1;
    e = be->build_get(c, k, strtoull(a[2], NULL, 10), strtoull(a[3], NULL, 10),
                      strcmp(a[4], "-") ? a[4] : NULL, &q, errbuf,
                      sizeof errbuf);
    vt__probe_kv("url", e ? NULL : q.url, 0);
    printf("\"max_retries\":%d,\"timeout_ms\":%ld,\"headers\":[",
           e ? 0 : q.req.max_retries, e ? 0L : q.req.timeout_ms);
    for (size_t i = 0; !e && q.headers && q.headers[i]; i++) {
        if (i)
            putchar(',');
        vt__probe_str(q.headers[i]);
    }
    fputs("],", stdout);
    if (!e)
        be->req_clear(&q);
    return close_path(c, k, e, errbuf);
}

/* head PATH */
static int op_head(const vt_backend *be, char **a)
{
    char *c = NULL, *k = NULL, errbuf[2048] = "";
    vt_http_resp r;
    vt_err e;

    memset(&r, 0, sizeof r);
    if (open_split(be, a, &c, &k))
        return 1;
    e = be->head ? be->head(c, k, &r, errbuf, sizeof errbuf) : VT_EINVAL;
    if (!be->head)
        snprintf(errbuf, sizeof errbuf, "%s has no head", be->name);
    printf("\"status\":%ld,\"size\":%" PRIu64 ",", r.status, r.total_size);
    vt__probe_kv("etag", r.etag, 0);
    vt__http_resp_clear(&r);
    return close_path(c, k, e, errbuf);
}

/* list CONTAINER PREFIX DIR MAX */
static int op_list(const vt_backend *be, char **a)
{
    char errbuf[2048] = "";
    vt_list_page p;
    vt_err e;

    memset(&p, 0, sizeof p);
    e = be->list ? be->list(a[1], a[2], a[3], atoi(a[4]), &p, errbuf,
                            sizeof errbuf)
                 : VT_EINVAL;
    if (!be->list)
        snprintf(errbuf, sizeof errbuf, "%s has no list", be->name);
    printf("{\"op\":\"list\",\"n\":%zu,\"truncated\":%d,\"marker\":%d,"
           "\"entries\":[", e ? 0 : p.n, p.truncated, p.marker);
    for (size_t i = 0; !e && i < p.n; i++) {
        printf("%s{", i ? "," : "");
        vt__probe_kv("name", p.e[i].name, 0);
        printf("\"size\":%" PRIu64 ",\"is_dir\":%d,\"mtime\":%lld,",
               p.e[i].size, p.e[i].is_dir, p.e[i].mtime);
        vt__probe_kv("etag", p.e[i].etag, 1);
        putchar('}');
    }
    fputs("],", stdout);
    if (!e)
        vt__list_page_clear(&p);
    return close_err(e, errbuf);
}

/* split PATH, endpoint PATH, ident PATH */
static int op_names(const vt_backend *be, char **a)
{
    char *c = NULL, *k = NULL, *ep, ident[512];
    int rc = 0;

    printf("{\"op\":");
    vt__probe_str(a[0]);
    putchar(',');
    if (!strcmp(a[0], "split")) {
        vt_err e = be->split(a[1], &c, &k);
        printf("\"err\":%d,", (int)e);
        vt__probe_kv("container", c, 0);
        vt__probe_kv("key", k, 1);
        rc = e != VT_OK;
        free(c);
        free(k);
    } else if (!strcmp(a[0], "endpoint")) {
        ep = be->endpoint(a[1]);
        vt__probe_kv("endpoint", ep, 1);
        rc = ep == NULL;
        free(ep);
    } else {
        rc = be->access_identity(a[1], ident, sizeof ident) != 0;
        printf("\"rc\":%d,", rc);
        vt__probe_kv("ident", rc ? NULL : ident, 1);
    }
    puts("}");
    return rc;
}

/* fail PATH, report PATH */
static int op_fail(const vt_backend *be, char **a)
{
    char *c = NULL, *k = NULL;

    if (open_split(be, a, &c, &k))
        return 1;
    print_fail(be, c, k);
    puts("}");
    free(c);
    free(k);
    return 0;
}

/* forget PREFIX, sleep SECONDS */
static int op_misc(const vt_backend *be, char **a)
{
    if (!strcmp(a[0], "sleep"))
        sleep((unsigned)atoi(a[1]));
    else if (be->forget)
        be->forget(strcmp(a[1], "-") ? a[1] : NULL);
    printf("{\"op\":");
    vt__probe_str(a[0]);
    puts("}");
    return 0;
}

/* Every backend's commands. */
static const vt_probe_step common[] = {
    {"split", 1, op_names},  {"endpoint", 1, op_names},
    {"ident", 1, op_names},  {"build", 4, op_build},
    {"get", 3, op_get},      {"pin", 4, op_get},
    {"head", 1, op_head},    {"list", 4, op_list},
    {"fail", 1, op_fail},    {"report", 1, op_fail},
    {"forget", 1, op_misc},  {"sleep", 1, op_misc},
    {NULL, 0, NULL},
};

static const vt_probe_step *find(const vt_probe_step *t, const char *cmd)
{
    for (; t && t->cmd; t++)
        if (!strcmp(t->cmd, cmd))
            return t;
    return NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: vt_backend_probe --backend s3|gs|az|curl "
                    "CMD ARGS [CMD ARGS ...]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const vt_backend *be = NULL;
    const vt_probe_step *own = NULL;
    int i = 3, rc = 0;

    if (argc < 4 || strcmp(argv[1], "--backend"))
        return usage();
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++)
        if (!strcmp(argv[2], backends[b].name)) {
            be = backends[b].be;
            own = backends[b].steps;
        }
    if (!be)
        return usage();
    while (i < argc) {
        const vt_probe_step *s = find(common, argv[i]);
        if (!s)
            s = find(own, argv[i]);
        if (!s || i + s->nargs >= argc)
            return usage();
        rc |= s->run(be, argv + i);
        fflush(stdout);
        i += s->nargs + 1;
    }
    vt__engine_shutdown();
    return rc;
}
