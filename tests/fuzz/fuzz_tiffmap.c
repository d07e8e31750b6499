/* fuzz_tiffmap.c: libFuzzer target for the TIFF span reader (tiffmap.c):
 * the header bytes come from a server. Any bytes: never a crash or a read
 * outside them, and the spans are sorted, non-empty and apart, so that
 * vt__tiffmap_boundary always answers a byte past the position asked. */
#include <stdint.h>
#include <stdlib.h>

#include "read/tiffmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vt_tiff_span s[16];
    size_t n = vt__tiffmap_spans(data, size, s, 16), i;

    for (i = 0; i < n; i++) {
        uint64_t b = vt__tiffmap_boundary(s, n, s[i].start);
        if (s[i].start >= s[i].end || (i > 0 && s[i].start < s[i - 1].end))
            abort();
        if (b <= s[i].start)
            abort();
    }
    return 0;
}
