/* hash.h: the plugin's one 64-bit string hash (FNV-1a).
 *
 * Bounded tables that know their entries by a hash of a name (read/hdrsize.c
 * and read/near.c: directories and families; read/suspect.c: errors said
 * once; http/engine_origin.c: failing objects; base/config.c: bad values
 * warned about; read/listing_table.c: listings by key) all use this one, so
 * a name hashes alike everywhere. Not for anything an attacker chooses to
 * collide with: a collision there only shares a learned size or a "said
 * once". Pure. */
#ifndef VT_HASH_H
#define VT_HASH_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a's offset basis: the hash of no bytes. */
#define VT_FNV1A_BASIS 0xcbf29ce484222325ULL

/* FNV-1a (64-bit) of the n bytes at p. */
uint64_t vt__fnv1a(const void *p, size_t n);

/* h extended by the n bytes at p: a key's hash built piece by piece, or of
 * each of a name's prefixes in one pass (read/listing.c).
 * vt__fnv1a_more(VT_FNV1A_BASIS, p, n) == vt__fnv1a(p, n). */
uint64_t vt__fnv1a_more(uint64_t h, const void *p, size_t n);

/* vt__fnv1a(p, n), but never 0: 1 stands for it. For tables in which 0 marks
 * a free slot or "nothing yet" (read/hdrsize.c, read/near.c, base/config.c). */
uint64_t vt__fnv1a_id(const void *p, size_t n);

#endif
