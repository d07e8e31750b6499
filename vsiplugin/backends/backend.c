/* backend.c: what every backend shares (see backend.h). */
#include "backends/backend.h"

#include <stdlib.h>
#include <string.h>

void vt__list_page_clear(vt_list_page *p)
{
    size_t i;
    if (!p)
        return;
    for (i = 0; i < p->n; i++) {
        free(p->e[i].name);
        free(p->e[i].etag);
    }
    free(p->e);
    memset(p, 0, sizeof(*p));
}

vt_err vt__backend_status_err(long status)
{
    switch (status) {
    case 200:
    case 206:
        return VT_OK;
    case 301:
    case 307:
        return VT_EREDIRECT;
    case 403:
        return VT_EACCESS;
    case 404:
        return VT_ENOTFOUND;
    case 412:
        return VT_ECHANGED;
    case 416:
        return VT_ERANGE;
    case 429:
        return VT_ETRANSIENT;
    default:
        if (status >= 500 && status <= 599)
            return VT_ETRANSIENT;
        return VT_EHTTP;
    }
}
