/* prom.c: Prometheus text exposition (prom.h).
 *
 * One function per kind of family; each writes its HELP and TYPE lines and
 * then one sample per process that has the value, so a family's samples are
 * contiguous as the format requires. Numbers are whole (counters, bytes) or
 * printed with %.17g (seconds), which Prometheus parses exactly. */
#include "prom.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t (*rec_get)(const vt_stats_rec *r);

/* One family: its name, TYPE, HELP text and a counters file's value: the
 * uint64_t at off in vt_stats_rec, or what get computes when it is set. */
typedef struct fam {
    const char *name, *type, *help;
    size_t off;
    rec_get get;
} fam;

/* A family's value: the record's field at off (AT), or computed (BY). */
#define AT(member) offsetof(vt_stats_rec, member), NULL
#define BY(fn) 0, fn

static uint64_t value(const fam *fm, const vt_stats_rec *r)
{
    uint64_t v;

    if (fm->get)
        return fm->get(r);
    memcpy(&v, (const char *)r + fm->off, sizeof v);
    return v;
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample per readable counters file. */
static void per_rec(FILE *f, const vt_prom_in *in, const fam *fm)
{
    head(f, fm->name, fm->type, fm->help);
    for (int i = 0; i < in->n_stats; i++)
        if (in->stats[i].ok)
            fprintf(f, "%s{pid=\"%llu\"} %llu\n", fm->name,
                    (unsigned long long)in->stats[i].rec.pid,
                    (unsigned long long)value(fm, &in->stats[i].rec));
}

/* A process on the shared cache keeps nothing privately (its own budget is 0):
 * what it may fill is the segment's room for blocks, which it shares. */
static uint64_t g_budget(const vt_stats_rec *r)
{
    return r->shared.present && !r->cache.budget ? r->shared.data_bytes : r->cache.budget;
}

/* The families with one sample per readable counters file, in their order. */
static const fam per_process[] = {
    {"vsitune_retries_total", "counter",
     "Requests sent again after a transient failure.", AT(engine.retries)},
    {"vsitune_received_bytes_total", "counter",
     "Response body bytes received.", AT(engine.bytes_received)},
    {"vsitune_connections_opened_total", "counter",
     "Connections opened (TCP, with TLS where used).", AT(engine.connections)},
    {"vsitune_requests_in_flight", "gauge",
     "Requests sent and not yet answered.", AT(engine.in_flight)},
    {"vsitune_h2_responses_total", "counter",
     "Answers received over HTTP/2.", AT(engine.h2_responses)},
    {"vsitune_coalesced_waits_total", "counter",
     "Block reads that waited for another thread's request for the same bytes "
     "instead of sending their own.", AT(cache.waits)},
    {"vsitune_cache_hits_total", "counter",
     "Block reads served from the range cache.", AT(cache.hits)},
    {"vsitune_cache_misses_total", "counter",
     "Block reads that needed a request.", AT(cache.misses)},
    {"vsitune_cache_evictions_total", "counter",
     "Blocks dropped from the range cache to stay within its budget.", AT(cache.evictions)},
    {"vsitune_cache_held_bytes", "gauge",
     "Bytes the range cache holds.", AT(cache.retained_bytes)},
    {"vsitune_cache_peak_held_bytes", "gauge",
     "The most bytes the range cache has held.", AT(cache.peak_retained_bytes)},
    {"vsitune_cache_budget_bytes", "gauge",
     "The range cache's budget (VSITUNE_CACHE_SIZE); for a process on the shared "
     "cache, the shared segment's room for blocks, which it shares with the "
     "other attached processes (do not add these up).", BY(g_budget)},
};

/* The last of the per-file families. */
static const fam stamp = {"vsitune_counters_timestamp_seconds", "gauge",
                          "When the process last wrote its counters (unix time).", AT(time)};

/* The shared-cache families, one sample per segment: those before the hit
 * ratio, then the rest. */
static const fam seg_sizes[] = {
    {"vsitune_shared_cache_size_bytes", "gauge",
     "Size of the host's shared cache segment (VSITUNE_SHARED_CACHE_SIZE, "
     "fitted to /dev/shm).", AT(shared.size)},
    {"vsitune_shared_cache_block_bytes", "gauge",
     "The segment's room for blocks (its size less the index).", AT(shared.data_bytes)},
    {"vsitune_shared_cache_used_bytes", "gauge",
     "Bytes of blocks the shared cache holds.", AT(shared.used_bytes)},
    {"vsitune_shared_cache_hits_total", "counter",
     "Block lookups served from the shared cache, all processes.", AT(shared.hits)},
    {"vsitune_shared_cache_waits_total", "counter",
     "Block lookups that waited for another process's fetch of the block.",
     AT(shared.waits)},
    {"vsitune_shared_cache_misses_total", "counter",
     "Block lookups that needed a fetch, all processes.", AT(shared.misses)},
};
static const fam seg_rest[] = {
    {"vsitune_shared_cache_evictions_total", "counter",
     "Blocks dropped from the shared cache to stay within its size.",
     AT(shared.evictions)},
    {"vsitune_shared_cache_attached_processes", "gauge",
     "Processes attached to the segment.", AT(shared.attached)},
    {"vsitune_shared_cache_objects", "gauge",
     "Objects the segment knows.", AT(shared.objects)},
};

/* A family of requests by row (kind, or backend: label) and status class:
 * every row of every file that has the section (by_backend: "backends",
 * else "http"). */
static void by_class(FILE *f, const vt_prom_in *in, const char *name, const char *help,
                     const char *label, int by_backend)
{
    int rows = by_backend ? VT_BACKENDS : VT_HTTP_KINDS;

    head(f, name, "counter", help);
    for (int i = 0; i < in->n_stats; i++) {
        const vt_stats_rec *r = &in->stats[i].rec;
        if (!in->stats[i].ok || !(by_backend ? r->backends.present : r->http.present))
            continue;
        for (int k = 0; k < rows; k++)
            for (int c = 0; c < VT_HTTP_CLASSES; c++)
                fprintf(f, "%s{pid=\"%llu\",%s=\"%s\",status_class=\"%s\"} %llu\n", name,
                        (unsigned long long)r->pid, label,
                        by_backend ? vt_backend_names[k] : vt_http_kind_names[k],
                        vt_http_class_names[c],
                        (unsigned long long)(by_backend ? r->backends.b[k].status[c]
                                                        : r->http.n[k][c]));
    }
}

static void requests(FILE *f, const vt_prom_in *in)
{
    by_class(f, in, "vsitune_requests_total", "HTTP requests vsitune sent (each retry is "
             "one), by kind (get_range, get, head, put, post, delete, other) and the status "
             "class of the answer (none: no answer, a transport failure).", "kind", 0);
}

static void latency(FILE *f, const vt_prom_in *in)
{
    const char *name = "vsitune_request_duration_seconds";

    head(f, name, "histogram", "Time from sending an HTTP request (each attempt) to the "
         "end of its answer.");
    for (int i = 0; i < in->n_stats; i++) {
        const vt_stats_rec *r = &in->stats[i].rec;
        unsigned long long pid = (unsigned long long)r->pid;
        if (!in->stats[i].ok || !r->latency.present)
            continue;
        for (int b = 0; b < VT_LAT_BOUNDS; b++)
            fprintf(f, "%s_bucket{pid=\"%llu\",le=\"%s\"} %llu\n", name, pid,
                    vt_lat_bound_text[b], (unsigned long long)r->latency.le[b]);
        fprintf(f, "%s_bucket{pid=\"%llu\",le=\"+Inf\"} %llu\n", name, pid,
                (unsigned long long)r->latency.le[VT_LAT_BOUNDS]);
        fprintf(f, "%s_sum{pid=\"%llu\"} %.6f\n", name, pid, (double)r->latency.sum_us / 1e6);
        fprintf(f, "%s_count{pid=\"%llu\"} %llu\n", name, pid,
                (unsigned long long)r->latency.count);
    }
}

static void avoided(FILE *f, const vt_prom_in *in, int heads)
{
    const char *name = heads ? "vsitune_heads_avoided_total" : "vsitune_lists_avoided_total";

    head(f, name, "counter", heads
         ? "Objects whose size came with their first range GET, where stock GDAL sends a HEAD "
           "(or takes it from a LIST)."
         : "Sibling-file questions answered without listing the prefix, where stock GDAL "
           "sends a LIST (unless its directory cache holds the prefix).");
    for (int i = 0; i < in->n_stats; i++) {
        const vt_stats_rec *r = &in->stats[i].rec;
        if (in->stats[i].ok && r->avoided.present)
            fprintf(f, "%s{pid=\"%llu\"} %llu\n", name, (unsigned long long)r->pid,
                    (unsigned long long)(heads ? r->avoided.heads : r->avoided.lists));
    }
}

/* The same by backend (label `backend`: s3, gs, az, curl, vsitune's
 * backends for /vsis3/, /vsigs/, /vsiaz/, /vsicurl/): one sample per
 * process and backend, from files that have the section. */
typedef struct be_fam {
    const char *name, *help;
    size_t off; /* of the uint64_t in one backend's counts */
} be_fam;

#define BE_AT(member) offsetof(struct vt_stats_be, member)
static const be_fam be_fams[] = {
    {"vsitune_backend_received_bytes_total",
     "Response body bytes received, by the backend whose request it was.",
     BE_AT(bytes_received)},
    {"vsitune_backend_lists_avoided_total",
     "vsitune_lists_avoided_total by the backend that answered without a LIST.",
     BE_AT(avoided_lists)},
    {"vsitune_backend_heads_avoided_total",
     "vsitune_heads_avoided_total by the backend that sized the object from its "
     "first range GET.", BE_AT(avoided_heads)},
};

static void backend_requests(FILE *f, const vt_prom_in *in)
{
    by_class(f, in, "vsitune_backend_requests_total", "HTTP requests vsitune sent (each "
             "retry is one) by the backend whose request it was (s3, gs, az, curl: /vsis3/, "
             "/vsigs/, /vsiaz/, /vsicurl/) and the status class of the answer; credential "
             "fetches are no backend's.", "backend", 1);
}

static void backend_fam(FILE *f, const vt_prom_in *in, const be_fam *fm)
{
    head(f, fm->name, "counter", fm->help);
    for (int i = 0; i < in->n_stats; i++) {
        const vt_stats_rec *r = &in->stats[i].rec;
        if (!in->stats[i].ok || !r->backends.present)
            continue;
        for (int b = 0; b < VT_BACKENDS; b++) {
            uint64_t v;
            memcpy(&v, (const char *)&r->backends.b[b] + fm->off, sizeof v);
            fprintf(f, "%s{pid=\"%llu\",backend=\"%s\"} %llu\n", fm->name,
                    (unsigned long long)r->pid, vt_backend_names[b], (unsigned long long)v);
        }
    }
}

/* A label value: backslash, double quote and newline escaped (format 0.0.4). */
static void label_value(FILE *f, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            fputc('\\', f);
        if (*v == '\n')
            fputs("\\n", f);
        else
            fputc(*v, f);
    }
}

