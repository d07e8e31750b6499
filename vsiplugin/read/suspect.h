/* suspect.h: blocks GDAL failed to decode are dropped, so they are fetched
 * once more.
 *
 * A 206 with the right length and Content-Range can still carry wrong bytes
 * (a broken proxy or middlebox, a flipped bit): HTTP cannot tell, the block
 * cache keeps them, and every later read of those blocks in the process would
 * fail in GDAL's decoder. vsitune never sees the decoder. It sees what GDAL
 * does next with the same file handle, and that is enough:
 *
 * - Evidence: the handle is used again (read or close) by the thread that
 *   made its last read, and that thread's GDAL error state changed since
 *   that read returned, to a failure that names the object ("/vsis3/b/k, band 1:
 *   IReadBlock failed at X offset 2, Y offset 2: TIFFReadEncodedTile()
 *   failed." in GDAL 3.6, "k, band 1: IReadBlock failed ..." from 3.10 on,
 *   where a band's errors carry the file name only; "`/vsis3/b/k' not
 *   recognized as a supported file format."), and that is not one of
 *   vsitune's own messages. Another object of the same file name read by
 *   the same thread just before can only cost one needless refetch. Clients that reset the
 *   error state between their calls (the Python bindings with
 *   UseExceptions, rasterio) erase its counter, class and first byte only
 *   (CPLErrorReset in GDAL 3.6 to 3.13); the rest of the text stays in
 *   GDAL's buffer until the next error and is what is read then.
 * - Re-read: a multi-range read whose ranges all lie inside the handle's
 *   previous read, a multi-range one. GTiff asks again for the tiles of a
 *   window only when they are not in GDAL's block cache: when it failed to
 *   decode them, or found their COG leader or trailer wrong (and asks again
 *   without them, at once). Only the read just before counts: a window read
 *   after a strip that covered it, or after other reads, is normal.
 *
 * Either way the cache blocks of the handle's last VT_SUSPECT_READS reads are
 * dropped (the bytes that failed are not always in the very last one: after
 * GTiff's multi-range read of a window, libtiff may read strile offsets from
 * the header before it decodes), each block at most once per
 * VT_SUSPECT_MEMORY seconds in the process, and the reads that follow fetch
 * them again. A failure on refetched bytes is then
 * a real error and is left alone; nothing is retried within one GDAL call,
 * so every refetch follows a failure GDAL reported (no loop). A decoder that
 * does not detect corruption (uncompressed data, LZW) gives no signal.
 *
 * Thread-safety: a vt_suspect belongs to one handle, which GDAL uses from one
 * thread at a time; the once-per-block memory is process-wide under its own
 * leaf lock. */
#ifndef VT_SUSPECT_H
#define VT_SUSPECT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "read/object.h"

#define VT_SUSPECT_READS 8     /* reads kept per handle */
#define VT_SUSPECT_RANGES 32   /* ranges they hold, at most */
#define VT_SUSPECT_MEMORY 300  /* s a dropped block is not dropped again */

typedef struct vt_suspect {
    size_t n;                           /* ranges kept; 0: no read kept */
    uint64_t off[VT_SUSPECT_RANGES];    /* oldest read first */
    uint64_t len[VT_SUSPECT_RANGES];
    unsigned read[VT_SUSPECT_RANGES];   /* the read (reads counter) */
    unsigned char multi[VT_SUSPECT_RANGES]; /* of a multi-range read */
    unsigned reads;                     /* successful reads of the handle */
    pthread_t tid;                      /* the thread of the last read */
    unsigned errors;                    /* its CPLGetErrorCounter() after */
    uint64_t text;                      /* hash of its error text after */
} vt_suspect;

/* Before a read of n ranges on the handle (multi: a multi-range read): on
 * evidence or a re-read, drop the blocks of the handle's last reads. */
void vt__suspect_before_read(vt_suspect *s, vt_object *o, int multi, size_t n,
                             const uint64_t *off, const size_t *len);

/* After that read: ok (every byte delivered) keeps it among the handle's
 * last reads (a read of more than VT_SUSPECT_RANGES ranges as their span,
 * never matched as a re-read), forgetting the oldest; a failure forgets them
 * all (its error is vsitune's, not a decoder's). */
void vt__suspect_after_read(vt_suspect *s, int ok, int multi, size_t n,
                            const uint64_t *off, const size_t *len);

/* The handle is being closed: on evidence, drop the blocks of its last reads. */
void vt__suspect_close(vt_suspect *s, vt_object *o);

/* ---- the parts, exposed for the unit tests ---- */

/* 1 when text (GDAL's last error text) blames the object at path
 * "bucket/key": names it (the whole path, or its file name as a name of its
 * own: a band's errors name the file only from GDAL 3.10 on), is not
 * vsitune's own, and is a failure: failure 1 (the error class is
 * CE_Failure), 0 (it is not), -1 (unknown, the state was reset: text is
 * GDAL's text from its second byte on, and must say "failed"). */
int vt__suspect_blames(const char *text, int failure, const char *path);

/* 1 when s holds reads, the calling thread made the last one, and this
 * thread's GDAL error state changed since, to a failure that blames path
 * "bucket/key" (vt__suspect_blames; after a CPLErrorReset, on the text it
 * left). Reads GDAL's error state only. */
int vt__suspect_evidence(const vt_suspect *s, const char *path);

/* 1 when every non-empty range (off[i], len[i]) lies inside a range of the
 * last read s keeps, when that was a multi-range read. */
int vt__suspect_within(const vt_suspect *s, size_t n, const uint64_t *off,
                       const size_t *len);

/* 1 when block `block` of cache_key may be dropped at `now`, and remember
 * that it was; 0 when it was dropped less than VT_SUSPECT_MEMORY seconds
 * before (the bytes were fetched again since: a failure on them is real).
 * Remembers the last 1024 drops. Thread-safe. */
int vt__suspect_once(const char *cache_key, uint64_t block, time_t now);

#endif
