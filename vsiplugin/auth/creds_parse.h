/* creds_parse.h: the pure parsers behind creds.c.
 *
 * Shared credentials/config files (INI), STS AssumeRoleWithWebIdentity XML,
 * the container/IMDS credentials JSON, the IMDS role list and ISO 8601 times.
 * No I/O and no globals, so test_creds.c covers them without a network;
 * every parser is bounded by its input length and safe on garbage. */
#ifndef VT_CREDS_PARSE_H
#define VT_CREDS_PARSE_H

#include <stddef.h>
#include <time.h>

#include "auth/creds.h"
#include "base/error.h"

/* The AWS shared files (credentials, config) read line by line as GDAL
 * reads them (ReadAWSCredentials, GetConfigurationFromAWSConfigFiles in
 * cpl_aws.cpp): lines end at \n, \r or both (a NUL byte ends a line's
 * text); a section header is a whole line "[name]" from the first column
 * (no blanks inside or around); the FIRST such section is the profile and
 * the next line that starts with '[' ends it; in it, a line is a key and a
 * value split at its first '=' or ':' (key: trailing blanks dropped, value:
 * leading blanks dropped, nothing else: no comments, an inline "# ..." is
 * part of the value); lines without either are skipped. */

/* The first section headed "[name]" or "[alt]" (alt may be NULL): its
 * body is text[*off, *off + *n). 1 when found; 0 (and 0, 0) when not. */
int vt__ini_section(const char *text, size_t len, const char *name,
                    const char *alt, size_t *off, size_t *n);

/* One "key = value" line; pointers into the text, not NUL-terminated. */
struct vt_ini_kv {
    const char *key, *val;
    size_t klen, vlen;
};

/* The next key line of body[*pos, len) into *kv (*pos moves past it): 1,
 * or 0 at the end. Start with *pos = 0. */
int vt__ini_next(const char *body, size_t len, size_t *pos,
                 struct vt_ini_kv *kv);

/* 1 when kv's key is key (nocase: ASCII case-insensitive, GDAL's EQUAL;
 * else byte for byte, GDAL's strcmp). */
int vt__ini_key_is(const struct vt_ini_kv *kv, const char *key, int nocase);

/* Value of key (case-insensitive) in the first [section] of an INI text,
 * the last line of it winning, as GDAL reads ~/.aws/credentials.
 * malloc'd (caller frees); NULL when absent. */
char *vt__ini_get(const char *text, size_t len, const char *section,
                  const char *key);

/* Parse "YYYY-MM-DDTHH:MM:SS[.fff](Z|+HH:MM|-HH:MM)" into a UTC time_t.
 * Returns 0 on success, -1 when malformed. */
int vt__parse_iso8601(const char *s, time_t *out);

/* Fill *out (access/secret/token/expiration; source untouched) from an STS
 * AssumeRoleWithWebIdentity answer. VT_EPROTO when a field is missing. On
 * error *out holds no allocation. */
vt_err vt__creds_parse_sts_xml(const char *body, size_t len, vt_creds *out);

/* Same from the container / IMDS JSON (AccessKeyId, SecretAccessKey, Token,
 * Expiration). VT_EPROTO when malformed or a field is missing. */
vt_err vt__creds_parse_json(const char *body, size_t len, vt_creds *out);

/* String value of "key" at any depth of a flat JSON object, with JSON
 * escapes decoded (\uXXXX to UTF-8). malloc'd; NULL when absent. */
char *vt__json_get_string(const char *body, size_t len, const char *key);

/* First role name in an IMDS security-credentials listing (one per line),
 * trimmed. malloc'd; NULL when empty or it holds characters a role name
 * cannot have. */
char *vt__imds_first_role(const char *body, size_t len);

/* Can this machine be EC2, from the first bytes of /sys/hypervisor/uuid
 * and /sys/devices/virtual/dmi/id/sys_vendor (NULL: file absent)? 1 yes,
 * 0 no, -1 cannot tell (ask IMDS). Xen instances have a uuid starting with
 * "ec2", Nitro ones the vendor "Amazon EC2" (GDAL's rule). */
int vt__ec2_guess(const char *hypervisor_uuid, const char *sys_vendor);

/* URL of the container credentials endpoint from the given options
 * (RELATIVE_URI goes to http://169.254.170.2). malloc'd; NULL when neither
 * is set. full_uri is refused (NULL, *refused = 1) when plain http to a host
 * that is not loopback or an ECS/EKS link-local address, as AWS SDKs do. */
char *vt__container_url(const char *relative_uri, const char *full_uri,
                        int *refused);

#endif