/* The host-wide shared cache: one series per segment (label `segment`, its
 * path), from the newest counters file naming it (vt_stats_shared_pick): every
 * attached process writes the same segment-wide figures, so a per-pid series
 * would repeat them. segs holds the records to show, n of them. */
static void shared_fam(FILE *f, const vt_stats_rec *const *segs, int n, const fam *fm)
{
    head(f, fm->name, fm->type, fm->help);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s{segment=\"", fm->name);
        label_value(f, segs[i]->shared.path);
        fprintf(f, "\"} %llu\n", (unsigned long long)value(fm, segs[i]));
    }
}

static void shared_ratio(FILE *f, const vt_stats_rec *const *segs, int n)
{
    const char *name = "vsitune_shared_cache_hit_ratio";

    head(f, name, "gauge", "Block lookups of the host's processes served without a fetch of "
         "their own, (hits + waits) / (hits + waits + misses); no sample before the first "
         "lookup.");
    for (int i = 0; i < n; i++) {
        const vt_stats_rec *r = segs[i];
        uint64_t done = r->shared.hits + r->shared.waits + r->shared.misses;
        if (!done)
            continue;
        fprintf(f, "%s{segment=\"", name);
        label_value(f, r->shared.path);
        fprintf(f, "\"} %.17g\n", (double)(r->shared.hits + r->shared.waits) / (double)done);
    }
}

