/* streaming.h: what GDAL's /vsis3_streaming/ handler answers after vsitune's
 * /vsis3/ learned an object (streaming.c).
 *
 * Stock GDAL keeps one cache of file properties (size, existence) keyed by
 * URL and shared by all its network handlers; each handler answers from it
 * only for the URLs it asked about itself. So once /vsis3_streaming/ has
 * asked about an object, a later stat through /vsis3/ that fetches the
 * object again (after an overwrite) replaces the size both answer, and
 * /vsis3_streaming/ gives the new one without a request (GDAL's autotest
 * test_vsis3_4). vsitune's /vsis3/ reads never touch that cache (it is
 * internal to GDAL: nothing exported sets it), so takeover.cpp notes here
 * the URLs the streaming handler asked about and the sizes vsitune's /vsis3/
 * learned from the server after that, and answers the streaming handler's
 * stat from them as GDAL's shared cache would.
 *
 * Names: url is GDAL's URL of the object (GetActualURL of either prefix: the
 * key of GDAL's cache); path is "bucket/key" (what vsitune forgets by).
 * One bounded process-wide table (VT_STREAM_CAP URLs, the oldest replaced)
 * under a leaf lock held only to look up or change it; thread-safe. */
#ifndef VT_STREAMING_H
#define VT_STREAMING_H

#include <stdint.h>

#define VT_STREAM_CAP 256

/* 1 when the streaming handler asked about any URL (else nothing here can
 * matter: callers skip their look-ups). Lock-free. */
int vt__stream_any(void);

/* /vsis3_streaming/ asked about url (a stat or an open): from now on it
 * answers from GDAL's shared cache, so a size /vsis3/ learns later is its
 * answer too. Keeps a size noted for url (the streaming handler answered
 * from the cache, which holds it). */
void vt__stream_seen(const char *url, const char *path);

/* vsitune's /vsis3/ fetched url's object from the server: size is what
 * GDAL's /vsis3/ would have put in the shared cache. Noted only for a url
 * the streaming handler asked about; nothing otherwise. */
void vt__stream_learned(const char *url, uint64_t size);

/* 1 and *size when GDAL's shared cache would answer url's stat through
 * /vsis3_streaming/ with a size vsitune's /vsis3/ learned; 0 otherwise
 * (GDAL's own streaming handler answers). */
int vt__stream_answer(const char *url, uint64_t *size);

/* Like vt__stream_answer, and the size is dropped: the caller makes GDAL's
 * streaming handler learn url afresh (an open: its handle takes the size
 * from GDAL's cache, which vsitune cannot set). */
int vt__stream_take(const char *url);

/* GDAL's own code wrote, deleted or renamed path (prefix: every path under
 * it; a cache clear of that prefix): GDAL set or dropped its cached
 * properties itself, so the sizes noted are dropped; the URLs stay seen. */
void vt__stream_forget(const char *path, int prefix);

/* VSICurlClearCache: GDAL's streaming handler forgets what it asked about. */
void vt__stream_clear(void);

#endif
