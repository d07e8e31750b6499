/* statsnames.h: the names of the plugin's counters document, spelled once
 * for the program that writes it (vsiplugin/stats/stats.c) and the one that
 * reads it (tunerd/statsfile.c, and tunerd's own documents and metrics
 * built from it), so that a renamed or added field cannot reach one side
 * only. X-macros, in document order: X(name) for a numeric field (tunerd's
 * vt_stats_rec has a member of the same name), the latency bounds as
 * X(index, seconds). The layout around them (sections, "pid", "time",
 * "prefix", "process", "exited") is documented in vsiplugin/stats/stats.h.
 * Pure. */
#ifndef VT_STATSNAMES_H
#define VT_STATSNAMES_H

/* "cache": the process's range cache. */
#define VT_STATS_CACHE(X) \
    X(budget) X(retained_bytes) X(peak_retained_bytes) X(transient_bytes) \
    X(hits) X(misses) X(waits) X(evictions) X(blocks)

/* "shared": the host-wide segment, after its "path" (a string). */
#define VT_STATS_SHARED(X) \
    X(size) X(data_bytes) X(used_bytes) X(reserved_bytes) X(attached) \
    X(objects) X(hits) X(misses) X(waits) X(wait_timeouts) X(evictions) \
    X(takeovers) X(repairs)

/* "engine": the HTTP engine. */
#define VT_STATS_ENGINE(X) \
    X(requests) X(retries) X(bytes_received) X(connections) X(in_flight) \
    X(h2_responses)

/* "avoided": requests answered without being made. */
#define VT_STATS_AVOIDED(X) X(lists) X(heads)

/* "http": one object per kind of request, one count per status class. */
#define VT_STATS_HTTP_KINDS "get_range", "get", "head", "put", "post", \
    "delete", "other"
#define VT_STATS_HTTP_CLASSES "2xx", "3xx", "4xx", "5xx", "none"
#define VT_STATS_N_KINDS 7
#define VT_STATS_N_CLASSES 5

/* "backends": one object per backend (the service that built the
 * request: vt_backend's name), each with these counts, then one count per
 * status class (VT_STATS_HTTP_CLASSES). Requests made for no backend
 * (credential fetches) are only in "engine" and "http". */
#define VT_STATS_BACKEND_NAMES "s3", "gs", "az", "curl"
#define VT_STATS_N_BACKENDS 4
#define VT_STATS_BACKEND(X) \
    X(requests) X(bytes_received) X(avoided_lists) X(avoided_heads)

/* "latency": a cumulative histogram, "le_<seconds>" per bound (then
 * "le_inf", "sum_us", "count"): Prometheus's default buckets plus 30 s. */
#define VT_STATS_LAT_BOUNDS(X) \
    X(0, 0.005) X(1, 0.01) X(2, 0.025) X(3, 0.05) X(4, 0.1) X(5, 0.25) \
    X(6, 0.5) X(7, 1) X(8, 2.5) X(9, 5) X(10, 10) X(11, 30)
#define VT_STATS_N_BOUNDS 12

#endif
