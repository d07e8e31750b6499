/* listxml.h: a ListBucketResult (S3's ListObjects v1 or v2 XML, which
 * GCS's XML API answers too) as a vt_list_page, for every backend that
 * lists that way. Pure, no I/O, safe on any bytes.
 *
 * vsitune lists only to answer GDAL's sibling question for files that may
 * have sidecars (listing.c): one page of the keys that start with a file's
 * stem. This module turns that XML page into entries. */
#ifndef VT_LISTXML_H
#define VT_LISTXML_H

#include <stddef.h>

#include "backends/backend.h" /* vt_list_page */
#include "base/error.h"

/* The entries of body directly in dir ("dir/sub/" or "" for the bucket
 * root), in answer order: only keys directly in it are kept (a key
 * "dir/sub/" itself, the folder marker, is skipped). On success *out owns
 * its entries (vt__list_page_clear). VT_EPROTO when body is not a
 * ListBucketResult. */
vt_err vt__listxml_parse(const char *body, size_t len, const char *dir,
                         vt_list_page *out);

#endif