/* The shared-cache families, when any counters file names a segment.
 * Returns -1 when out of memory (errno ENOMEM), else 0. */
static int shared(FILE *f, const vt_prom_in *in)
{
    const vt_stats_rec **recs, **segs;
    int n = 0, k = 0;

    if (in->n_stats <= 0)
        return 0;
    recs = calloc((size_t)in->n_stats * 2, sizeof *recs);
    if (!recs)
        return -1;
    segs = recs + in->n_stats;
    for (int i = 0; i < in->n_stats; i++)
        if (in->stats[i].ok)
            recs[n++] = &in->stats[i].rec;
    for (int i = 0; i < n; i++) {
        const vt_stats_rec *best = vt_stats_shared_pick(recs, n, i);
        if (best)
            segs[k++] = best;
    }
    if (k) {
        for (size_t m = 0; m < sizeof seg_sizes / sizeof seg_sizes[0]; m++)
            shared_fam(f, segs, k, &seg_sizes[m]);
        shared_ratio(f, segs, k);
        for (size_t m = 0; m < sizeof seg_rest / sizeof seg_rest[0]; m++)
            shared_fam(f, segs, k, &seg_rest[m]);
    }
    free(recs);
    return 0;
}

static void states(FILE *f, const vt_prom_in *in)
{
    const char *name = "vsitune_process_state";

    head(f, name, "gauge", "1 for the state of the process that wrote the counters "
         "(running, exited, ended: a fork child gone with no OOM kill in its cgroup since, "
         "killed-or-gone), 0 for the others.");
    for (int i = 0; i < in->n_stats; i++) {
        if (!in->stats[i].ok)
            continue;
        for (int s = 0; s < VT_PSTATE_COUNT; s++)
            fprintf(f, "%s{pid=\"%llu\",state=\"%s\"} %d\n", name,
                    (unsigned long long)in->stats[i].rec.pid, vt_pstate_name((vt_pstate)s),
                    in->stats[i].state == (vt_pstate)s);
    }
}

