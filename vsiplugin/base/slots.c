/* slots.c: the slot a bounded table fills next (slots.h). */
#include "base/slots.h"

#include <string.h>

size_t vt__slot_take(const void *table, size_t stride, size_t cap, size_t off,
                     size_t *next, int *evict)
{
    const char *t = table;
    size_t i;

    for (i = 0; i < cap; i++) {
        const void *p;
        memcpy(&p, t + i * stride + off, sizeof p);
        if (p == NULL) {
            *evict = 0;
            return i;
        }
    }
    i = *next % cap;
    *next = (i + 1) % cap;
    *evict = 1;
    return i;
}
