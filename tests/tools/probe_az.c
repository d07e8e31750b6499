/* probe_az.c: drive the Azure backend's table (vt__backend_az) from the
 * command line, without GDAL's VSI layer, so tests/integration/
 * test_backend_az.py can point it at the lab's Azurite and read what the
 * server saw. Options come from the environment (CPLGetConfigOption reads
 * it), as GDAL users set them. Its commands and lines are those of the
 * shared driver tests/tools/vt_backend_probe.c (branches reach-gs,
 * reach-curl), where "az" becomes one row of its table when they meet;
 * batch, pin and report are Azure's additions.
 *
 *   vt_probe_az CMD ARGS [CMD ARGS ...]
 *
 *   get PATH OFF LEN    "get status=N bytes=N sha256=HEX http=V"
 *   pin PATH OFF LEN ETAG  the same GET with If-Match: ETAG
 *   batch PATH OFF LEN N   N requests of LEN bytes from OFF on, built with
 *                       build_get and sent at once (vt__engine_perform_many):
 *                       "batch ok=N bytes=N sha256=HEX" (of the bytes joined)
 *   head PATH           "head status=N size=N etag=E"
 *   list CONTAINER PREFIX DIR MAX
 *                       "list n=N truncated=T marker=M" then
 *                       "entry NAME SIZE DIR ETAG MTIME"
 *   ident PATH          "ident <identity>"
 *   endpoint PATH       "endpoint URL"
 *   build PATH OFF LEN  "build URL" then "header LINE" each
 *   fail PATH           "fail err=E status=N where=W message=M"
 *   report PATH         the last failure as the GDAL face would report an
 *                       open of it (compat/gdal_error.h):
 *                       "report vsie=N cple=N message=M"
 *   forget PREFIX       "forget" ("-": everything)
 * A failed command prints "error err=E: <errbuf>" and the next one runs;
 * the exit status is 1 when any failed, 2 on bad usage. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "auth/sigv4.h"
#include "backends/backend.h"
#include "compat/gdal_error.h"
#include "http/engine.h"

static const vt_backend *be = &vt__backend_az;

static int nargs(const char *cmd)
{
    static const struct {
        const char *cmd;
        int n;
    } t[] = {{"get", 3},   {"pin", 4},      {"batch", 4}, {"head", 1},
             {"list", 4},  {"ident", 1},    {"endpoint", 1}, {"build", 3},
             {"fail", 1},  {"report", 1},   {"forget", 1}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (!strcmp(cmd, t[i].cmd))
            return t[i].n;
    return -1;
}

/* N requests built with build_get, performed together. */
static vt_err batch(const char *c, const char *k, uint64_t off, uint64_t len,
                    int n, char *err, size_t errlen)
{
    vt_backend_req *q = calloc((size_t)n, sizeof(*q));
    vt_http_req *reqs = calloc((size_t)n, sizeof(*reqs));
    vt_http_resp *resps = calloc((size_t)n, sizeof(*resps));
    vt_err *errs = calloc((size_t)n, sizeof(*errs)), e = VT_ENOMEM;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char md[32];
    unsigned int mdn = 0;
    size_t bytes = 0;
    int ok = 0, built = 0;

    if (!q || !reqs || !resps || !errs || !ctx)
        goto out;
    for (built = 0; built < n; built++) {
        e = be->build_get(c, k, off + (uint64_t)built * len, len, NULL,
                          &q[built], err, errlen);
        if (e)
            goto out;
        reqs[built] = q[built].req;
    }
    vt__engine_perform_many((size_t)n, reqs, resps, errs);
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    for (int i = 0; i < n; i++) {
        if (errs[i] == VT_OK && be->status_err(resps[i].status) == VT_OK)
            ok++;
        EVP_DigestUpdate(ctx, resps[i].body, resps[i].body_len);
        bytes += resps[i].body_len;
    }
    EVP_DigestFinal_ex(ctx, md, &mdn);
    printf("batch ok=%d bytes=%zu sha256=", ok, bytes);
    for (unsigned i = 0; i < mdn; i++)
        printf("%02x", md[i]);
    printf("\n");
    e = ok == n ? VT_OK : VT_EHTTP;
    if (e)
        snprintf(err, errlen, "%d of %d answers failed", n - ok, n);
out:
    for (int i = 0; q && i < built; i++)
        be->req_clear(&q[i]);
    for (int i = 0; resps && i < n; i++)
        vt__http_resp_clear(&resps[i]);
    EVP_MD_CTX_free(ctx);
    free(q);
    free(reqs);
    free(resps);
    free(errs);
    return e;
}

