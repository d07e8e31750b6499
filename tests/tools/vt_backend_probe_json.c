/* vt_backend_probe_json.c: drives one backend's vt_backend table (backends/
 * backend.h) against a real server, without GDAL's VSI layer or the read
 * path in between, so that integration tests see exactly what each
 * operation sends (in the lab's request log) and returns.
 *
 *   vt_backend_probe --backend NAME split PATH
 *   vt_backend_probe --backend NAME endpoint PATH
 *   vt_backend_probe --backend NAME ident PATH
 *   vt_backend_probe --backend NAME build PATH OFF LEN [ETAG]
 *   vt_backend_probe --backend NAME get PATH OFF:LEN[:ETAG] ...
 *   vt_backend_probe --backend NAME forget PREFIX get PATH OFF:LEN ...
 *   vt_backend_probe --backend curl curl-note URL TARGET AGO get PATH ...
 *     (probe_curl.c: a redirect of URL to TARGET, as if seen AGO s ago)
 *
 * PATH is the object's path as the backend's GDAL prefix is followed by it
 * ("bucket/key"; for /vsicurl/ the URL). Each operation prints one JSON
 * object per line; `get` prints one per range, in order, in this one
 * process (so what a backend remembers between calls shows), with the
 * SHA-256 of the body. Options come from the environment (GDAL's config).
 * Exit status 0 unless the command line is wrong. */
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>

#include "backends/backend.h"
#include "compat/gdal_error.h"
#include "http/engine.h"

/* Steps of one backend only (probe_<svc>.c). */
int vt__probe_curl_note(const char *url, const char *target, const char *ago);

/* The backends, by name: one line each. */
static const struct {
    const char *name;
    const vt_backend *be;
} backends[] = {
    {"s3", &vt__backend_s3},
    {"curl", &vt__backend_curl},
    {"gs", &vt__backend_gs},
};

