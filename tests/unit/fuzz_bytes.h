/* fuzz_bytes.h: deterministic garbage for the parser tests (test_s3.c,
 * test_creds.c): random bytes mixed with fragments of the format under test,
 * in buffers of exactly the generated length so ASan catches any read past
 * the end. Header-only (tests are one file each); not a test itself. */
#ifndef VT_FUZZ_BYTES_H
#define VT_FUZZ_BYTES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint32_t fuzz_next(uint32_t *seed)
{
    *seed = *seed * 1664525u + 1013904223u;
    return *seed;
}

/* A malloc'd buffer of *len (< max_len) bytes, about half of them copied
 * from frags (caller frees). */
static char *fuzz_bytes(uint32_t *seed, size_t max_len,
                        const char *const *frags, size_t nfrags, size_t *len)
{
    size_t n = fuzz_next(seed) % max_len, i = 0;
    char *buf = malloc(n ? n : 1);
    if (!buf)
        abort();
    while (i < n) {
        uint32_t r = fuzz_next(seed);
        if ((r >> 16) % 2) {
            const char *f = frags[(r >> 8) % nfrags];
            size_t fl = strlen(f);
            if (fl > n - i)
                fl = n - i;
            memcpy(buf + i, f, fl);
            i += fl;
        } else {
            buf[i++] = (char)(r >> 24);
        }
    }
    *len = n;
    return buf;
}

#endif
