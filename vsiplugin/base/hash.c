/* hash.c: FNV-1a, 64-bit (see hash.h). */
#include "base/hash.h"

uint64_t vt__fnv1a_more(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    size_t i;

    for (i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ULL; /* the 64-bit FNV prime */
    return h;
}

uint64_t vt__fnv1a(const void *p, size_t n)
{
    return vt__fnv1a_more(VT_FNV1A_BASIS, p, n);
}

uint64_t vt__fnv1a_id(const void *p, size_t n)
{
    uint64_t h = vt__fnv1a(p, n);

    return h ? h : 1;
}
