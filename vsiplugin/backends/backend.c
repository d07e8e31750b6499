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
