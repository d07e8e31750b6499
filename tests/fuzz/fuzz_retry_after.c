/* fuzz_retry_after.c: libFuzzer target for Retry-After and HTTP dates
 * (engine_retry.c): never a crash, a delay always within [0, cap] or -1,
 * and S3's transient-code scan (backends/s3/s3_transient.c) safe on any
 * bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/s3/s3.h"
#include "http/engine_retry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    double d;

    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    d = vt__parse_retry_after(s, 1700000000, 30.0);
    if (!(d == -1 || (d >= 0 && d <= 30.0)))
        abort();
    (void)vt__parse_http_date(s);
    (void)vt__s3_answer_transient(400, data, size);
    free(s);
    return 0;
}
