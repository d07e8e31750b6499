/* creds.h: AWS credentials, found in the AWS CLI's order and refreshed.
 *
 * Order: GDAL config/environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN) -> AWS_PROFILE/AWS_DEFAULT_PROFILE in the shared
 * credentials and config files (AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE)
 * -> web identity (AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE, STS
 * AssumeRoleWithWebIdentity) -> container credentials
 * (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI / _FULL_URI with
 * AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE]) -> EC2 IMDSv2.
 * AWS_NO_SIGN_REQUEST=YES means anonymous: no provider is asked.
 *
 * Options are read through CPLGetConfigOption, so --config works as it does
 * for GDAL's own /vsis3/. Network providers go through engine.h. Temporary
 * credentials are refreshed ahead of expiry by one thread while the others
 * keep using the still-valid ones. */
#ifndef VT_CREDS_H
#define VT_CREDS_H

#include <time.h>

#include "error.h"

typedef struct vt_creds {
    char *access_key;        /* malloc'd */
    char *secret_key;        /* malloc'd */
    char *session_token;     /* malloc'd or NULL */
    time_t expiration;       /* 0: does not expire */
    const char *source;      /* static text: "environment", "profile", ... */
    int anonymous;           /* AWS_NO_SIGN_REQUEST: do not sign */
} vt_creds;

/* Copy the current credentials into *out (caller releases with
 * vt__creds_clear). Finds or refreshes them when needed. Thread-safe.
 * Returns VT_ECREDS with a message in errbuf when none can be found. */
vt_err vt__creds_get(vt_creds *out, char *errbuf, size_t errlen);
void vt__creds_clear(vt_creds *c);

/* Forget cached credentials (tests; a config change). */
void vt__creds_reset(void);

/* "region" of the current profile (AWS_PROFILE / AWS_DEFAULT_PROFILE /
 * default) in the AWS config file, as GDAL and the AWS CLI use it when
 * AWS_REGION is unset. malloc'd (caller frees) or NULL. The file is read once
 * per profile and path (vt__creds_reset forgets it). Thread-safe. */
char *vt__creds_profile_region(void);

#endif
