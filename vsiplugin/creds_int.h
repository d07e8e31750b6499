/* creds_int.h: what the credentials modules share (creds*.c only).
 *
 * creds.c runs the chain and owns the cache; creds_profile.c reads the shared
 * files; creds_sts.c asks STS (web identity, AssumeRole); creds_meta.c asks
 * the container and EC2 metadata endpoints; creds_util.c holds the helpers
 * below. Providers return 1 (found: *out filled, source set), 0 (not
 * configured here: a note says why) or -1 (configured but failed: errbuf
 * says why). They take no lock and may block on HTTP (vt__engine_perform). */
#ifndef VT_CREDS_INT_H
#define VT_CREDS_INT_H

#include <stddef.h>

#include "creds.h"
#include "engine.h"

#define VT_CREDS_FILE_CAP (1024 * 1024) /* shared files and token files */

/* Config option or environment (CPLGetConfigOption), NULL when unset or
 * empty. The pointer is only good until the next config change: copy it. */
const char *vt__creds_opt(const char *name);

/* snprintf into buf (no-op when len is 0). */
void vt__creds_put(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Append "; text" to a NUL-terminated note buffer, truncating. */
void vt__creds_note(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Deep copy (dst overwritten, not cleared). VT_ENOMEM leaves dst empty. */
vt_err vt__creds_copy(vt_creds *dst, const vt_creds *src);

/* Whole small file, malloc'd and NUL-terminated (caller frees); NULL with
 * errno set when unreadable or over VT_CREDS_FILE_CAP (EFBIG). */
char *vt__creds_read_file(const char *path, size_t *len);

/* A token from a file or option: trimmed, malloc'd; NULL when empty or it
 * holds a line break or NUL (it goes into a header). */
char *vt__creds_clean_token(const char *s, size_t n);

/* Wipe and free a secret (NULL allowed). */
void vt__creds_free_secret(char *s);

/* One request through the engine: 0 on a 200, -1 otherwise with errbuf
 * naming what, the URL and why (S3/STS XML or JSON error text included).
 * resp is the caller's to clear either way. */
int vt__creds_fetch(const char *what, const char *method, const char *url,
                    const char *const *headers, const char *body,
                    long timeout_ms, int retries, vt_http_resp *resp,
                    char *errbuf, size_t errlen);

typedef vt_err (*creds_parser)(const char *body, size_t len, vt_creds *out);

/* vt__creds_fetch, then parse the 200 body into *out and set its source.
 * 0 on success, -1 with errbuf. */
int vt__creds_fetch_creds(const char *what, const char *method, const char *url,
                          const char *const *headers, const char *body,
                          long timeout_ms, int retries, creds_parser parse,
                          const char *source, vt_creds *out, char *errbuf,
                          size_t errlen);

struct vt_profile_hint { /* role settings found in the profile */
    char *role_arn;
    char *token_file; /* web_identity_token_file: web identity */
    char *session_name;
    char *source_profile; /* source_profile: AssumeRole signed with ... */
    vt_creds source;      /* ... that profile's keys */
    char *external_id;
    const char *unsupported; /* a role setting we cannot honour (static) */
};

void vt__profile_hint_clear(struct vt_profile_hint *h);

/* AWS_PROFILE / AWS_DEFAULT_PROFILE / "default" in the shared files. Fills
 * hint when the profile names a role instead of keys. */
int vt__creds_from_profile(vt_creds *out, struct vt_profile_hint *hint,
                           char *notes, size_t nlen, char *errbuf,
                           size_t errlen);

/* STS AssumeRoleWithWebIdentity (unsigned) with the token in token_file. */
int vt__creds_from_web_identity(vt_creds *out, const char *role_arn,
                                const char *token_file,
                                const char *session_name, char *errbuf,
                                size_t errlen);

/* STS AssumeRole signed with hint->source (profile source_profile). */
int vt__creds_from_assume_role(vt_creds *out, const struct vt_profile_hint *h,
                               char *errbuf, size_t errlen);

/* Container endpoint (ECS, EKS Pod Identity, Lambda) at url. */
int vt__creds_from_container(vt_creds *out, const char *url, char *errbuf,
                             size_t errlen);

/* Drop the cached answer of vt__creds_profile_region. */
void vt__creds_profile_region_reset(void);

/* EC2 instance metadata (IMDSv2, IMDSv1 fallback); never -1. */
int vt__creds_from_imds(vt_creds *out, char *notes, size_t nlen);

#endif
