/* notice.c: lines for the user that are not errors (see notice.h). */
#include "base/notice.h"

#include <stdarg.h>
#include <stdio.h>

#include <cpl_conv.h>
#include <cpl_error.h>

void vt__notice(const char *fmt, ...)
{
    char line[1024];
    const char *cur;
    char *prev = NULL;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    cur = CPLGetThreadLocalConfigOption("CPL_DEBUG", NULL);
    if (cur)
        prev = CPLStrdup(cur);
    CPLSetThreadLocalConfigOption("CPL_DEBUG", "VSITUNE");
    CPLDebug("VSITUNE", "%s", line);
    CPLSetThreadLocalConfigOption("CPL_DEBUG", prev);
    CPLFree(prev);
}
