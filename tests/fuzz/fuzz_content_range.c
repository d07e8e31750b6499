/* fuzz_content_range.c: libFuzzer target for the parsers of response and
 * request range headers (engine_retry.c). Any bytes: never a crash, and a
 * parsed range is coherent (first <= last < total when a total is known). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/engine_retry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    vt_content_range cr;
    uint64_t a, b;

    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    if (vt__parse_content_range(s, &cr) == VT_OK) {
        if (cr.has_range && cr.first > cr.last)
            abort();
        if (cr.has_range && cr.has_total && cr.last >= cr.total)
            abort();
    }
    if (vt__parse_range_request(s, &a, &b) == VT_OK && a > b)
        abort();
    free(s);
    return 0;
}
