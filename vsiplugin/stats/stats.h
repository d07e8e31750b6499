/* stats.h: vsitune's counters as one JSON document.
 *
 * Three ways out:
 * - live, in the process: the VSITUNE driver's metadata item "STATS"
 *   (gdal.GetDriverByName("VSITUNE").GetMetadataItem("STATS"));
 * - published for other processes: with VSITUNE_STATS_DIR set, the file
 *   <dir>/vsitune-<pid>.json is rewritten (atomically, by rename) at most once
 *   a second while the process reads, and at exit (a fork() child, whose
 *   plugin was loaded before the fork or after it, after every read and
 *   every finished request instead: it leaves through _exit()); `tunerd stats` and
 *   `tunerd watch` read it. A process killed by the OOM killer leaves its
 *   last counters behind, which is the point; the exit dump's document
 *   says "exited": true, so a reader can tell a clean exit from a kill;
 * - at exit, to the file named by VSITUNE_STATS_FILE.
 *
 * The document (the reader is tunerd/statsfile.c; the names of both come
 * from common/statsnames.h):
 *   {"pid", "time",
 *    "prefix"   the prefix vsitune serves ("/vsis3/" when it took GDAL's
 *               /vsis3/ over, else "/vsitune/"): which reader served it,
 *    "cache": {budget, retained_bytes, peak_retained_bytes, transient_bytes,
 *              hits, misses, waits, evictions, blocks},
 *    "shared": {path, size, data_bytes, used_bytes, reserved_bytes, attached,
 *               objects, hits, misses, waits, wait_timeouts, evictions,
 *               takeovers, repairs}   only with the shared cache: the
 *              host's segment, the same in every attached process's file
 *              (count it once, by path; "cache" is then this process's
 *              lookups, with nothing retained privately),
 *    "engine": {requests, retries, bytes_received, connections, in_flight,
 *               h2_responses},
 *    "http": {<kind>: {"2xx", "3xx", "4xx", "5xx", "none"}},  kinds below
 *    "latency": {"le_0.005", ..., "le_inf" (cumulative), "sum_us", "count"},
 *    "avoided": {"lists", "heads"},
 *    "backends": {<backend>: {requests, bytes_received, avoided_lists,
 *                 avoided_heads, "2xx", "3xx", "4xx", "5xx", "none"}}
 *               the same counts by the backend whose request it was
 *               ("s3", "gs", "az", "curl": every one, always); a credential
 *               fetch is no backend's (in "engine" and "http" only),
 *    "process": {"ppid", "forked", ["oom_kills", "oom_file"]},
 *    "exited"}
 * Only objects of whole numbers, booleans and plain strings, at most three
 * levels deep, so readers that predate a section skip it. Every counter
 * describes this process: a fork() child starts from zero (the cache's
 * counters from their value at the fork). */
#ifndef VT_STATS_H
#define VT_STATS_H

#include <stddef.h>

#include "http/engine.h" /* vt_http_attempt */

/* Large enough for the whole document (about 1.8 KB; 2.6 KB with the
 * "shared" section and a long "oom_file"). */
#define VT_STATS_JSON_MAX 4096

/* Write the JSON document into buf (always NUL-terminated). Returns the
 * length it needed (like snprintf). Thread-safe. */
size_t vt__stats_json(char *buf, size_t len);

/* Arrange for the exit dump (idempotent). */
void vt__stats_install_exit_dump(void);

/* Publish to VSITUNE_STATS_DIR if it is set and the last publication is at
 * least a second old. Cheap when unset. Any thread; never blocks on a lock
 * held across I/O. */
void vt__stats_tick(void);

/* Called by the engine's I/O thread on each turn of its loop (at least once
 * a second): publishes to VSITUNE_STATS_DIR when requests finished since the
 * last publication and that is at least a second old, so the file of a
 * process that stopped reading holds all its requests. One atomic load when
 * nothing is pending; reads no GDAL option. */
void vt__stats_idle(void);

/* One finished HTTP attempt (each retry is one): its method, whether it
 * carried a Range header, the status the server answered (0: none, a
 * transport failure), how long it took from sending to the end, the body
 * bytes and the backend it is counted under (engine.h). Called by the
 * engine's I/O thread; lock-free (atomics). */
void vt__stats_attempt(const vt_http_attempt *a);

/* Requests vsitune did not need where stock GDAL sends one. */
typedef enum vt_stats_avoided {
    VT_AVOIDED_LIST = 0, /* a sibling-files question answered without listing */
    VT_AVOIDED_HEAD = 1  /* an object's size taken from its first range GET */
} vt_stats_avoided;

/* backend: the name of the backend that avoided it (vt_backend's name),
 * or NULL: the process's count only. */
void vt__stats_avoided(const char *backend, vt_stats_avoided what);

/* Where the counters find the process's block cache: the layer that owns
 * it (object.c's vt__object_cache) is above this file, so it is registered
 * here, once, before the first read (plugin.c, at registration). The getter
 * creates the cache on first use and is called from any thread, with no
 * stats lock held. Nothing registered: the document's cache figures are 0
 * and it has no "shared" section. */
struct vt_cache;
void vt__stats_set_cache_source(struct vt_cache *(*get)(void));

#endif