static void json_str(const char *s)
{
    putchar('"');
    for (; s && *s; s++) {
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

static void json_kv(const char *k, const char *v, int last)
{
    json_str(k);
    putchar(':');
    if (v)
        json_str(v);
    else
        fputs("null", stdout);
    if (!last)
        putchar(',');
}

static void sha256_hex(const unsigned char *p, size_t n, char out[65])
{
    unsigned char md[32];
    unsigned int len = 0;
    EVP_Digest(p ? p : (const unsigned char *)"", n, md, &len, EVP_sha256(),
               NULL);
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static int op_get(const vt_backend *be, const char *path, const char *spec)
{
    char *container = NULL, *key = NULL, errbuf[1024] = "", hex[65];
    uint64_t off = 0, len = 0;
    char etag[256] = "";
    vt_http_resp r;
    vt_gdal_fail f;
    vt_err err;
    int has_fail;

    if (sscanf(spec, "%" SCNu64 ":%" SCNu64 ":%255s", &off, &len, etag) < 2)
        return -1;
    err = be->split(path, &container, &key);
    if (err) {
        printf("{\"op\":\"get\",\"err\":%d,", (int)err);
        json_kv("strerror", vt_strerror(err), 1);
        puts("}");
        return 0;
    }
    err = be->get(container, key, off, len, etag[0] ? etag : NULL, &r, errbuf,
                  sizeof errbuf);
    sha256_hex(r.body, r.body_len, hex);
    has_fail = err && be->last_failure(container, key, &f);
    printf("{\"op\":\"get\",\"off\":%" PRIu64 ",\"len\":%" PRIu64
           ",\"err\":%d,\"status\":%ld,\"body_len\":%zu,\"has_total\":%d,"
           "\"total\":%" PRIu64 ",\"has_content_range\":%d,\"attempts\":%d,"
           "\"http_version\":%d,",
           off, len, (int)err, r.status, r.body_len, r.has_total,
           r.total_size, r.has_content_range, r.attempts, r.http_version);
    json_kv("strerror", vt_strerror(err), 0);
    json_kv("sha256", hex, 0);
    json_kv("etag", r.etag, 0);
    json_kv("errbuf", errbuf, 0);
    if (has_fail) {
        vt_gdal_report rep;
        vt__gdal_error_for_open(&f, &rep);
        printf("\"fail\":{\"status\":%ld,\"err\":%d,\"vsie\":%d,\"cple\":%d,",
               f.status, (int)f.err, rep.vsie, rep.cple);
        json_kv("transport", f.transport, 0);
        json_kv("where", f.where, 0);
        json_kv("url", f.url, 0);
        json_kv("message", rep.message, 0);
        json_kv("warning", rep.warn ? rep.warning : NULL, 1);
        fputs("}", stdout);
    } else {
        fputs("\"fail\":null", stdout);
    }
    puts("}");
    vt__http_resp_clear(&r);
    free(container);
    free(key);
    return 0;
}

static int op_build(const vt_backend *be, const char *path, const char *offs,
                    const char *lens, const char *etag)
{
    char *container = NULL, *key = NULL, errbuf[1024] = "";
    vt_backend_req rq;
    vt_err err = be->split(path, &container, &key);

    memset(&rq, 0, sizeof rq);
    if (!err)
        err = be->build_get(container, key, strtoull(offs, NULL, 10),
                            strtoull(lens, NULL, 10), etag, &rq, errbuf,
                            sizeof errbuf);
    printf("{\"op\":\"build\",\"err\":%d,", (int)err);
    json_kv("errbuf", errbuf, 0);
    json_kv("url", err ? NULL : rq.url, 0);
    printf("\"max_retries\":%d,\"timeout_ms\":%ld,\"headers\":[",
           err ? 0 : rq.req.max_retries, err ? 0L : rq.req.timeout_ms);
    for (size_t i = 0; !err && rq.headers && rq.headers[i]; i++) {
        if (i)
            putchar(',');
        json_str(rq.headers[i]);
    }
    puts("]}");
    if (!err)
        be->req_clear(&rq);
    free(container);
    free(key);
    return 0;
}

static int op_names(const vt_backend *be, const char *op, const char *path)
{
    char *container = NULL, *key = NULL, *ep, ident[256];
    vt_err err;

    printf("{\"op\":");
    json_str(op);
    putchar(',');
    if (!strcmp(op, "split")) {
        err = be->split(path, &container, &key);
        printf("\"err\":%d,", (int)err);
        json_kv("container", container, 0);
        json_kv("key", key, 1);
        free(container);
        free(key);
    } else if (!strcmp(op, "endpoint")) {
        ep = be->endpoint(path);
        json_kv("endpoint", ep, 1);
        free(ep);
    } else {
        int rc = be->access_identity(path, ident, sizeof ident);
        printf("\"rc\":%d,", rc);
        json_kv("ident", rc ? NULL : ident, 1);
    }
    puts("}");
    return 0;
}

static int usage(void)
{
    fputs("usage: vt_backend_probe --backend NAME "
          "(split|endpoint|ident PATH | build PATH OFF LEN [ETAG] | "
          "[forget PREFIX] get PATH OFF:LEN[:ETAG]...)\n", stderr);
    return 2;
}

int main(int argc, char **argv)
{
    const vt_backend *be = NULL;
    int i, rc = 0;

    if (argc < 5 || strcmp(argv[1], "--backend"))
        return usage();
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++)
        if (!strcmp(argv[2], backends[b].name))
            be = backends[b].be;
    if (!be)
        return usage();
    i = 3;
    if (!strcmp(argv[i], "curl-note") && be == &vt__backend_curl &&
        argc > i + 4) {
        vt__probe_curl_note(argv[i + 1], argv[i + 2], argv[i + 3]);
        i += 4;
    }
    if (!strcmp(argv[i], "forget") && argc > i + 2) {
        be->forget(argv[i + 1]);
        i += 2;
    }
    if (!strcmp(argv[i], "get") && argc > i + 2) {
        for (int j = i + 2; j < argc && rc == 0; j++)
            rc = op_get(be, argv[i + 1], argv[j]);
    } else if (!strcmp(argv[i], "build") && argc >= i + 4) {
        rc = op_build(be, argv[i + 1], argv[i + 2], argv[i + 3],
                      argc > i + 4 ? argv[i + 4] : NULL);
    } else if ((!strcmp(argv[i], "split") || !strcmp(argv[i], "endpoint") ||
                !strcmp(argv[i], "ident")) && argc == i + 2) {
        rc = op_names(be, argv[i], argv[i + 1]);
    } else {
        return usage();
    }
    vt__engine_shutdown();
    return rc ? usage() : 0;
}
