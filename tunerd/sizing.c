/* sizing.c: the sizing model (see sizing.h and docs/tuning.md).
 *
 * Steps: (1) check the tier against the platform's memory range; (2) vCPU
 * from the platform rule (Lambda: memory / 1769, never the host's cores);
 * (3) a default worker count: batch = one process per whole vCPU, tiles = 4
 * threads per process and one process per 4 vCPU; (4) the ledger: each
 * process pays runtime + its share of the block cache + its share of the
 * range cache + working arrays, the pool parent pays its runtime, and 10%
 * headroom is kept; caches are a fixed share of the tier DIVIDED among
 * processes, never repeated; (5) shrink threads, then processes, until the
 * ledger fits. A user --workers that does not fit is an error, not shrunk.
 * Where there is no /dev/shm (the profile's shared_memory = no, or detected)
 * the plan is the same but its processes talk through pipes (ipc "pipe") and
 * keep their own range caches. */
#include "sizing.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errbuf.h"

const char *vt_workload_name(vt_workload w)
{
    return w == VT_WORKLOAD_TILES ? "tiles" : "batch";
}

static long floor_to(double v, long granule)
{
    if (v <= 0)
        return 0;
    return (long)floor(v / (double)granule + 1e-9) * granule;
}

static void add_row(vt_sizing *s, const char *item, long each, int count)
{
    vt_ledger_row *r;

    if (s->n_rows >= VT_LEDGER_MAX || count <= 0)
        return;
    r = &s->rows[s->n_rows++];
    r->item = item;
    r->each_mb = each;
    r->count = count;
    r->total_mb = each * count;
    s->total_mb += r->total_mb;
}

/* Fills caches and the ledger for (processes, threads). */
static void ledger(const vt_sizing_in *in, vt_sizing *s, int procs, int threads)
{
    long mem = in->memory_mb;
    long cache, range, arrays, headroom;

    s->processes = procs;
    s->threads = threads;
    s->n_rows = 0;
    s->total_mb = 0;

    cache = floor_to((double)mem * VT_SIZE_CACHE_PCT / 100.0 / procs,
                     VT_SIZE_CACHE_GRANULE_MB);
    if (cache < VT_SIZE_CACHE_GRANULE_MB)
        cache = VT_SIZE_CACHE_GRANULE_MB;
    range = floor_to((double)mem * VT_SIZE_RANGE_PCT / 100.0 / procs,
                     VT_SIZE_RANGE_GRANULE_MB);
    if (range < VT_SIZE_RANGE_GRANULE_MB)
        range = VT_SIZE_RANGE_GRANULE_MB;
    if (range > VT_SIZE_RANGE_MAX_MB)
        range = VT_SIZE_RANGE_MAX_MB;
    arrays = in->workload == VT_WORKLOAD_TILES
        ? (long)VT_SIZE_ARRAYS_TILE_MB * threads : VT_SIZE_ARRAYS_BATCH_MB;
    headroom = (long)ceil((double)mem * VT_SIZE_HEADROOM_PCT / 100.0);
    if (headroom < VT_SIZE_HEADROOM_MIN_MB)
        headroom = VT_SIZE_HEADROOM_MIN_MB;

    s->cachemax_mb = cache;
    s->range_cache_mb = range;
    add_row(s, "runtime (python, numpy, rasterio, libgdal)", VT_SIZE_RUNTIME_MB, procs);
    add_row(s, "GDAL block cache (GDAL_CACHEMAX)", cache, procs);
    s->shared_cache_mb = 0;
    if (in->plugin && procs > 1 && in->plat->shared_memory && !in->no_shm) {
        s->shared_cache_mb = range * procs;
        add_row(s, "range cache, one for the host's processes (VSITUNE_SHARED_CACHE_SIZE)",
                s->shared_cache_mb, 1);
    } else {
        add_row(s, in->plugin ? "range cache (VSITUNE_CACHE_SIZE)"
                              : "range cache (CPL_VSIL_CURL_CACHE_SIZE)", range, procs);
    }
    add_row(s, in->workload == VT_WORKLOAD_TILES ? "working arrays (16 MiB per thread)"
                                                 : "working arrays", arrays, procs);
    if (procs > 1)
        add_row(s, "pool parent process (runtime)", VT_SIZE_RUNTIME_MB, 1);
    add_row(s, "headroom (10%: allocator arenas, page tables, spikes)", headroom, 1);
    s->free_mb = mem - s->total_mb;

    if (procs == 1 && threads == 1)
        s->kind = "inline";
    else if (threads == 1)
        s->kind = "processes";
    else if (procs == 1)
        s->kind = "threads";
    else
        s->kind = "processes-of-threads";
    s->gdal_num_threads = s->whole_cpus / (procs * threads);
    if (s->gdal_num_threads < 1)
        s->gdal_num_threads = 1;
}

/* Below the minimum ledger: one process, one thread, the smallest caches;
 * the ledger shows what they cost (free_mb < 0: it does not fit). */
