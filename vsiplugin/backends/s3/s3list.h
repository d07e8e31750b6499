/* s3list.h: S3 ListObjects answers, parsed (pure, no I/O).
 *
 * vsitune lists only to answer GDAL's sibling question for files that may
 * have sidecars (listing.c): one page of the keys that start with a file's
 * stem. This module turns that XML page into entries. Safe on any bytes. */
#ifndef VT_S3LIST_H
#define VT_S3LIST_H

#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h" /* vt_list_page */
#include "base/error.h"

/* Parse a ListObjects (v1 or v2) answer. dir is the listed "directory"
 * ("dir/sub/" or "" for the bucket root): only keys directly in it are kept
 * (a key "dir/sub/" itself, the folder marker, is skipped). On success
 * *out owns its entries (vt__list_page_clear). VT_EPROTO when body is not a
 * ListBucketResult. */
vt_err vt__s3_parse_list(const char *body, size_t len, const char *dir,
                         vt_list_page *out);

#endif
