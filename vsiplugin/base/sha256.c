/* sha256.c: the plugin's one SHA-256 (see sha256.h). One global: the
 * fetched implementation, set once under pthread_once. */
#include "base/sha256.h"

#include <pthread.h>
#include <string.h>

#include <openssl/crypto.h>

#if OPENSSL_VERSION_NUMBER >= 0x30000000L
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_fetch(void) { sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL); }

const EVP_MD *vt__sha256_md(void)
{
    pthread_once(&sha256_once, sha256_fetch);
    return sha256_md ? sha256_md : EVP_sha256();
}
#else
const EVP_MD *vt__sha256_md(void) { return EVP_sha256(); }
#endif

int vt__sha256(const void *data, size_t n, unsigned char out[32])
{
    unsigned int mdlen = 0;
    return EVP_Digest(data, n, out, &mdlen, vt__sha256_md(), NULL) && mdlen == 32 ? 0 : -1;
}

void vt__sha256_hex(const void *data, size_t n, char out[65])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[32];
    if (vt__sha256(data, n, md) != 0) {
        memset(out, '0', 64); /* cannot happen with a working libcrypto */
        out[64] = '\0';
        return;
    }
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = '\0';
}
