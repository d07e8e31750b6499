/* creds_int.h: what the credentials modules share (creds*.c only).
 *
 * creds.c runs the chain and owns the cache; creds_opts.c reads every option
 * the chain depends on, once per call, for the request's path;
 * creds_profile.c reads the shared files; creds_sts.c asks STS (web
 * identity, AssumeRole); creds_meta.c asks the container and EC2 metadata
 * endpoints; creds_util.c holds the helpers below. Providers return 1
 * (found: *out filled, source set), 0 (not configured here: a note says why)
 * or -1 (configured but failed: errbuf says why). They take no lock and may
 * block on HTTP (vt__engine_perform). */
#ifndef VT_CREDS_INT_H
#define VT_CREDS_INT_H

#include <stddef.h>

#include "auth/creds.h"
#include "http/engine.h"

#define VT_CREDS_FILE_CAP (1024 * 1024) /* token files */
/* The shared files: GDAL reads them line by line, whatever their size; a
 * file this large (far beyond any real one) reads as absent here. */
#define VT_CREDS_SHARED_CAP (256u * 1024 * 1024)

/* ---- options (creds_opts.c) ------------------------------------------ */

/* Every option the chain reads. Keep creds_opts.c's name table in step. */
enum vt_copt {
    CO_NO_SIGN,            /* AWS_NO_SIGN_REQUEST */
    CO_ACCESS_KEY,         /* AWS_ACCESS_KEY_ID */
    CO_SECRET_KEY,         /* AWS_SECRET_ACCESS_KEY */
    CO_SESSION_TOKEN,      /* AWS_SESSION_TOKEN */
    CO_DEFAULT_PROFILE,    /* AWS_DEFAULT_PROFILE (GDAL: wins) */
    CO_PROFILE,            /* AWS_PROFILE */
    CO_CREDS_FILE,         /* CPL_AWS_CREDENTIALS_FILE (GDAL's name) */
    CO_SHARED_CREDS_FILE,  /* AWS_SHARED_CREDENTIALS_FILE (AWS CLI's) */
    CO_CONFIG_FILE,        /* AWS_CONFIG_FILE */
    CO_HOME,               /* HOME */
    CO_ROLE_ARN,           /* AWS_ROLE_ARN */
    CO_TOKEN_FILE,         /* AWS_WEB_IDENTITY_TOKEN_FILE */
    CO_SESSION_NAME,       /* AWS_ROLE_SESSION_NAME */
    CO_WEB_IDENTITY,       /* CPL_AWS_WEB_IDENTITY_ENABLE */
    CO_STS_ENDPOINT,       /* AWS_STS_ENDPOINT */
    CO_STS_REGION,         /* AWS_STS_REGION */
    CO_STS_ROOT_URL,       /* CPL_AWS_STS_ROOT_URL */
    CO_STS_REGIONAL,       /* AWS_STS_REGIONAL_ENDPOINTS */
    CO_REGION,             /* AWS_REGION */
    CO_DEFAULT_REGION,     /* AWS_DEFAULT_REGION */
    CO_HTTPS,              /* AWS_HTTPS */
    CO_TIMESTAMP,          /* AWS_TIMESTAMP (GDAL's fixed signing time) */
    CO_CONTAINER_REL,      /* AWS_CONTAINER_CREDENTIALS_RELATIVE_URI */
    CO_CONTAINER_FULL,     /* AWS_CONTAINER_CREDENTIALS_FULL_URI */
    CO_CONTAINER_TOKEN,    /* AWS_CONTAINER_AUTHORIZATION_TOKEN */
    CO_CONTAINER_TOKEN_FILE, /* AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE */
    CO_IMDS_ENDPOINT,      /* AWS_EC2_METADATA_SERVICE_ENDPOINT */
    CO_EC2_ROOT_URL,       /* CPL_AWS_EC2_API_ROOT_URL (GDAL's name) */
    CO_IMDS_DISABLED,      /* AWS_EC2_METADATA_DISABLED */
    CO_EC2_AUTODETECT,     /* CPL_AWS_AUTODETECT_EC2 */
    CO_EC2_CHECK_UUID,     /* CPL_AWS_CHECK_HYPERVISOR_UUID (GDAL, deprecated) */
    CO_COUNT
};

/* The options of one vt__creds_get call, read once for its path. */
struct vt_copts {
    char *v[CO_COUNT]; /* raw values, malloc'd; NULL when unset */
};

/* Read every option for path (NULL: global). Returns 0. An allocation
 * failure reads as "unset", which can only make the chain find less. */
int vt__copts_load(const char *path, struct vt_copts *o);
/* Whether path's options settle credentials without the shared files
 * (AWS_NO_SIGN_REQUEST true, or AWS_SECRET_ACCESS_KEY set): what
 * vt__copts_load + the checks vt__creds_get starts with decide, read with two
 * lookups instead of every option (the region of every name asks). */
int vt__copts_settle_without_files(const char *path);
void vt__copts_clear(struct vt_copts *o);

