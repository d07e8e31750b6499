/* failmem.h: the last failure each object name met in this process, for
 * the wording of a failure met again only (compat/gdal_error.h's
 * vt_gdal_fail.again).
 *
 * Why: stock GDAL keeps a failed name in its cache of file properties and
 * answers the next open of it from there, without a request, in the words
 * of a remembered failure; it does so for every prefix of its curl family
 * (/vsis3/, /vsigs/, ...). vsitune keeps no failure: every open asks the
 * server again, so a healed server is read at once (docs/reliability.md).
 * When the answer is the same failure as the last one this process saw for
 * the name (same status, error and service code, or the same transport
 * error), a backend reports it as "again"; nothing here ever decides
 * whether a request is made. One bounded process-wide table shared by the
 * backends (a name is "bucket/key" and the endpoint it lives at, so two
 * services' names never meet). Thread-safe: a leaf lock held only to look
 * up or change the table. */
#ifndef VT_FAILMEM_H
#define VT_FAILMEM_H

#include "base/error.h"

/* A failure of a request answering for name ("bucket/key") itself at
 * endpoint (NULL allowed; copied): status (0: no HTTP answer), vsitune's
 * err and the service's error code (NULL or ""). Returns 1 when it is the
 * same failure as the last one remembered for the name at that endpoint,
 * 0 for a first or different one; remembers this one either way. */
int vt__failmem_note(const char *name, const char *endpoint, long status,
                     vt_err err, const char *code);

/* A request for name succeeded: its next failure is a first one (at every
 * endpoint). Lock-free when nothing is remembered. */
void vt__failmem_ok(const char *name);

/* Forget every name starting with prefix (leading '/' skipped; NULL or "":
 * all): VSICurlClearCache, VSICurlPartialClearCache and a write, as GDAL
 * forgets its cached properties. */
void vt__failmem_forget(const char *prefix);

#endif
