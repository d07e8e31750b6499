/* fuzz_tiff_head.c: libFuzzer target for where a TIFF's structure ends
 * (read/tiffhead.c), which parses the first bytes of any object opened.
 * Any bytes: never a crash or a read past them, and the answer coherent
 * (nothing known for a non-TIFF, a need past the bytes when more is
 * needed, at least the 8-byte header when exact). */
#include <stdint.h>
#include <stdlib.h>

#include "read/tiffhead.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
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
    return 0;
}
