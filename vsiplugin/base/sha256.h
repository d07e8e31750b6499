/* sha256.h: the plugin's one SHA-256 (libcrypto's, fetched once).
 *
 * Given EVP_sha256(), OpenSSL 3 looks the algorithm up again on every
 * digest (a property query under its store's lock): that lookup was most of
 * the SigV4 signer's time in many-object opens (issue 22), and the shared
 * cache names every block it looks up with a digest. Every digest of the
 * plugin (block names, identities, signatures) goes through here. */
#ifndef VT_BASE_SHA256_H
#define VT_BASE_SHA256_H

#include <openssl/evp.h>
#include <stddef.h>

/* libcrypto's SHA-256, fetched from the default provider once (OpenSSL 1.1,
 * the bullseye build, has no fetch: its EVP_sha256() is a plain table).
 * Never NULL with a working libcrypto; any thread. */
const EVP_MD *vt__sha256_md(void);

/* SHA-256 of n bytes into out: 0, or -1 when libcrypto fails. */
int vt__sha256(const void *data, size_t n, unsigned char out[32]);

/* Hex SHA-256 of n bytes into out (65 bytes with the NUL). */
void vt__sha256_hex(const void *data, size_t n, char out[65]);

#endif
