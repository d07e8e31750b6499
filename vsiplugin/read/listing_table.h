/* listing_table.h: where listing.c keeps its listings: one list, newest
 * first, with a hash index by key.
 *
 * A node lives inside the listing it stands for (listing.c's vt_listing
 * holds one) and carries the listing's key: "endpoint\nbucket/dir/stem",
 * the listing's id without its kind suffix. The table is newest first (the
 * order listing.c answers in: the newest listing covering a name is the
 * one asked), and each key's hash chain is newest first too, so the first
 * node of a chain that the caller accepts is the newest such listing.
 * No lock of its own: listing.c holds its `mu` around every call. Pure. */
#ifndef VT_READ_LISTING_TABLE_H
#define VT_READ_LISTING_TABLE_H

#include <stddef.h>
#include <stdint.h>

#define VT_LTAB_BUCKETS 512 /* a power of two, twice listing.c's cap */

typedef struct vt_ltab_node {
    struct vt_ltab_node *prev, *next; /* the table, newest first */
    struct vt_ltab_node *hnext;       /* the key's hash chain, newest first */
    const char *key;                  /* not owned: the listing's id */
    size_t key_len;                   /* the key is key[0..key_len) */
    uint64_t hash;                    /* of the key */
    uint64_t seq;                     /* linking order: larger is newer */
    int linked;
} vt_ltab_node;

typedef struct vt_ltab {
    vt_ltab_node *head, *tail;        /* the newest and the oldest node */
    size_t count;
    uint64_t seq;
    vt_ltab_node *buckets[VT_LTAB_BUCKETS];
} vt_ltab;

/* Links n as the newest node, keyed by key[0..key_len) (kept, not copied:
 * the key must outlive the link). n must not be linked. */
void vt__ltab_link(vt_ltab *t, vt_ltab_node *n, const char *key,
                   size_t key_len);

/* Unlinks n from the table and its chain; a node not linked is left as
 * it is. */
void vt__ltab_unlink(vt_ltab *t, vt_ltab_node *n);

/* The oldest node, and the node linked just after n (walk from the
 * oldest to the newest: NULL past the newest). */
vt_ltab_node *vt__ltab_oldest(const vt_ltab *t);
vt_ltab_node *vt__ltab_newer_of(const vt_ltab_node *n);

/* The newest node whose key hashes to hash (walk on with vt__ltab_next_of;
 * a chain may hold other keys: vt__ltab_is tells). */
vt_ltab_node *vt__ltab_chain(const vt_ltab *t, uint64_t hash);
vt_ltab_node *vt__ltab_next_of(const vt_ltab_node *n);

/* n's key is a[0..alen) followed by b[0..blen) (hash: of that key). */
int vt__ltab_is(const vt_ltab_node *n, uint64_t hash, const char *a,
                size_t alen, const char *b, size_t blen);

#endif
