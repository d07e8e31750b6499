/* fuzz_creds_doc.c: libFuzzer target for the credential documents vsitune
 * reads from the network (creds_parse.c): the STS AssumeRole* XML answer,
 * the container / IMDS credentials JSON, a JSON string lookup, the IMDS role
 * listing, and ISO 8601 times. Each parser sees the input in a buffer of
 * exactly its length (ASan sees any read past it); a parse that succeeds
 * gives credentials with both keys. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth/creds.h"
#include "auth/creds_parse.h"

static void check_creds(vt_err err, vt_creds *c)
{
    if (err == VT_OK && (!c->access_key || !*c->access_key ||
                         !c->secret_key || !*c->secret_key))
        abort();
    if (err != VT_OK && (c->access_key || c->secret_key || c->session_token))
        abort(); /* "on error *out holds no allocation" */
    vt__creds_clear(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    vt_creds c;
    char *s, *v;
    time_t t;

    memset(&c, 0, sizeof(c));
    check_creds(vt__creds_parse_sts_xml(body, size, &c), &c);
    memset(&c, 0, sizeof(c));
    check_creds(vt__creds_parse_json(body, size, &c), &c);
    v = vt__json_get_string(body, size, "Expiration");
    if (v && strlen(v) > size) /* decoding never grows: \uXXXX gives <= 3 */
        abort();
    free(v);
    v = vt__imds_first_role(body, size);
    if (v && (strlen(v) == 0 || strlen(v) > size))
        abort();
    free(v);
    s = malloc(size + 1); /* the time parser takes a C string */
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    (void)vt__parse_iso8601(s, &t);
    free(s);
    return 0;
}
