/* shmfit.c: shared-segment sizing against the file system (see shmfit.h). */
#include "shmfit.h"

#include <stdio.h>

#define MIB (1024.0 * 1024.0)

uint64_t vt__shm_fit(uint64_t asked, uint64_t total, uint64_t avail,
                     uint64_t block_size, const char *dir, char *why,
                     size_t whylen)
{
    uint64_t fit = asked;
    const char *bound = "";
    if (fit > total / 2) {
        fit = total / 2;
        bound = "at most half of it";
    }
    if (fit > avail / 10 * 9) {
        fit = avail / 10 * 9;
        bound = "nine tenths of what is free";
    }
    if (block_size)
        fit -= fit % block_size;
    if (fit < VT_SHM_MIN_SIZE) {
        snprintf(why, whylen,
                 "asked %.0f MiB, %s has %.0f MiB (%.0f MiB free): at most "
                 "%.1f MiB would fit, under the %u MiB minimum",
                 asked / MIB, dir, total / MIB, avail / MIB, fit / MIB,
                 VT_SHM_MIN_SIZE >> 20);
        return 0;
    }
    if (fit < asked)
        snprintf(why, whylen,
                 "asked %.0f MiB, %s has %.0f MiB (%.0f MiB free): fitted to "
                 "%.0f MiB (%s)",
                 asked / MIB, dir, total / MIB, avail / MIB, fit / MIB, bound);
    else
        snprintf(why, whylen, "%.0f MiB (%s has %.0f MiB, %.0f MiB free)",
                 fit / MIB, dir, total / MIB, avail / MIB);
    return fit;
}

