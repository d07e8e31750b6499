/* wholenum.c: strict whole numbers (wholenum.h). */
#include "wholenum.h"

#include <errno.h>
#include <stdlib.h>

int vt__parse_whole(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;

    if (!*s)
        return -1;
    for (const char *p = (*s == '-' ? s + 1 : s); *p; p++)
        if (*p < '0' || *p > '9')
            return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno == ERANGE)
        return -2;
    if (*end)
        return -1;
    if (v < lo || v > hi)
        return -2;
    *out = v;
    return 0;
}
