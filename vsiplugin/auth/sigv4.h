/* sigv4.h: AWS Signature Version 4, pure (no I/O), with OpenSSL libcrypto.
 *
 * We sign ourselves instead of using CURLOPT_AWS_SIGV4: libcurl 7.88 leaves
 * query strings unsorted and paths unencoded (fixed only in curl 8.3-8.9).
 * Verified against the AWS SigV4 test suite (tests/unit/test_sigv4.c) and
 * the S3 example of the AWS documentation. */
#ifndef VT_SIGV4_H
#define VT_SIGV4_H

#include <stddef.h>

#include "base/error.h"

typedef struct vt_sigv4_input {
    const char *method;           /* "GET" */
    const char *path;             /* path as sent on the wire (percent-encoded) */
    const char *query;            /* query as sent, without '?', or NULL */
    const char *const *headers;   /* NULL-terminated "Name: value" lines to sign
                                     (exactly these: SignedHeaders lists them);
                                     must include host */
    const char *payload_hash;     /* hex SHA-256 of body, or "UNSIGNED-PAYLOAD" */
    const char *amz_date;         /* YYYYMMDDTHHMMSSZ */
    const char *region;           /* "us-east-1" */
    const char *service;          /* "s3" */
    const char *access_key;
    const char *secret_key;
    int normalize_path;           /* 1: RFC 3986 dot-segment removal and
                                     re-encoding (every service but S3); 0: S3 */
} vt_sigv4_input;

typedef struct vt_sigv4_output {
    char *canonical_request;      /* malloc'd */
    char *string_to_sign;         /* malloc'd */
    char *authorization;          /* malloc'd value of the Authorization header */
    char signature[65];           /* hex */
} vt_sigv4_output;

/* Sign. On success every pointer in *out is set; release with
 * vt__sigv4_output_clear(). On failure *out is zeroed. */
vt_err vt__sigv4_sign(const vt_sigv4_input *in, vt_sigv4_output *out);
void vt__sigv4_output_clear(vt_sigv4_output *out);


/* HMAC-SHA-256 of msg (mlen bytes) under key into out: 0, or -1 when
 * libcrypto fails. The same fetched SHA-256 as the signer's. */
int vt__hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
                    unsigned char out[32]);

/* Percent-encode per SigV4/S3 rules: unreserved A-Z a-z 0-9 - _ . ~ kept,
 * everything else %XX uppercase; '/' kept when keep_slash. malloc'd. */
char *vt__uri_encode(const char *s, int keep_slash);

/* Format t (UTC) as YYYYMMDDTHHMMSSZ into out[17]. */
void vt__amz_date(long long t, char out[17]);

/* Format t (UTC) as an HTTP-date (RFC 7231's IMF-fixdate, the RFC 1123 form:
 * "Wed, 02 Dec 2026 03:57:22 GMT") into out[VT_HTTP_DATE_LEN]: GCS's Date
 * header (signed by GOOG1) and Azure's x-ms-date (signed by Shared Key). */
#define VT_HTTP_DATE_LEN 30
void vt__http_date(long long t, char out[VT_HTTP_DATE_LEN]);

#endif
