/* statsfile.h: the plugin's published counters (vsitune-<pid>.json) as a
 * struct.
 *
 * The plugin (vsiplugin/stats/stats.c, whose header documents the document)
 * rewrites <VSITUNE_STATS_DIR>/vsitune-<pid>.json while it reads and at
 * exit; `tunerd stats` and `tunerd watch` read those files, including the
 * ones left behind by processes the OOM killer took. This is the one parser
 * for that document: bounded (VT_STATS_FILE_MAX bytes, nesting depth 3,
 * keys of at most 31 bytes), no allocation, no I/O, so it can be fuzzed.
 * It takes exactly the plugin's shape: one JSON object with "pid", "time",
 * "cache" {...} and "engine" {...} of unsigned whole numbers, the optional
 * sections "http", "latency", "avoided", "backends", "process" and "shared" (a plugin older than
 * them does not write them; a section that is there must be complete), and
 * the optional "exited" (true in the exit dump). Unknown keys holding
 * numbers, booleans, plain strings or objects of those are skipped, so a
 * newer plugin's extra counter does not make every file unreadable. */
#ifndef VT_TUNERD_STATSFILE_H
#define VT_TUNERD_STATSFILE_H

#include <stddef.h>
#include <stdint.h>

#define VT_STATS_FILE_MAX 8192 /* the plugin's document is ~1.8 KB */

/* Request kinds and status classes of the "http" section, in the plugin's
 * order; and the latency histogram's upper bounds (seconds; the last bucket
 * is +Inf). */
#include "statsnames.h" /* the document's names, shared with the plugin */

#define VT_HTTP_KINDS VT_STATS_N_KINDS
#define VT_HTTP_CLASSES VT_STATS_N_CLASSES
#define VT_LAT_BOUNDS VT_STATS_N_BOUNDS
extern const char *const vt_http_kind_names[VT_HTTP_KINDS];   /* "get_range", ... */
extern const char *const vt_http_class_names[VT_HTTP_CLASSES]; /* "2xx" .. "none" */
extern const char *const vt_lat_bound_text[VT_LAT_BOUNDS];     /* "0.005", ... "30" */
#define VT_BACKENDS VT_STATS_N_BACKENDS
extern const char *const vt_backend_names[VT_BACKENDS];        /* "s3", "gs", "az", "curl" */

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
    struct {
        int present;
        uint64_t n[VT_HTTP_KINDS][VT_HTTP_CLASSES]; /* attempts by kind, status class */
    } http;
    struct {
        int present;
        uint64_t le[VT_LAT_BOUNDS + 1]; /* cumulative; [VT_LAT_BOUNDS] is +Inf == count */
        uint64_t sum_us, count;
    } latency;
    struct {
        int present;
        uint64_t lists, heads;
    } avoided;
    struct {                 /* the same by the backend whose request it was */
        int present;         /* (absent: a plugin older than the section) */
        struct vt_stats_be {
            uint64_t requests, bytes_received, avoided_lists, avoided_heads;
            uint64_t status[VT_HTTP_CLASSES]; /* attempts by status class */
        } b[VT_BACKENDS];    /* in vt_backend_names' order */
    } backends;
    struct {
        int present;
        uint64_t ppid;
        int forked;          /* a fork() child of a process that loaded the plugin */
        int has_oom;         /* oom_kills and oom_file were written */
        uint64_t oom_kills;  /* its cgroup's oom_kill count when written */
        char oom_file[256];  /* the file that count came from */
    } process;
    struct {                 /* the host-wide shared cache, if used: the same */
        int present;         /* in every attached process's file */
        char path[256];      /* the segment (count each path once) */
        uint64_t size, data_bytes, used_bytes, reserved_bytes, attached, objects;
        uint64_t hits, misses, waits, wait_timeouts, evictions, takeovers, repairs;
    } shared;
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
