/* policy.h: what vsitune decides from names, options and header bytes.
 *
 * Pure: options come in as strings, bytes as buffers. GDAL's own rules are
 * reproduced exactly where vsitune must answer as stock GDAL does
 * (CPL_VSIL_CURL_ALLOWED_FILENAME / _EXTENSIONS); the one rule of its own is
 * the COG test that lets a COG be opened without any sidecar lookup. */
#ifndef VT_POLICY_H
#define VT_POLICY_H

#include <stddef.h>

/* Stock GDAL's IsAllowedFilename: with allowed_filename set (option
 * CPL_VSIL_CURL_ALLOWED_FILENAME) only that exact name exists; with
 * allowed_exts set (CPL_VSIL_CURL_ALLOWED_EXTENSIONS, separated by ',' or
 * ' '; "{noext}" for a last component without '.') only names ending so
 * (case-insensitively, any "?query" ignored); otherwise every name. name is
 * the full GDAL name ("/vsis3/b/k.tif"). */
int vt__policy_allowed_name(const char *name, const char *allowed_filename,
                            const char *allowed_exts);

/* 1 when buf (the first n bytes of a file) is a TIFF or BigTIFF whose GDAL
 * structural metadata says COG layout: LAYOUT=IFDS_BEFORE_DATA,
 * BLOCK_ORDER=ROW_MAJOR, BLOCK_LEADER=SIZE_AS_UINT4,
 * BLOCK_TRAILER=LAST_4_BYTES_REPEATED and not KNOWN_INCOMPATIBLE_EDITION=YES
 * (what GDAL reports as LAYOUT=COG). */
int vt__policy_is_cog(const unsigned char *buf, size_t n);

/* 1 when the name is a directory-like path ("bucket", "bucket/",
 * "bucket/prefix/"): such stats are delegated, never answered here. */
int vt__policy_is_dir_like(const char *path);

/* 1 when vsitune may run under the GDAL whose GDAL_VERSION_NUM is
 * `runtime` (e.g. 3060200): the same major.minor as the headers it was built
 * against (takeover.cpp depends on GDAL's C++ ABI), and at least 3.6. */
int vt__policy_gdal_supported(int runtime, int built_major, int built_minor);

/* 1 when GDAL's AutoSkipDrivers would unload the driver `name` for these
 * values of GDAL_SKIP and OGR_SKIP (either may be NULL): GDAL_SKIP is split
 * on ',' when it holds one, else on ' '; OGR_SKIP on ','; empty items are
 * dropped, the others kept as they are (" X" is not "X") and compared with
 * the name case-insensitively, as GDALGetDriverByName does. */
int vt__policy_skipped(const char *gdal_skip, const char *ogr_skip,
                       const char *name);

#endif
