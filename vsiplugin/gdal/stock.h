/* stock.h: GDAL's own handler of a prefix vsitune serves (/vsis3/, ...),
 * as the VSI callbacks reach it (stock.c).
 *
 * handler.c answers reads itself and asks GDAL's own handler what it does
 * not answer: a directory's stat, a listing, and to drop what GDAL cached of
 * a name. It reaches that handler only through the functions registered
 * here; takeover_install.cpp, which holds GDAL's handler object and its
 * original vtable, registers them at install time (nghttp2's session
 * callbacks: the lower layer never names the upper one). So handler.c has no
 * link-time dependency on the takeover, and a test can register fakes.
 *
 * Per backend: the calls registered for a backend (its GDAL prefix's
 * handler) answer for its names; a backend without its own gets the default
 * set (vt__stock_set_callbacks).
 *
 * Names: path is "bucket/key" (no prefix). Thread: register before the
 * first I/O (vt__takeover_install does, at registration); the calls below
 * may run on any thread, lock-free. */
#ifndef VT_STOCK_H
#define VT_STOCK_H

#include <cpl_vsi.h>

/* What GDAL's own /vsis3/ handler does for a path. Each member may be NULL
 * (that question then fails as below).
 *   stat           GDAL's own Stat("/vsis3/" + path): its HEAD, its
 *                  directory detection; 0 and *st, or -1
 *   read_dir       GDAL's own ReadDirEx: a CSL list the caller frees, or NULL
 *   partial_clear  GDAL's own PartialClearCache("/vsis3/" + path): what it
 *                  cached of names starting with path is dropped */
typedef struct vt_stock_callbacks {
    int (*stat)(const char *path, VSIStatBufL *st, int flags);
    char **(*read_dir)(const char *path, int max_files);
    void (*partial_clear)(const char *path);
} vt_stock_callbacks;

struct vt_backend; /* backends/backend.h */

/* Register cb (copied; NULL: none) as the default, for every backend
 * without calls of its own. Thread-safe. */
void vt__stock_set_callbacks(const vt_stock_callbacks *cb);

/* Register cb (copied; NULL: none) for be's names only (at most 7
 * backends). Thread-safe. */
void vt__stock_set_callbacks_for(const struct vt_backend *be,
                                 const vt_stock_callbacks *cb);

/* The calls registered for be (else the default). With nothing registered:
 * vt__stock_stat fails (-1, errno ENOENT), vt__stock_read_dir returns NULL,
 * vt__stock_partial_clear does nothing; as when GDAL has no handler of its
 * own for that prefix. */
int vt__stock_stat(const struct vt_backend *be, const char *path,
                   VSIStatBufL *st, int flags);
char **vt__stock_read_dir(const struct vt_backend *be, const char *path,
                          int max_files);
void vt__stock_partial_clear(const struct vt_backend *be, const char *path);

#endif
