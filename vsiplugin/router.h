/* router.h: C view of router.cpp, the one C++ file of vsitune.
 *
 * GDAL 3.6 has no C API to keep a filesystem handler reachable once another
 * is installed on its prefix (VSIDuplicateFileSystemHandler came in 3.7), and
 * its plugin handler forwards Unlink to libc's unlink(). router.cpp therefore
 * installs a small VSIFilesystemHandler on the prefix that sends reads (read
 * opens, stat, siblings) to the vsitune plugin callbacks and everything else
 * (writes, unlink, rename, mkdir, rmdir, listings, metadata, sync) to GDAL's
 * own /vsis3/ handler, kept by pointer. */
#ifndef VT_ROUTER_H
#define VT_ROUTER_H

#include <cpl_vsi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Install the vsitune callbacks on prefix ("/vsis3/" for the takeover,
 * another prefix otherwise), delegating non-read operations to GDAL's own
 * /vsis3/ handler. Idempotent per prefix. Returns 0 on success, -1 with a
 * CPLError when GDAL's own handler cannot be found. */
int vt__router_install(const char *prefix,
                       const VSIFilesystemPluginCallbacksStruct *cb);

/* Register a GDAL driver named name with no open function, so the plugin
 * shows in `gdalinfo --formats`, and whose unload hook (run by GDALDestroy)
 * calls on_unload. */
void vt__router_register_driver(const char *name, const char *prefix,
                                const char *version, void (*on_unload)(void));

/* GDAL's own /vsis3/ handler, for operations vsitune does not do itself.
 * path is "bucket/key" (no prefix). */
int vt__stock_stat(const char *path, VSIStatBufL *st, int flags);
char **vt__stock_read_dir(const char *path, int max_files);

#ifdef __cplusplus
}
#endif

#endif
