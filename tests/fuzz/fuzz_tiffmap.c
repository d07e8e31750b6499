/* fuzz_tiffmap.c: libFuzzer target for the TIFF reader (read/tiffmap.c),
 * which parses the first bytes of any object opened: they come from a
 * server. Both of its answers from the same bytes. Any bytes: never a
 * crash or a read outside them; where the structure ends is coherent
 * (nothing known for a non-TIFF, a need past the bytes when more is
 * needed, at least the 8-byte header when exact); the spans are sorted,
 * non-empty and apart, so that vt__tiffmap_boundary always answers a byte
 * past the position asked. */
#include <stdint.h>
#include <stdlib.h>

#include "read/tiffmap.h"

static void check_need(const uint8_t *data, size_t size)
{
    uint64_t need = 1;

    switch (vt__tiff_header_need(data, size, &need)) {
    case VT_TIFF_NOT:
        if (need != 0)
            abort();
        break;
    case VT_TIFF_MORE:
        if (need <= size)
            abort();
        break;
    case VT_TIFF_EXACT:
        if (need < 8)
            abort();
        break;
    default:
        abort();
    }
}

static void check_spans(const uint8_t *data, size_t size)
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
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_need(data, size);
    check_spans(data, size);
    return 0;
}
