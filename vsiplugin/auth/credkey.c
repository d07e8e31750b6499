/* credkey.c: a credential's keyed name (see credkey.h). */
#include "auth/credkey.h"
#include "auth/sigv4.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIGNER_TAG "vsitune shared cache identity 1"

static void hex(const unsigned char *md, unsigned n, char *out)
{
    unsigned i;
    for (i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

int vt__ident_signer(const char *access_key_id, const char *secret,
                     const char *session_token, const char *region,
                     char *out, size_t outlen)
{
    unsigned char md[32];
    char h[65];
    const char *tok = session_token ? session_token : "";
    const char *reg = region ? region : "";
    size_t len = strlen(SIGNER_TAG) + strlen(access_key_id) + strlen(tok) +
                 strlen(reg) + 4;
    char *msg = malloc(len);
    int rc = -1;

    if (outlen)
        out[0] = '\0';
    if (!msg)
        return -1;
    snprintf(msg, len, "%s\n%s\n%s\n%s", SIGNER_TAG, access_key_id, tok, reg);
    if (vt__hmac_sha256(secret, strlen(secret), msg, strlen(msg), md) == 0) {
        hex(md, 32, h);
        snprintf(out, outlen, "signed:%s", h);
        rc = 0;
    }
    OPENSSL_cleanse(msg, len);
    OPENSSL_cleanse(md, sizeof md);
    free(msg);
    return rc;
}
