/* sizeparse.c: the size syntax of the options (see sizeparse.h). */
#include "sizeparse.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

int vt__parse_size(const char *s, uint64_t *out)
{
    char *end = NULL;
    unsigned long long v;
    uint64_t mult = 1;

    *out = 0;
    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0)
        return -1;
    while (isspace((unsigned char)*end))
        end++;
    switch (toupper((unsigned char)*end)) {
    case '\0': break;
    case 'K': mult = 1024ULL; end++; break;
    case 'M': mult = 1024ULL * 1024; end++; break;
    case 'G': mult = 1024ULL * 1024 * 1024; end++; break;
    default: return -1;
    }
    if (mult > 1 && (*end == 'B' || *end == 'b'))
        end++;
    if (*end != '\0')
        return -1;
    if (v > UINT64_MAX / mult)
        return -1;
    *out = (uint64_t)v * mult;
    return 0;
}
