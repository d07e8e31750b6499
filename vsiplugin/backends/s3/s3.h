/* s3.h: S3 addressing, request building and error parsing.
 *
 * Reads GDAL's own /vsis3/ option names at call time, for the request's
 * path "bucket/key" (config.h: path-specific options, then config):
 * AWS_S3_ENDPOINT, AWS_HTTPS, AWS_VIRTUAL_HOSTING, AWS_DEFAULT_REGION /
 * the profile's region / AWS_REGION, AWS_REQUEST_PAYER, AWS_TIMESTAMP,
 * GDAL_HTTP_HEADERS, GDAL_HTTP_HEADER_FILE, and the credentials options
 * (creds.h). Builds signed GET requests (sigv4.h + creds.h), signing the
 * headers GDAL signs; follows S3's region and endpoint redirects as GDAL
 * does and remembers them (s3_route.c). */
#ifndef VT_S3_H
#define VT_S3_H

#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "base/error.h"
#include "http/engine.h"

/* Split "bucket/key/with/slashes" into malloc'd bucket and key. A path with
 * no key ("bucket" or "bucket/") gives an empty key. */
vt_err vt__s3_split(const char *path, char **bucket, char **key);

/* A built request (backend.h; cainfo: config.h vt__cfg_ca_bundle). */
typedef vt_backend_req vt_s3_request;

/* Build a signed GET of bytes [off, off+len) of bucket/key (len 0: whole
 * object, no Range header), where redirects seen so far say it lives.
 * if_match: ETag to pin with If-Match, or NULL. On error errbuf says why
 * (e.g. no credentials: creds.h's message). */
vt_err vt__s3_build_get(const char *bucket, const char *key, uint64_t off,
                        uint64_t len, const char *if_match, vt_s3_request *out,
                        char *errbuf, size_t errlen);
void vt__s3_request_clear(vt_s3_request *r);

/* Perform a GET, following S3's answers as GDAL does (up to 3 times): a 400
 * AuthorizationHeaderMalformed naming a <Region>, a 301 PermanentRedirect /
 * 307 TemporaryRedirect naming an <Endpoint> (the bucket as a subdomain
 * switches to virtual hosting), or a 301/307/400 with x-amz-bucket-region.
 * Permanent answers are remembered for the bucket, temporary ones for this
 * object only. */
vt_err vt__s3_get(const char *bucket, const char *key, uint64_t off,
                  uint64_t len, const char *if_match, vt_http_resp *resp,
                  char *errbuf, size_t errlen);

/* The same for a signed HEAD of the whole object (size from its
 * Content-Length: resp->has_total/total_size; ETag). */
vt_err vt__s3_head(const char *bucket, const char *key, vt_http_resp *resp,
                   char *errbuf, size_t errlen);

/* List one page (up to max_keys, at most 1000) of bucket's keys starting
 * with prefix, delimiter "/" (ListObjects v1, signed, region redirect as
 * vt__s3_get). resp->body holds the XML answer (vt__listxml_parse). Blocks. */
vt_err vt__s3_list(const char *bucket, const char *prefix, int max_keys,
                   vt_http_resp *resp, char *errbuf, size_t errlen);


/* The engine's judge of S3's error answers (s3_transient.c; set as
 * vt_http_req.answer_transient on every S3 request): 1 when an answer of
 * status with this body (the first len bytes of it; any bytes) carries a
 * Code that S3 documents as worth retrying the same request for although
 * its status is not 5xx: RequestTimeout (400: "Your socket connection to
 * the server was not read from or written to within the timeout period").
 * Only the start of the body is scanned (a code sits near its start). */
int vt__s3_answer_transient(long status, const unsigned char *body,
                            size_t len);

/* Pull <Code> and <Message> out of an S3 error body (malloc'd, NULL when
 * absent). */
void vt__s3_parse_error(const char *body, size_t len, char **code,
                        char **message);

/* The full description of a failed answer into buf: "s3://b/k: HTTP 403
 * AccessDenied: Access Denied", "s3://b/k: HTTP 503 SlowDown: ... (transient
 * server error, retries exhausted)", "s3://b/k: HTTP 206: truncated body: 10
 * of 20 bytes (malformed or truncated response)", "s3://b/k: timed out,
 * retries exhausted: <curl's words>". err: what the caller concluded. */
void vt__s3_describe(char *buf, size_t len, const char *bucket,
                     const char *key, const vt_http_resp *r, vt_err err);

/* Map an HTTP status to vt_err (200/206 -> VT_OK): backend.h's
 * vt__backend_status_err, every object store's reading. */
vt_err vt__s3_status_err(long status);

/* Region requests for path "bucket/key" are signed in: a remembered
 * redirect, else AWS_DEFAULT_REGION, else the profile's region (when
 * credentials come from the shared files), else AWS_REGION, else
 * us-east-1 (GDAL 3.6's order). malloc'd. */
char *vt__s3_region_for(const char *path);

/* The same from the options alone (redirects left out), for the object
 * identity: it must not change after the first request. malloc'd. */
char *vt__s3_options_region(const char *path);

/* Where path "bucket/key" lives by its options (redirects left out: they
 * point at the same bucket): "scheme://host[:port]/bucket" (path style) or
 * "scheme://bucket.host[:port]" (virtual hosting). malloc'd; NULL on a bad
 * path or AWS_S3_ENDPOINT. For the object identity. Thread-safe. */
char *vt__s3_endpoint_base(const char *path);

struct vt_gdal_fail;

/* The last failed vt__s3_get / vt__s3_head on this thread, when it was for
 * bucket/key: *out filled (pointers into thread-local storage, good until
 * the next S3 call on this thread), 1. Otherwise 0. For reporting a failed
 * open as GDAL does (gdal_error.h). */
int vt__s3_last_failure(const char *bucket, const char *key,
                        struct vt_gdal_fail *out);

/* Forget the failures remembered for the wording of a failure met again
 * (s3_fail.c) of every name starting with prefix ("bucket/dir", leading '/'
 * skipped; NULL or "": all): VSICurlClearCache, VSICurlPartialClearCache
 * and a write, as GDAL forgets its cached properties. Thread-safe. */
void vt__s3_forget_failures(const char *prefix);

/* Forget remembered redirects (VSICurlClearCache, as GDAL forgets its). */
void vt__s3_forget_routes(void);

#endif
