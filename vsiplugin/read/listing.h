/* listing.h: stem-scoped listings, for GDAL's sibling question and stats.
 *
 * When GDAL asks which files lie beside a dataset (to find .aux.xml, .ovr,
 * .msk, world files, .prj, ...), stock GDAL lists the whole directory. For a
 * file that may have sidecars, vsitune lists only the keys that start with
 * the file's stem (its name up to the first '.' or '_': "x" for "x.tif",
 * covering x.tif.ovr, x.tfw, x_rpc.txt, x.aux.xml), one page of up to 1000,
 * and remembers the answer for VSITUNE_METADATA_TTL. A later stat() of a
 * name the listing covers is answered from it without a request.
 *
 * Thread-safe: one leaf mutex, never held across I/O; concurrent requests
 * for the same listing issue one LIST. */
#ifndef VT_LISTING_H
#define VT_LISTING_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "backends/backend.h" /* vt_list_page */

typedef struct vt_listing vt_listing;

/* The stem of a file's basename ("x" for "x.tif.ovr"): the length of its
 * leading part before the first '.' or '_' after the first character (the
 * whole name when there is none). Pure. */
size_t vt__listing_stem_len(const char *basename);

/* The functions that take be: path is a name of the service be (the
 * backend the calling handler serves), whose endpoint keys the listing and
 * which LISTs it.
 *
 * The listing covering path "bucket/dir/name": from memory if fresh, else
 * one LIST. On success *out holds a reference (vt__listing_release). */
vt_err vt__listing_get(const vt_backend *be, const char *path,
                       vt_listing **out, char *errbuf, size_t errlen);
void vt__listing_release(vt_listing *l);

/* The listing of a whole directory dirpath ("bucket/dir"; "bucket" for the
 * root): one page of at most max_keys (<= 1000), as stock GDAL lists a
 * file's directory on open (1000) or a name's "name/" in stat (100). */
vt_err vt__listing_get_dir(const vt_backend *be, const char *dirpath,
                           int max_keys, vt_listing **out, char *errbuf,
                           size_t errlen);

/* 1 and *out (name/etag NULL) when the listing holds name (a basename). */
int vt__listing_find(const vt_listing *l, const char *name,
                     vt_list_entry *out);

/* 1 when the listing holds name ignoring case (ASCII). */
int vt__listing_find_ci(const vt_listing *l, const char *name);

/* Entries (names relative to the directory) and whether the page was cut. */
size_t vt__listing_count(const vt_listing *l);
const vt_list_entry *vt__listing_entry(const vt_listing *l, size_t i);
int vt__listing_truncated(const vt_listing *l);

/* 1 when the listed directory's own key ("dir/", an empty folder's marker)
 * came back: the directory exists even with no entry. */
int vt__listing_has_marker(const vt_listing *l);

/* What a fresh, complete listing already in memory says of path, without a
 * request: 1 present (*out filled: size, mtime, is_dir; name/etag NULL),
 * 0 absent, -1 no listing covers it. */
int vt__listing_lookup(const vt_backend *be, const char *path,
                       vt_list_entry *out);

/* vt__listing_lookup, and when a listing answers (0 or 1), *entries (if
 * not NULL) is how many entries that listing holds: an absent name in an
 * empty page says nothing of the directory's other keys. */
int vt__listing_lookup_n(const vt_backend *be, const char *path,
                         vt_list_entry *out, size_t *entries);

/* 1 when a fresh listing of path's directory (of any stem, or the whole
 * directory; not a COG's "no sidecars") is in memory: a driver probing
 * names there (other stems, other cases) is likely to probe more. */
int vt__listing_dir_held(const vt_backend *be, const char *path);

/* GDAL's own listing of directory dirpath ("bucket/dir"), names as its
 * ReadDirEx returned them through the router (complete: not cut at a
 * limit). Remembered for VSITUNE_METADATA_TTL as the answer stock GDAL
 * gives to the sibling question of any file there (GDALOpenInfo lists the
 * directory, or reuses that listing), so such a file costs no stem LIST.
 * Not used for stat: it has no sizes. */
void vt__listing_remember_names(const vt_backend *be, const char *dirpath,
                                char **names);

/* A copy (malloc'd, NULL-terminated; free each and the array) of such a
 * listing of path's directory while fresh, when it holds at most max_names
 * (0: any number); else NULL. */
char **vt__listing_names_of_dir(const vt_backend *be, const char *path,
                                size_t max_names);

/* What such a listing of path's directory says of path: 1 listed, 0 not
 * (GDAL's Stat then answers "absent" without a request), -1 none held. */
int vt__listing_in_gdal_dir(const vt_backend *be, const char *path);

/* A COG answered "no sidecars" (handler.c): remember it as a listing of
 * the file alone, covering its own name (size, Last-Modified) and names
 * starting with it and '.' (x.tif.aux.xml, x.tif.vat.dbf, ...), absent. So
 * GDAL's later probes of its sidecars cost no request, as the sibling
 * answer already said, on every GDAL release's probing path. */
void vt__listing_remember_no_sidecars(const vt_backend *be, const char *path,
                                      uint64_t size, long long mtime);

/* Forget the listings that cover path, or everything under prefix
 * ("" for all): the name was written, deleted or renamed, or GDAL's caches
 * were cleared. */
void vt__listing_forget(const char *path);
void vt__listing_forget_prefix(const char *prefix);

#endif
