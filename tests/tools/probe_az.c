/* probe_az.c: vt_backend_probe's Azure-only step: requests built with
 * build_get and sent at once (vt__engine_perform_many), as the read path's
 * batches are, so tests/integration/test_backend_az.py sees what Azurite
 * answers a batch. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "backends/backend.h"
#include "http/engine.h"
#include "probe.h"

/* N requests built with build_get, performed together. */
static vt_err batch(const vt_backend *be, const char *c, const char *k,
                    uint64_t off, uint64_t len, int n, int *opened,
                    char *err, size_t errlen)
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
    printf("{\"op\":\"batch\",\"ok\":%d,\"bytes\":%zu,\"sha256\":\"", ok,
           bytes);
    for (unsigned i = 0; i < mdn; i++)
        printf("%02x", md[i]);
    printf("\",");
    *opened = 1;
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

/* "batch PATH OFF LEN N": N requests of LEN bytes from OFF on; the SHA-256
 * is of the bytes joined. One object: ok, bytes, sha256 (absent when the
 * requests could not be built), err, strerror, errbuf. */
static int step_batch(const vt_backend *be, char **a)
{
    char err[2048] = "", *c = NULL, *k = NULL;
    vt_err e = be->split(a[1], &c, &k);
    int printed = 0;

    if (e != VT_OK)
        snprintf(err, sizeof err, "cannot split %s", a[1]);
    else
        e = batch(be, c, k, strtoull(a[2], NULL, 10), strtoull(a[3], NULL, 10),
                  atoi(a[4]), &printed, err, sizeof err);
    if (!printed)
        printf("{\"op\":\"batch\",");
    printf("\"err\":%d,", (int)e);
    vt__probe_kv("strerror", vt_strerror(e), 0);
    vt__probe_kv("errbuf", err, 1);
    puts("}");
    free(c);
    free(k);
    return e != VT_OK;
}

const vt_probe_step vt__probe_steps_az[] = {
    {"batch", 4, step_batch},
    {NULL, 0, NULL},
};