static void minimal(const vt_sizing_in *in, vt_sizing *s)
{
    long range = VT_SIZE_MIN_RANGE_MB, headroom;

    ledger(in, s, 1, 1);
    s->min_ledger_mb = s->total_mb;
    s->n_rows = 0;
    s->total_mb = 0;
    s->cachemax_mb = VT_SIZE_MIN_CACHE_MB;
    s->range_cache_mb = range;
    add_row(s, "runtime (python, numpy, rasterio, libgdal)", VT_SIZE_RUNTIME_MB, 1);
    add_row(s, "GDAL block cache (GDAL_CACHEMAX)", s->cachemax_mb, 1);
    add_row(s, in->plugin ? "range cache (VSITUNE_CACHE_SIZE)"
                          : "range cache (CPL_VSIL_CURL_CACHE_SIZE)", range, 1);
    add_row(s, "working arrays", in->workload == VT_WORKLOAD_TILES ? VT_SIZE_ARRAYS_TILE_MB
                                                                   : VT_SIZE_ARRAYS_BATCH_MB, 1);
    headroom = (long)ceil((double)in->memory_mb * VT_SIZE_HEADROOM_PCT / 100.0);
    add_row(s, "headroom (10%: allocator arenas, page tables, spikes)",
            headroom < VT_SIZE_HEADROOM_MIN_MB ? VT_SIZE_HEADROOM_MIN_MB : headroom, 1);
    s->free_mb = in->memory_mb - s->total_mb;
    s->threads = 1;
    s->processes = 1;
    s->gdal_num_threads = 1;
    s->kind = "inline";
    s->minimal = 1;
}

long vt_sizing_ledger_total(const vt_sizing_in *in, int procs, int threads, long cache_mb,
                            long range_mb)
{
    long arrays = in->workload == VT_WORKLOAD_TILES
        ? (long)VT_SIZE_ARRAYS_TILE_MB * threads : VT_SIZE_ARRAYS_BATCH_MB;
    long headroom = (long)ceil((double)in->memory_mb * VT_SIZE_HEADROOM_PCT / 100.0);

    if (headroom < VT_SIZE_HEADROOM_MIN_MB)
        headroom = VT_SIZE_HEADROOM_MIN_MB;
    if (procs < 1)
        procs = 1;
    return (long)procs * (VT_SIZE_RUNTIME_MB + cache_mb + range_mb + arrays) +
           (procs > 1 ? VT_SIZE_RUNTIME_MB : 0) + headroom;
}

static int cpus_allowed(const vt_platform *p, double cpus)
{
    if (p->n_cpus_allowed == 0)
        return 1;
    for (int i = 0; i < p->n_cpus_allowed; i++)
        if (fabs(cpus - p->cpus_allowed[i]) < 1e-9)
            return 1;
    return 0;
}

static void allowed_list(const vt_platform *p, char *buf, size_t cap)
{
    size_t n = 0;

    buf[0] = '\0';
    for (int i = 0; i < p->n_cpus_allowed && n + 8 < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%d", i ? ", " : "",
                              p->cpus_allowed[i]);
}

/* Step 2: vCPU. Returns VT_SIZE_OK or VT_SIZE_EINPUT with err set. */
static vt_size_rc decide_vcpu(const vt_sizing_in *in, vt_sizing *s,
                              char *err, size_t errlen)
{
    const vt_platform *p = in->plat;
    char list[128];

    switch (p->cpu_rule) {
    case VT_CPU_PER_MEMORY:
        s->vcpu = (double)in->memory_mb / (double)p->mb_per_vcpu;
        s->vcpu_source = "memory / mb_per_vcpu (platform rule)";
        if (p->max_vcpu > 0 && s->vcpu > p->max_vcpu)
            s->vcpu = p->max_vcpu;
        if (in->cpus_from_option && fabs(in->cpus - s->vcpu) > 0.005) {
            vt__seterr(err, errlen,
                   "--cpus %g contradicts %s: its vCPU follow from memory "
                   "(%ld MiB -> %.2f vCPU); drop --cpus",
                   in->cpus, p->name, in->memory_mb, s->vcpu);
            return VT_SIZE_EINPUT;
        }
        break;
    case VT_CPU_FIXED:
        s->vcpu = p->vcpu;
        s->vcpu_source = "fixed by the platform";
        if (in->cpus_from_option && fabs(in->cpus - s->vcpu) > 0.005) {
            vt__seterr(err, errlen, "--cpus %g contradicts %s: it gives %g vCPU; drop --cpus",
                   in->cpus, p->name, p->vcpu);
            return VT_SIZE_EINPUT;
        }
        break;
    case VT_CPU_GIVEN:
        if (in->cpus > 0) {
            s->vcpu = in->cpus;
            s->vcpu_source = in->cpus_from_option ? "--cpus" : "detected";
        } else if (p->max_mb_per_vcpu > 0) {
            /* the fewest vCPU the platform sells with this much memory */
            double need = ceil((double)in->memory_mb / (double)p->max_mb_per_vcpu);
            s->vcpu = need < 1 ? 1 : need;
            for (int i = 0; i < p->n_cpus_allowed; i++)
                if (p->cpus_allowed[i] >= s->vcpu) {
                    s->vcpu = p->cpus_allowed[i];
                    break;
                }
            s->vcpu_source = "fewest vCPU the platform allows for this memory (no --cpus)";
        } else {
            vt__seterr(err, errlen, "%s needs --cpus N (vCPU are not implied by memory)",
                   p->name);
            return VT_SIZE_EINPUT;
        }
        if (in->cpus_from_option && !cpus_allowed(p, s->vcpu)) {
            allowed_list(p, list, sizeof list);
            vt__seterr(err, errlen, "--cpus %g is not offered by %s (valid: %s)", s->vcpu,
                   p->name, list);
            return VT_SIZE_EINPUT;
        }
        if (p->max_vcpu > 0 && s->vcpu > p->max_vcpu + 1e-9) {
            vt__seterr(err, errlen, "--cpus %g exceeds the %s maximum of %g vCPU",
                   s->vcpu, p->name, p->max_vcpu);
            return VT_SIZE_EINPUT;
        }
        if (in->cpus_from_option && p->max_mb_per_vcpu > 0 &&
            (double)in->memory_mb > s->vcpu * (double)p->max_mb_per_vcpu + 1e-9) {
            vt__seterr(err, errlen,
                   "--memory %ld needs at least %.0f vCPU on %s (max %ld MiB per vCPU); "
                   "got %g",
                   in->memory_mb, ceil((double)in->memory_mb / p->max_mb_per_vcpu),
                   p->name, p->max_mb_per_vcpu, s->vcpu);
            return VT_SIZE_EINPUT;
        }
        break;
    }
    s->whole_cpus = (int)floor(s->vcpu + 1e-9);
    if (s->whole_cpus < 1)
        s->whole_cpus = 1;
    return VT_SIZE_OK;
}

