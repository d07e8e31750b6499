/* az_int.h: what the Azure backend's files share (backends/az/ only).
 *
 * az.c builds, signs and sends the requests and keeps the last failure;
 * az_list.c parses List Blobs answers. */
#ifndef VT_AZ_INT_H
#define VT_AZ_INT_H

#include <stddef.h>

#include "backends/backend.h"
#include "base/error.h"

/* An EnumerationResults answer (List Blobs, delimiter "/") as the entries
 * directly in dir ("a/b/" or ""), in answer order: Blob (Name,
 * Properties/Content-Length, Last-Modified, Etag, quoted here as the GET's
 * ETag header is) and BlobPrefix (a folder); truncated when NextMarker is
 * not empty. VT_EPROTO when body is not one. Input from the network:
 * every scan is bounded by len. */
vt_err vt__az_parse_list(const char *body, size_t len, const char *dir,
                         vt_list_page *out);

/* "Wed, 02 Dec 2026 04:06:14 GMT" as Unix time; 0 when malformed. */
long long vt__az_parse_http_date(const char *s);

#endif
