/* handler_int.h: what the files of GDAL's read handler share, and nobody
 * else: the handle, and the functions one file lends the others.
 * handler.c answers stat and open and fills the callbacks; handler_io.c
 * reads through a handle and says what a failure is in GDAL's terms;
 * handler_sib.c answers the sibling question. */
#ifndef VT_HANDLER_INT_H
#define VT_HANDLER_INT_H

#include <stdint.h>

#include <cpl_vsi.h>

#include "backends/backend.h"
#include "base/error.h"
#include "read/object.h"
#include "read/planner.h"
#include "read/suspect.h"

/* One GDAL file handle: a reference on the object (NULL: stock GDAL's
 * empty handle on a missing name), a position, the sequential-read
 * detector and the read options resolved at open. Made by handler.c's
 * open, freed by handler_io.c's close. */
typedef struct vt_handle {
    const struct vt_reader *rd; /* the handler that opened it (handler.h) */
    vt_object *obj;
    uint64_t pos;
    int eof;
    vt_readahead ra;
    vt_read_opts opts;    /* the read options, resolved at open */
    vt_suspect sus;       /* blocks GDAL may fail to decode (suspect.h) */
    char *says;           /* an empty handle: the server's error its first
                             read hands GDAL (gdal_error.h), or NULL */
    int says_vsie;
} vt_handle;

/* handler_io.c. The CPLError class GDAL itself uses for a failure with HTTP
 * status (0: none) and message msg; the errno for err. */
int vt__handler_cple_for(long status, const char *msg);
int vt__handler_errno_for(vt_err err);

/* handler_io.c. GDAL is done with path, a name of be (a stat, a closed
 * handle): under CPL_VSIL_CURL_NON_CACHED, drop what GDAL's own handler
 * cached of it. */
void vt__handler_done_with(const vt_backend *be, const char *path);

/* handler_io.c. Fill the handle callbacks (tell, seek, read,
 * read_multi_range, eof, close, flush). */
void vt__handler_io_callbacks(VSIFilesystemPluginCallbacksStruct *cb);

/* handler_sib.c. The sibling answer for path, a name of be (see the
 * function): a CSL list GDAL frees, or NULL (GDAL lists if it needs to). */
char **vt__handler_siblings(const vt_backend *be, const char *path);

#endif