typedef long (*proc_get)(const vt_watch_proc *p);
static long p_rss(const vt_watch_proc *p) { return p->rss_kb; }
static long p_pss(const vt_watch_proc *p) { return p->pss_kb; }
static long p_anon(const vt_watch_proc *p) { return p->anon_kb; }

static void memory(FILE *f, const vt_prom_in *in, const char *name, const char *help,
                   proc_get get)
{
    head(f, name, "gauge", help);
    for (int i = 0; i < in->n_procs; i++)
        if (get(&in->procs[i]) >= 0)
            fprintf(f, "%s{pid=\"%d\"} %llu\n", name, in->procs[i].pid,
                    (unsigned long long)get(&in->procs[i]) * 1024ULL);
}

/* A family of one sample, with no label. */
static void single(FILE *f, const char *name, const char *type, const char *help,
                   unsigned long long v)
{
    head(f, name, type, help);
    fprintf(f, "%s %llu\n", name, v);
}

static void cgroup(FILE *f, const vt_cgroup_mem *cg)
{
    if (!cg || !cg->version)
        return;
    if (cg->has_usage)
        single(f, "vsitune_cgroup_memory_usage_bytes", "gauge",
               "Memory charged to tunerd's cgroup (v1 memory.usage_in_bytes, v2 memory.current).",
               cg->usage_bytes);
    if (cg->has_limit)
        single(f, "vsitune_cgroup_memory_limit_bytes", "gauge",
               "The tightest memory limit from tunerd's cgroup to the top (absent: unlimited).",
               cg->limit_bytes);
    if (cg->has_oom)
        single(f, "vsitune_cgroup_oom_kills_total", "counter",
               "Processes the OOM killer took in tunerd's cgroup (oom_kill).", cg->oom_kills);
}

int vt_prom_write(FILE *f, const vt_prom_in *in)
{
    if (in->stats_dir_given) {
        int bad = 0;
        requests(f, in);
        for (size_t k = 0; k < sizeof per_process / sizeof per_process[0]; k++)
            per_rec(f, in, &per_process[k]);
        if (shared(f, in)) {
            errno = ENOMEM;
            return -1;
        }
        avoided(f, in, 0);
        avoided(f, in, 1);
        backend_requests(f, in);
        for (size_t k = 0; k < sizeof be_fams / sizeof be_fams[0]; k++)
            backend_fam(f, in, &be_fams[k]);
        latency(f, in);
        states(f, in);
        per_rec(f, in, &stamp);
        for (int i = 0; i < in->n_stats; i++)
            bad += !in->stats[i].ok;
        single(f, "vsitune_stats_unreadable_files", "gauge",
               "Files in the counters directory that could not be read (tunerd stats names "
               "them).", (unsigned long long)bad);
    }
    if (in->procs) {
        memory(f, in, "vsitune_process_rss_bytes",
               "Resident memory of a process that mapped libgdal (smaps_rollup Rss).", p_rss);
        memory(f, in, "vsitune_process_pss_bytes",
               "Proportional set size: shared pages divided among their sharers; the sum over "
               "processes is the honest total for forked workers.", p_pss);
        memory(f, in, "vsitune_process_anonymous_bytes",
               "Anonymous memory (heap, caches) of a process that mapped libgdal.", p_anon);
    }
    cgroup(f, in->cg);
    return ferror(f) ? -1 : 0;
}
