/* listxml.h: a ListBucketResult (S3's ListObjects v1 XML, which GCS's XML
 * API answers too) as a vt_list_page, for every backend that lists that
 * way. The parser lives in backends/s3/s3list.c today; this is the one
 * door other backends reach it through, so that moving the pure parser
 * here later changes no caller. */
#ifndef VT_LISTXML_H
#define VT_LISTXML_H

#include <stddef.h>

#include "backends/backend.h"

/* The entries of body directly in dir ("a/b/" or ""), in answer order.
 * VT_EPROTO when body is not a ListBucketResult. */
vt_err vt__listxml_parse(const char *body, size_t len, const char *dir,
                         vt_list_page *out);

#endif
