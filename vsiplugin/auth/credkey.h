/* credkey.h: a credential as a name that proves possession of its secret.
 *
 * The shared caches name what an identity may read by the whole credential
 * (read/ident.h). A key id alone is no secret (it is in every request and
 * log), so the name is a keyed hash with the secret as the key: a process
 * holding the key id only, or a made-up session token, cannot compute it,
 * and nothing in it turns back into the secret. Pure (OpenSSL). */
#ifndef VT_CREDKEY_H
#define VT_CREDKEY_H

#include <stddef.h>

/* "signed:<64 hex digits>" into out (at least 72 bytes): HMAC-SHA256 keyed
 * by secret of the key id, the session token (NULL or "": none, as on the
 * wire) and the signing region. 0, or -1 (out "") when OpenSSL fails. */
int vt__ident_signer(const char *access_key_id, const char *secret,
                     const char *session_token, const char *region,
                     char *out, size_t outlen);

#endif