vt_size_rc vt_sizing_compute(const vt_sizing_in *in, vt_sizing *out,
                             char *err, size_t errlen)
{
    const vt_platform *p = in->plat;
    vt_size_rc rc;
    int procs, threads;

    memset(out, 0, sizeof *out);
    if (err && errlen)
        err[0] = '\0';
    out->start_method = p->start_method[0] ? p->start_method : "fork";
    /* Without /dev/shm, multiprocessing's semaphores cannot be made (sem_open:
     * EROFS, ENOENT or ENOSYS), so no Pool, Queue or Lock: processes talk
     * through pipes (tunerd_plan.map) */
    out->ipc = p->shared_memory && !in->no_shm ? "pool" : "pipe";

    if (in->memory_mb < p->memory_min_mb || in->memory_mb > p->memory_max_mb) {
        vt__seterr(err, errlen, "--memory %ld is outside what %s offers (valid: %ld..%ld MiB)",
               in->memory_mb, p->name, p->memory_min_mb, p->memory_max_mb);
        return VT_SIZE_EINPUT;
    }
    rc = decide_vcpu(in, out, err, errlen);
    if (rc != VT_SIZE_OK)
        return rc;
    out->max_workers = out->whole_cpus;

    if (in->workload == VT_WORKLOAD_TILES) {
        threads = VT_SIZE_TILE_THREADS;
        procs = out->whole_cpus / VT_SIZE_TILE_THREADS;
        if (procs < 1)
            procs = 1;
    } else {
        threads = 1;
        procs = out->whole_cpus;
    }

    if (in->workers) {
        if (in->workers < 1 || in->workers > out->max_workers) {
            vt__seterr(err, errlen,
                   "--workers %d contradicts %s at %ld MiB (%.2f vCPU): valid 1..%d",
                   in->workers, p->name, in->memory_mb, out->vcpu, out->max_workers);
            return VT_SIZE_EINPUT;
        }
        procs = in->workers;
        ledger(in, out, procs, threads);
        while (out->free_mb < 0 && threads > 1)
            ledger(in, out, procs, --threads);
        if (out->free_mb < 0 && procs == 1) {
            minimal(in, out);
            return VT_SIZE_OK;
        }
        if (out->free_mb < 0) {
            long need = out->total_mb;
            int fit = procs;
            while (fit > 1) {
                ledger(in, out, --fit, 1);
                if (out->free_mb >= 0)
                    break;
            }
            if (out->free_mb >= 0)
                vt__seterr(err, errlen,
                       "--workers %d contradicts %s at %ld MiB: the ledger needs %ld MiB; "
                       "valid 1..%d", in->workers, p->name, in->memory_mb, need, fit);
            else
                vt__seterr(err, errlen,
                       "--workers %d contradicts %s at %ld MiB: the ledger needs %ld MiB",
                       in->workers, p->name, in->memory_mb, need);
            return out->free_mb >= 0 ? VT_SIZE_EINPUT : VT_SIZE_ETOOSMALL;
        }
        return VT_SIZE_OK;
    }

    for (;;) {
        ledger(in, out, procs, threads);
        if (out->free_mb >= 0)
            return VT_SIZE_OK;
        if (threads > 1)
            threads--;
        else if (procs > 1)
            procs--;
        else
            break;
    }
    minimal(in, out);
    return VT_SIZE_OK;
}
