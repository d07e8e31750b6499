/* handler.h: the GDAL VSI plugin callbacks of vsitune (read side).
 *
 * handler.c is the GDAL boundary of the read path: it turns GDAL's calls
 * (stat, open, read, read_multi_range, seek, tell, eof, close, siblings)
 * into object.c calls, and vt_err values into CPLError messages and errno.
 * Everything that is not a read goes to GDAL's own S3 handler (takeover.cpp). */
#ifndef VT_HANDLER_H
#define VT_HANDLER_H

#include <cpl_vsi.h>

#include "backends/backend.h"

/* One installed handler: the service whose names its prefix takes, and the
 * prefix its path-specific options are looked up under (config.h's
 * vt__cfg_scope_prefix; NULL: the process prefix, vt__cfg_set_prefix). */
typedef struct vt_reader {
    const vt_backend *be;
    const char *cfg_prefix;
} vt_reader;

/* Fill the callbacks of a struct from VSIAllocFilesystemPluginCallbacksStruct
 * for a handler serving be's names (for /vsis3/, vt__backend_s3), options
 * under cfg_prefix (a static string or NULL, as vt_reader's); its pUserData
 * is that handler's vt_reader, one per backend (filling for the same backend
 * again replaces its cfg_prefix). Call before GDAL calls any of them, from
 * one thread. 0, or -1 when 8 backends are already served. */
int vt__handler_fill_callbacks(VSIFilesystemPluginCallbacksStruct *cb,
                               const vt_backend *be, const char *cfg_prefix);

/* 1 when this thread's last stat asked the service about its name (a GET),
 * 0 when it answered from what was known (a listing GDAL or vsitune holds
 * says absent, a name GDAL's rules refuse). takeover.cpp: a /vsicurl/ miss
 * GDAL answers only after vsitune asked, as its own listing answers the rest. */
int vt__handler_stat_asked(void);

/* 1 and *st when vsitune (or GDAL's own cache) already knows path
 * ("bucket/key", a name of be), without a request; else 0. For GDAL's own code's stats of
 * its names while it writes or deletes (takeover.cpp). */
int vt__handler_stat_known(const vt_backend *be, const char *path,
                           VSIStatBufL *st);

/* GDAL's own ReadDirEx(path "bucket/dir", max_files) just answered names
 * (takeover.cpp): a complete listing is kept as the sibling answer of the
 * files there, the answer stock GDAL's open gives from it (listing.h). */
void vt__handler_note_read_dir(const vt_backend *be, const char *path,
                               char **names, int max_files);

/* The next opens on this thread ask for no VSI error (no_error 1: GDAL's
 * Open with bSetError false) or do (0, the default). takeover.cpp says so
 * before each open it hands vsitune: GDAL words a failure by it. */
void vt__handler_open_asks_no_error(int no_error);

/* Why the last failed open of this thread failed (bucket, key, status, S3
 * code and message), or NULL; *cple_class gets the CPLE_ class to report it
 * with (CPLE_AWSSignatureDoesNotMatch, CPLE_AWSObjectNotFound, ...). */
const char *vt__handler_open_error(int *cple_class);

#endif
