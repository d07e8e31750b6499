/* backend.h: what the read path asks of a storage service.
 *
 * The read path (read/: object table, header and block reads, listings,
 * shared names) knows objects, byte ranges and answers; it does not know
 * how a service names, signs, routes or words them. Each service is one
 * vt_backend: a table of operations, the way nghttp2 takes a table of
 * session callbacks. S3 is the first (backends/s3/, vt__backend_s3); the
 * services GDAL reaches through /vsicurl/, /vsigs/ and /vsiaz/ are meant
 * to come as further tables, without a change above this line. What they
 * need and this interface leaves room for:
 *
 *   - /vsicurl/: the "container" is empty and the key is a whole URL
 *     (query string included: presigned URLs, SAS, tokens are part of the
 *     identity); build_get follows and remembers redirects as GDAL does
 *     (CPL_VSIL_CURL_USE_S3_REDIRECT, expiring targets); a server that
 *     ignores Range answers 200 with everything (the read path checks
 *     answers, not status codes); head may be absent (no HEAD at all, a
 *     GET of the first bytes learns the size from Content-Range); list is
 *     NULL (GDAL's own handler parses HTML indexes).
 *   - /vsigs/: bucket/key, HMAC (GOOG1) or OAuth2 bearer tokens, whose
 *     credential identity keys the shared names as AWS keys do.
 *   - /vsiaz/: container/blob, shared key or SAS in the query string.
 *
 * Every operation takes the object's options path ("bucket/key" as GDAL's
 * callbacks give it, without the prefix): options are read for that path
 * (base/config.h), as GDAL reads its own per path. Operations are
 * thread-safe and hold no vsitune lock when they return. */
#ifndef VT_BACKEND_H
#define VT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "http/engine.h"

struct vt_gdal_fail; /* compat/gdal_error.h */

/* A built request: vt_http_req pointing into storage this struct owns. */
typedef struct vt_backend_req {
    vt_http_req req;
    char *url;
    char **headers;       /* NULL-terminated, malloc'd strings */
    char *cainfo;         /* the CA file, or NULL: curl's default */
    char *opts_path;      /* req.opts_path: the path the engine reads the
                             request's HTTP options for, or NULL */
} vt_backend_req;

/* One entry of a listed "directory" (a key's last component). */
typedef struct vt_list_entry {
    char *name;         /* "x.tif.ovr"; for a folder its name without '/' */
    uint64_t size;      /* 0 for a folder */
    long long mtime;    /* Last-Modified as Unix time (0: absent) */
    char *etag;         /* with its quotes, or NULL */
    int is_dir;
} vt_list_entry;

typedef struct vt_list_page {
    vt_list_entry *e;   /* malloc'd array of n entries, in answer order */
    size_t n;
    int truncated;      /* more entries exist than this page holds */
    int marker;         /* the directory's own marker object was listed */
} vt_list_page;

void vt__list_page_clear(vt_list_page *p);

/* An HTTP status as vt_err, as an object store answers it (S3's reading,
 * which /vsicurl/ extends): 200/206 VT_OK, 301/307 VT_EREDIRECT, 403
 * VT_EACCESS, 404 VT_ENOTFOUND, 412 VT_ECHANGED, 416 VT_ERANGE, 429 and
 * 5xx VT_ETRANSIENT, anything else VT_EHTTP. */
vt_err vt__backend_status_err(long status);

typedef struct vt_backend {
    const char *name;        /* "s3": debug lines, counters */
    const char *gdal_prefix; /* the GDAL prefix it takes over: "/vsis3/" */
    const char *scheme;      /* how failures name objects: "s3://" */

    /* "bucket/key/with/slashes" -> malloc'd container and key ("bucket"
     * or "bucket/": an empty key). VT_EINVAL for a path that names
     * nothing. */
    vt_err (*split)(const char *path, char **container, char **key);

    /* Where path's objects live by its options, for the object identity
     * (it must not change after the first request: redirects left out).
     * malloc'd; NULL when the options are bad (the request fails anyway). */
    char *(*endpoint)(const char *path);

    /* Who the requests for path are made as, for the shared caches' names
     * of objects (read/ident.c): "anonymous", "*" (sharing across
     * credentials asked for) or a keyed digest of the whole credential
     * (the secret the key: a name proves possession without holding it),
     * and the request options that decide access. 0 and out filled, or -1:
     * cannot be told (nothing is shared). */
    int (*access_identity)(const char *path, char *out, size_t outlen);

    /* A GET of bytes [off, off+len) (len 0: the whole object, no Range),
     * pinned with If-Match: etag when etag is not NULL, built and signed
     * for where what the service taught so far says the object lives.
     * For the engine's batches (vt__engine_perform_many). On error errbuf
     * says why in the service's words. */
    vt_err (*build_get)(const char *container, const char *key, uint64_t off,
                        uint64_t len, const char *etag, vt_backend_req *out,
                        char *errbuf, size_t errlen);
    void (*req_clear)(vt_backend_req *r);

    /* The same GET performed, following the service's redirects as GDAL
     * does (and remembering them as GDAL does). Blocks. */
    vt_err (*get)(const char *container, const char *key, uint64_t off,
                  uint64_t len, const char *etag, vt_http_resp *resp,
                  char *errbuf, size_t errlen);

    /* A HEAD of the whole object (size, ETag, Last-Modified), or NULL when
     * the service's objects are sized by a first GET. Blocks. */
    vt_err (*head)(const char *container, const char *key, vt_http_resp *resp,
                   char *errbuf, size_t errlen);

    /* One page (at most max_keys) of the entries of container starting
     * with prefix, "/"-delimited, directly in dir ("a/b/" or ""), parsed;
     * NULL when listing stays GDAL's. Blocks. */
    vt_err (*list)(const char *container, const char *prefix, const char *dir,
                   int max_keys, vt_list_page *out, char *errbuf,
                   size_t errlen);

    /* A failed answer as one line: "s3://b/k: HTTP 403 AccessDenied: ..." */
    void (*describe)(char *buf, size_t len, const char *container,
                     const char *key, const vt_http_resp *r, vt_err err);

    /* An answer's status as vsitune's error (200/206: VT_OK). */
    vt_err (*status_err)(long status);

    /* The last failure of get/head on this thread for container/key, with
     * what GDAL needs to word it (compat/gdal_error.h): 1 and *out filled
     * (pointers into thread-local storage), else 0. */
    int (*last_failure)(const char *container, const char *key,
                        struct vt_gdal_fail *out);

    /* Forget what the service taught about names starting with prefix
     * ("bucket/dir"; "": every name): GDAL's VSICurlPartialClearCache; NULL:
     * everything, redirects and credentials included: VSICurlClearCache. */
    void (*forget)(const char *prefix);

    /* 1 when vsitune cannot make path's requests as GDAL would (a
     * credential it does not carry): the takeover leaves the name to GDAL's
     * own handler, whose answer is then stock's by construction. NULL:
     * never. Reads options and files only, never blocks on HTTP. */
    int (*declines)(const char *path);
} vt_backend;

/* The backends, one per service. */
extern const vt_backend vt__backend_s3;
extern const vt_backend vt__backend_gs;
extern const vt_backend vt__backend_curl; /* backends/curl/: /vsicurl/ */
extern const vt_backend vt__backend_az;

#endif
