/* listing_table.c: the table listing.c keeps its listings in (see
 * listing_table.h).
 *
 * Why a hash index: every open asks the listings twice (does a listing
 * cover this name? then the COG's "no sidecars" is remembered), and the
 * table holds up to 256 listings, most of them of one directory. Walking it
 * with string compares of keys that share their endpoint and directory took
 * about 2.5% of the opening thread's CPU (perf, 300 opens on one thread,
 * HTTPS at 20 ms). With the index an exact key is one chain, and the keys
 * covering a name (its prefixes) are one probe each. */
#include "read/listing_table.h"

#include <string.h>

#include "base/hash.h"

#define MASK (VT_LTAB_BUCKETS - 1)

void vt__ltab_link(vt_ltab *t, vt_ltab_node *n, const char *key,
                   size_t key_len)
{
    vt_ltab_node **b;

    n->key = key;
    n->key_len = key_len;
    n->hash = vt__fnv1a(key, key_len);
    n->seq = ++t->seq;
    n->prev = NULL;
    n->next = t->head;
    if (t->head)
        t->head->prev = n;
    else
        t->tail = n;
    t->head = n;
    b = &t->buckets[n->hash & MASK];
    n->hnext = *b;
    *b = n;
    n->linked = 1;
    t->count++;
}

void vt__ltab_unlink(vt_ltab *t, vt_ltab_node *n)
{
    vt_ltab_node **pp;

    if (!n->linked)
        return;
    if (n->prev)
        n->prev->next = n->next;
    else
        t->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        t->tail = n->prev;
    for (pp = &t->buckets[n->hash & MASK]; *pp; pp = &(*pp)->hnext)
        if (*pp == n) {
            *pp = n->hnext;
            break;
        }
    n->prev = n->next = n->hnext = NULL;
    n->linked = 0;
    t->count--;
}

vt_ltab_node *vt__ltab_oldest(const vt_ltab *t) { return t->tail; }

vt_ltab_node *vt__ltab_newer_of(const vt_ltab_node *n) { return n->prev; }

vt_ltab_node *vt__ltab_chain(const vt_ltab *t, uint64_t hash)
{
    vt_ltab_node *n = t->buckets[hash & MASK];
    while (n && n->hash != hash)
        n = n->hnext;
    return n;
}

vt_ltab_node *vt__ltab_next_of(const vt_ltab_node *n)
{
    vt_ltab_node *m = n->hnext;
    while (m && m->hash != n->hash)
        m = m->hnext;
    return m;
}

int vt__ltab_is(const vt_ltab_node *n, uint64_t hash, const char *a,
                size_t alen, const char *b, size_t blen)
{
    return n->hash == hash && n->key_len == alen + blen &&
           memcmp(n->key, a, alen) == 0 &&
           memcmp(n->key + alen, b, blen) == 0;
}