/* Value, NULL when unset or empty. */
const char *vt__copt(const struct vt_copts *o, enum vt_copt k);

/* Value, NULL only when unset ("" stays ""). */
const char *vt__copt_raw(const struct vt_copts *o, enum vt_copt k);

/* CPLTestBool of the value; def when unset or empty. */
int vt__copt_bool(const struct vt_copts *o, enum vt_copt k, int def);

/* All values joined (malloc'd): the key of a cache entry. */
char *vt__copts_fingerprint(const struct vt_copts *o);

/* The shared files GDAL reads: the credentials file (CPL_AWS_CREDENTIALS_FILE,
 * else AWS_SHARED_CREDENTIALS_FILE, else $HOME/.aws/credentials) and the
 * config file (AWS_CONFIG_FILE, else $HOME/.aws/config). An option set to ""
 * names no file: "" is written. *explicit_config: AWS_CONFIG_FILE was set. */
void vt__copts_files(const struct vt_copts *o, char *cred, size_t clen,
                     char *config, size_t flen, int *explicit_config);

/* ---- helpers (creds_util.c) ------------------------------------------ */

/* snprintf into buf (no-op when len is 0). */
void vt__creds_put(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Append "; text" to a NUL-terminated note buffer, truncating. */
void vt__creds_note(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Deep copy (dst overwritten, not cleared). VT_ENOMEM leaves dst empty. */
vt_err vt__creds_copy(vt_creds *dst, const vt_creds *src);

/* Whole file, malloc'd and NUL-terminated (caller frees), read through
 * VSIFOpenL (local paths, /vsimem/, /vsizip/...). NULL with errno set when
 * unreadable (ENOENT), over cap bytes (EFBIG), or a network file system
 * (EPERM: reading it would sign requests with the credentials being looked
 * up). */
char *vt__creds_read_file(const char *path, size_t cap, size_t *len);

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

/* ---- the shared files (creds_profile.c) ------------------------------ */

/* The two shared files of one call, read whole (GDAL reads them on every
 * handle; vsitune on every credentials lookup, and keys its cache by their
 * content, so an edited file takes effect at once). */
struct vt_shared_files {
    char cred_path[1024];   /* "" when the option names no file */
    char config_path[1024];
    int explicit_config;    /* AWS_CONFIG_FILE was given */
    char *ctext, *ftext;    /* contents, NULL when unreadable */
    size_t clen, flen;
};

void vt__shared_files_read(const struct vt_copts *o, struct vt_shared_files *f);
void vt__shared_files_clear(struct vt_shared_files *f);

/* One profile as GDAL reads it: keys from the credentials file's [name]
 * (the config file's [profile name] / [name] fill in what it lacks; a key
 * set differently in both: the credentials file wins, with GDAL's
 * warning), and the config file's role settings and region. */
struct vt_profile {
    char *access_key, *secret_key, *session_token;
    char *region;
    char *role_arn, *source_profile, *external_id, *mfa_serial;
    char *session_name, *token_file;
};

void vt__profile_clear(struct vt_profile *p);

/* Parse profile name from f into *p (fields NULL when absent). warn: emit
 * GDAL's CPLError warnings (AWS_CONFIG_FILE given but unreadable, a key
 * set differently in both files). */
void vt__profile_parse(const struct vt_shared_files *f, const char *name,
                       int warn, struct vt_profile *p);

/* The profile name o selects: AWS_DEFAULT_PROFILE, else AWS_PROFILE, else
 * "default" (a pointer into o, or static). */
const char *vt__profile_name(const struct vt_copts *o);

/* ---- network providers (creds_sts.c, creds_meta.c) ------------------- */

/* STS AssumeRoleWithWebIdentity (unsigned GET, as GDAL sends it) for
 * role_arn with the token read from token_file (VSIFOpenL). */
int vt__creds_from_web_identity(const struct vt_copts *o, vt_creds *out,
                                const char *role_arn, const char *token_file,
                                const char *session_name, char *errbuf,
                                size_t errlen);

/* STS AssumeRole for p's role_arn, signed with *signer (GET with the
 * parameters in the query string, as GDAL sends it: AWS_STS_ENDPOINT host,
 * AWS_STS_REGION, AWS_HTTPS scheme). */
int vt__creds_from_assume_role(const struct vt_copts *o, vt_creds *out,
                               const struct vt_profile *p,
                               const vt_creds *signer, char *errbuf,
                               size_t errlen);

/* Container endpoint (ECS, EKS Pod Identity, Lambda) at url. */
int vt__creds_from_container(const struct vt_copts *o, vt_creds *out,
                             const char *url, char *errbuf, size_t errlen);

/* EC2 instance metadata (IMDSv2, IMDSv1 when the token is not given);
 * never -1. */
int vt__creds_from_imds(const struct vt_copts *o, vt_creds *out, char *notes,
                        size_t nlen);

/* Forget the IAM role name IMDS gave (vt__creds_reset). */
void vt__creds_imds_reset(void);

#endif
