/* errbuf.c: fill a caller's error buffer (errbuf.h). */
#include "errbuf.h"

#include <stdarg.h>
#include <stdio.h>

void vt__seterr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!err || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    /* One line, whatever the user passed (an argument with a newline or an
     * escape sequence must not forge or hide lines of the output). */
    for (char *p = err; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
}