static int run(char **a)
{
    char err[2048] = "", *c = NULL, *k = NULL;
    vt_http_resp r;
    vt_err e = VT_OK;
    int rc = 0, named = strcmp(a[0], "list") && strcmp(a[0], "ident") &&
                        strcmp(a[0], "endpoint") && strcmp(a[0], "forget");

    memset(&r, 0, sizeof(r));
    if (named && be->split(a[1], &c, &k) != VT_OK) {
        printf("error err=%s: cannot split %s\n", vt_strerror(VT_EINVAL), a[1]);
        return 1;
    }
    if (!strcmp(a[0], "get") || !strcmp(a[0], "pin")) {
        e = be->get(c, k, strtoull(a[2], NULL, 10), strtoull(a[3], NULL, 10),
                    !strcmp(a[0], "pin") ? a[4] : NULL, &r, err, sizeof err);
        if (e == VT_OK) {
            char h[65];
            vt__sha256_hex(r.body, r.body_len, h);
            printf("get status=%ld bytes=%zu sha256=%s http=%d\n", r.status,
                   r.body_len, h, r.http_version);
        }
    } else if (!strcmp(a[0], "batch")) {
        e = batch(c, k, strtoull(a[2], NULL, 10), strtoull(a[3], NULL, 10),
                  atoi(a[4]), err, sizeof err);
    } else if (!strcmp(a[0], "build")) {
        vt_backend_req q;
        e = be->build_get(c, k, strtoull(a[2], NULL, 10),
                          strtoull(a[3], NULL, 10), NULL, &q, err, sizeof err);
        if (e == VT_OK) {
            printf("build %s\n", q.url);
            for (char **h = q.headers; h && *h; h++)
                printf("header %s\n", *h);
            be->req_clear(&q);
        }
    } else if (!strcmp(a[0], "head")) {
        e = be->head(c, k, &r, err, sizeof err);
        if (e == VT_OK)
            printf("head status=%ld size=%" PRIu64 " etag=%s\n", r.status,
                   r.total_size, r.etag ? r.etag : "-");
    } else if (!strcmp(a[0], "list")) {
        vt_list_page p;
        e = be->list(a[1], a[2], a[3], atoi(a[4]), &p, err, sizeof err);
        if (e == VT_OK) {
            printf("list n=%zu truncated=%d marker=%d\n", p.n, p.truncated,
                   p.marker);
            for (size_t i = 0; i < p.n; i++)
                printf("entry %s %" PRIu64 " %d %s %lld\n", p.e[i].name,
                       p.e[i].size, p.e[i].is_dir,
                       p.e[i].etag ? p.e[i].etag : "-", p.e[i].mtime);
            vt__list_page_clear(&p);
        }
    } else if (!strcmp(a[0], "ident")) {
        char id[512];
        rc = be->access_identity(a[1], id, sizeof id) != 0;
        printf("ident %s\n", rc ? "-" : id);
    } else if (!strcmp(a[0], "endpoint")) {
        char *ep = be->endpoint(a[1]);
        printf("endpoint %s\n", ep ? ep : "-");
        rc = ep == NULL;
        free(ep);
    } else if (!strcmp(a[0], "fail") || !strcmp(a[0], "report")) {
        vt_gdal_fail f;
        vt_gdal_report g;
        if (!be->last_failure(c, k, &f))
            printf("%s none\n", a[0]);
        else if (!strcmp(a[0], "fail"))
            printf("fail err=%s status=%ld where=%s message=%s\n",
                   vt_strerror(f.err), f.status, f.where,
                   f.message ? f.message : "-");
        else {
            vt__gdal_error_for_open(&f, &g);
            printf("report vsie=%d cple=%d message=%s\n", g.vsie, g.cple,
                   g.message);
        }
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
    int i = 1, rc = 0;

    while (i < argc) {
        int n = nargs(argv[i]);
        if (n < 0 || i + n >= argc) {
            fprintf(stderr, "usage: vt_probe_az CMD ARGS [CMD ARGS ...]\n");
            return 2;
        }
        rc |= run(argv + i);
        fflush(stdout);
        i += n + 1;
    }
    vt__engine_shutdown();
    return rc;
}
