/* statsfile.h: the plugin's published counters (vsitune-<pid>.json) as a
 * struct.
 *
 * The plugin (vsiplugin/stats.c) rewrites <VSITUNE_STATS_DIR>/vsitune-<pid>.json
 * while it reads and at exit; `tunerd stats` and `tunerd watch` read those
 * files, including the ones left behind by processes the OOM killer took.
 * This is the one parser for that document: bounded (VT_STATS_FILE_MAX
 * bytes, nesting depth 3, keys of at most 31 bytes), no allocation, no I/O,
 * so it can be fuzzed. It takes exactly the plugin's shape: one JSON object
 * with "pid", "time", "cache" {...} and "engine" {...} of unsigned whole
 * numbers, plus the optional "exited" (true in the exit dump). Unknown keys
 * holding numbers, booleans or objects of those are skipped, so a newer
 * plugin's extra counter does not make every file unreadable. */
#ifndef VT_TUNERD_STATSFILE_H
#define VT_TUNERD_STATSFILE_H

#include <stddef.h>
#include <stdint.h>

#define VT_STATS_FILE_MAX 4096 /* the plugin's document is ~450 bytes */

typedef struct vt_stats_rec {
    uint64_t pid;
    uint64_t time;          /* unix seconds when the counters were written */
    int exited;             /* 1: written by the exit dump; 0: while running;
                             * -1: the file does not say (older plugin) */
    struct {
        uint64_t budget, retained_bytes, peak_retained_bytes, transient_bytes;
        uint64_t hits, misses, waits, evictions, blocks;
    } cache;
    struct {
        uint64_t requests, retries, bytes_received, connections, in_flight;
        uint64_t h2_responses;
    } engine;
} vt_stats_rec;

/* Parses len bytes of text (need not be NUL-terminated; a NUL inside is an
 * error) into *out (always initialised). Returns 0, or -1 with one line in
 * err saying what is wrong and at which byte ("truncated at byte 120",
 * "engine.requests: number too large", "missing cache.hits"). */
int vt_stats_parse(const char *text, size_t len, vt_stats_rec *out, char *err,
                   size_t errlen);

/* hits + waits over all lookups (a wait joined another thread's fetch, so it
 * cost no request of its own); -1 when there were no lookups. */
double vt_stats_hit_ratio(const vt_stats_rec *r);

#endif
