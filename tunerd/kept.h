/* kept.h: settings the caller keeps, checked against the ledger.
 *
 * `tunerd exec` never overrides a variable the caller set (theirs win). But
 * a kept GDAL_CACHEMAX=1000 under a plan of 5 workers x 384 MiB silently
 * multiplies: this recomputes the ledger with the kept values and says so
 * when the total no longer fits the tier. Pure: values come in as strings. */
#ifndef VT_TUNERD_KEPT_H
#define VT_TUNERD_KEPT_H

#include <stddef.h>
#include <stdint.h>

#include "sizing.h"

/* GDAL_CACHEMAX as GDAL reads it, in MiB: "N" (N < 100000: MiB, else
 * bytes), "N%" of the tier, or "N" with a unit (KB, MB, GB, TB, with or
 * without 'i'; GDAL >= 3.11). Returns 0, or -1 when it is none of these. */
int vt_kept_cachemax_mib(const char *v, long tier_mb, long *mib);

/* A byte size as the plugin reads VSITUNE_CACHE_SIZE and
 * CPL_VSIL_CURL_CACHE_SIZE: the plugin's own parser (common/sizeparse.c:
 * digits with an optional K, M or G, and B) and range (up to
 * VT_MAX_CACHE_SIZE). Returns 0, or -1 for a value the plugin refuses. */
int vt_kept_bytes(const char *v, uint64_t *bytes);

/* Reads GDAL_CACHEMAX, the range cache variable, TUNERD_WORKERS and
 * TUNERD_THREADS through get (getenv, or a test's lookup). Where the
 * caller's values differ from the plan's and the ledger computed with them
 * is larger than the plan's, writes one line into warn (what was kept, the
 * sums) and returns 1, or 2 when it no longer fits the tier at all; else 0
 * (nothing kept, or a smaller ledger). */
int vt_kept_check(const vt_sizing_in *in, const vt_sizing *s,
                  const char *(*get)(const char *name), char *warn, size_t warnlen);

#endif
