/* hdrsize.h: the size of an object's first GET, learned per prefix.
 *
 * vsitune's first read of an object is VSITUNE_HEADER_SIZE bytes (64 KiB)
 * where a COG needs its structure (tiffmap.h): 6-22 KB for most. A prefix
 * (the endpoint and directory of an object) usually holds files of one
 * layout, so the needs of the last VT_HDRSIZE_SAMPLES opens there say what
 * the next one will need: their largest, with a margin, at most the
 * option. The first open of a prefix, any prefix whose recent opens include
 * a file of unknown need (not a TIFF), and VSITUNE_HEADER_LEARN=NO ask for
 * the option's size. A file needing more than was asked reads the rest
 * through the block cache: one more request, the same bytes.
 *
 * A directory nothing was learned in yet asks what its family learned: the
 * same file name in any directory of the same bucket (vt__hdrsize_family).
 * A STAC catalog keeps each item in a directory of its own and names the
 * assets of its items alike (B04.tif, visual.tif), or each after its item
 * (<item>/<item>_SR_B4.TIF: the family is then the part after the item's
 * name), so a mosaic over items opens every source in a directory never
 * seen; the same asset of the item before says what this one needs.
 *
 * The table: HDRSIZE_SLOTS slots, each the ring of a prefix's last samples,
 * in sets of VT_HDRSIZE_WAYS chosen by a 64-bit hash of the prefix; a full
 * set gives its least recently used slot to a new prefix. Two prefixes of
 * one hash would share a learned size (never a wrong answer, at worst a
 * larger or one more GET). One leaf lock (forksafe.h), held for a few
 * loads and stores only. */
#ifndef VT_HDRSIZE_H
#define VT_HDRSIZE_H

#include <stddef.h>
#include <stdint.h>

#define VT_HDRSIZE_SAMPLES 8

/* Slots per set of the table: up to this many prefixes whose hashes fall in
 * one set are all kept; past that, the least recently asked or noted makes
 * room for the new one. */
#define VT_HDRSIZE_WAYS 4

/* What an open needed, as vt__hdrsize_note takes it: unknown (the option's
 * size stands). */
#define VT_HDRSIZE_UNKNOWN UINT64_MAX

/* The first GET's size for an object under prefix (plen bytes, need not be
 * terminated): the largest need of the prefix's last samples plus an
 * eighth and 1 KiB, rounded up to 1 KiB, at most max; max when the prefix
 * has no sample or one of them is unknown. Thread-safe. */
uint64_t vt__hdrsize_get(const char *prefix, size_t plen, uint64_t max);

/* Record what an open under prefix needed (bytes, or VT_HDRSIZE_UNKNOWN).
 * Thread-safe. */
void vt__hdrsize_note(const char *prefix, size_t plen, uint64_t need);

/* The family of the object whose table id is id (endpoint "\n" bucket/
 * dirs/name): its name in any directory of its bucket. Writes endpoint "\n"
 * bucket "/" "\001" name to out (not terminated). When the name begins with
 * its directory's name and goes on past it (Landsat's and HLS's items:
 * LC08_..._T1/LC08_..._T1_SR_B4.TIF), the family is the rest, the asset's
 * part of the name: endpoint "\n" bucket "/" "\002" rest. Returns the
 * length, or 0 when the object lies at the bucket's top (its directory is
 * the family) or out has no room. Pure. */
size_t vt__hdrsize_family(const char *id, char *out, size_t cap);

/* The first GET's size for the object whose table id is id: what its
 * directory learned (vt__hdrsize_get), or when the directory has no sample,
 * what its family learned; max when neither has one. Thread-safe. */
uint64_t vt__hdrsize_for(const char *id, uint64_t max);

/* Record what the open of the object whose table id is id needed, for its
 * directory and its family. Thread-safe. */
void vt__hdrsize_note_for(const char *id, uint64_t need);

/* The size asked for a largest need of need, bounded by max. Pure. */
uint64_t vt__hdrsize_round(uint64_t need, uint64_t max);

/* Forget every prefix (tests). */
void vt__hdrsize_reset(void);

#endif
