/* breq.h: building a vt_backend_req (backend.h), the parts every service's
 * request shares: header lines appended to a sized list, the engine's
 * fields of a ranged GET or a listing, the CA file, and release. A
 * backend builds its URL and its own headers, then finishes with these. */
#ifndef VT_BREQ_H
#define VT_BREQ_H

#include <stdint.h>

#include "backends/backend.h"

/* Append "name: value" to r->headers (sized by the caller, kept
 * NULL-terminated); *n counts the lines. VT_EINVAL (nothing added) when
 * name or value holds a CR or LF: it would smuggle in another header. */
vt_err vt__breq_add(vt_backend_req *r, size_t *n, const char *name,
                    const char *value);

/* Fill r->req from r->url and r->headers for a request of path's object:
 * method, the range length len (0: whole object, the engine's default body
 * bound; else room for the range or an XML error body), GDAL's retry
 * options, the CA file stock GDAL verifies that request with (a read,
 * or a listing when listing is 1: config.h "CA bundle"), and path as the
 * path the engine reads the request's other HTTP options for (copied). */
void vt__breq_finish(vt_backend_req *r, const char *method, uint64_t len,
                     const char *path, int listing);

void vt__breq_clear(vt_backend_req *r);

#endif
