/* creds.h: AWS credentials, found in GDAL 3.6's order and refreshed.
 *
 * Order (GDAL's GetConfiguration in cpl_aws.cpp, measured against stock
 * GDAL 3.6.2 where the source left a doubt):
 *   AWS_NO_SIGN_REQUEST=YES: anonymous, no provider is asked
 *   -> AWS_SECRET_ACCESS_KEY (+ AWS_ACCESS_KEY_ID, AWS_SESSION_TOKEN)
 *   -> the profile (AWS_DEFAULT_PROFILE, else AWS_PROFILE, else "default")
 *      in the credentials file (CPL_AWS_CREDENTIALS_FILE, else
 *      AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials) and the config
 *      file (AWS_CONFIG_FILE, else ~/.aws/config), read through VSIFOpenL so
 *      /vsimem/ and other /vsi paths work: keys, or role_arn + source_profile
 *      (STS AssumeRole signed with the source profile's keys, or with the web
 *      identity credentials of a source profile that has role_arn +
 *      web_identity_token_file); a profile that is missing or holds nothing
 *      usable lets the chain go on, as GDAL does
 *   -> web identity: AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE (or the
 *      profile's own role_arn + web_identity_token_file), STS
 *      AssumeRoleWithWebIdentity; skipped when CPL_AWS_WEB_IDENTITY_ENABLE=NO
 *   -> container credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI /
 *      _FULL_URI with AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE])
 *   -> EC2 instance metadata (IMDSv2, IMDSv1 when the token is refused).
 *
 * Every option is read for the request's path (config.h), so credentials
 * set with VSISetPathSpecificOption / gdal.SetCredential for one bucket
 * apply to that bucket only. Network providers go through engine.h.
 * Temporary credentials are cached per set of options and refreshed ahead of
 * expiry by one thread while the others keep using the still-valid ones. */
#ifndef VT_CREDS_H
#define VT_CREDS_H

#include <stddef.h>
#include <time.h>

#include "base/error.h"

typedef struct vt_creds {
    char *access_key;        /* malloc'd */
    char *secret_key;        /* malloc'd */
    char *session_token;     /* malloc'd or NULL */
    time_t expiration;       /* 0: does not expire */
    const char *source;      /* static text: "environment", "profile", ... */
    int anonymous;           /* AWS_NO_SIGN_REQUEST: do not sign */
} vt_creds;

/* Copy the credentials for path ("bucket/key" as in config.h; NULL: the
 * global options) into *out (caller releases with vt__creds_clear). Finds
 * or refreshes them when needed. Thread-safe; may block on file reads and
 * HTTP; may emit the CPLError warnings GDAL emits (a config file named but
 * unreadable, keys that differ between the two files). Returns VT_ECREDS
 * with errbuf starting with GDAL's own wording when none can be found. */
vt_err vt__creds_get(const char *path, vt_creds *out, char *errbuf,
                     size_t errlen);
void vt__creds_clear(vt_creds *c);

/* Forget cached credentials and remembered IAM role names (tests;
 * VSICurlClearCache, as GDAL's own ClearCache forgets its). */
void vt__creds_reset(void);

/* The region GDAL takes from the profile's "region" in the config file for
 * path, when credentials would come from the shared files (no
 * AWS_SECRET_ACCESS_KEY, no AWS_NO_SIGN_REQUEST). malloc'd (caller frees)
 * or NULL. Thread-safe; reads the config file (VSIFOpenL). */
char *vt__creds_profile_region(const char *path);

#endif
