/* takeover.h: how vsitune takes over reads of /vsis3/ (takeover_install.cpp
 * installs, takeover.cpp's hooks serve).
 *
 * GDAL's own /vsis3/ handler stays installed on /vsis3/, with its type, its
 * state and all its methods, because GDAL finds it there and dynamic_casts
 * it (VSICurlClearCache, VSICurlPartialClearCache, Sync's server-side copy
 * and multipart uploads, CopyFile) and, from 3.11, owns it by shared_ptr.
 * vsitune's reader (the VSI plugin handler built from handler.c's callbacks)
 * is installed on "/vsitune/". With the takeover, the vtable pointer of GDAL's
 * handler object is replaced by a copy in which a few slots lead to vsitune:
 * read opens (but of directory-like names: a bucket, "prefix/"), stat and
 * the sibling question go to the reader; writes,
 * deletes, renames, Sync and copies run GDAL's own code and then make vsitune
 * forget the names; ClearCache and PartialClearCache run GDAL's own code and
 * then clear vsitune's metadata and blocks too. Everything else (listings,
 * metadata, signed URLs, ...) is GDAL's own code untouched. GDAL's
 * /vsis3_streaming/ handler gets the same treatment for Stat and read Open
 * only: what vsitune's /vsis3/ learned reaches it as GDAL's file-property
 * cache, shared by both, would carry it (streaming.h). */
#ifndef VT_TAKEOVER_H
#define VT_TAKEOVER_H

#include <cpl_vsi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The reader's prefix: always installed, read-only. */
#define VT_READER_PREFIX "/vsitune/"

struct vt_backend; /* backends/backend.h */

/* Install the reader for be's names on reader_prefix from cb and, when
 * takeover is set, redirect GDAL's own handler of prefix ("/vsis3/") as
 * described above (both strings static). Whether or not, GDAL's own code
 * of prefix is registered for be's VSI callbacks (stock.h: its Stat and
 * ReadDirEx; its PartialClearCache when the takeover's probe found that
 * slot, else a no-op). Up to 4 prefixes; idempotent per prefix.
 * Returns 0 on success, -1 with a CPLError when GDAL's own handler of
 * prefix is not there (GDAL built without curl) or does not have the
 * expected ABI; prefix is then left untouched. */
int vt__takeover_install(const char *prefix, const char *reader_prefix,
                         const struct vt_backend *be,
                         const VSIFilesystemPluginCallbacksStruct *cb,
                         int takeover);

/* 1 while the calling thread is inside GDAL's own code for a write, delete,
 * rename, Sync or copy: GDAL's stats of its own names then go to GDAL. */
int vt__takeover_delegating(void);

#ifdef __cplusplus
}
#endif

#endif
