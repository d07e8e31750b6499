/* statsdir.c: scan the published counters, tell live from dead (statsdir.h).
 *
 * A process's start time is <proc>/<pid>/stat field 22 (clock ticks after
 * boot) plus btime from <proc>/stat: a pid whose process started after its
 * counters were written belongs to someone else now. Files are read through
 * openat() on the listed directory, O_NOFOLLOW | O_NONBLOCK, regular files
 * only: a FIFO or a symlink named like a counters file is reported, never
 * waited on or followed. */
#include "statsdir.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emit.h"
#include "errbuf.h"
#include "textfile.h"

const char *vt_pstate_name(vt_pstate s)
{
    switch (s) {
    case VT_PSTATE_RUNNING:
        return "running";
    case VT_PSTATE_EXITED:
        return "exited";
    case VT_PSTATE_ENDED:
        return "ended";
    default:
        return "killed-or-gone";
    }
}

/* btime (unix seconds) from <proc_root>/stat, or -1. Reads line by line:
 * the intr line before it can be tens of KB on a large machine. */
static long long boot_time(const char *proc_root)
{
    char path[PATH_MAX], chunk[512];
    long long bt = -1;
    int at_line_start = 1;
    FILE *f;

    snprintf(path, sizeof path, "%s/stat", proc_root);
    f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(chunk, sizeof chunk, f)) {
        if (at_line_start && strncmp(chunk, "btime ", 6) == 0) {
            char *end;
            errno = 0;
            bt = strtoll(chunk + 6, &end, 10);
            if (errno || end == chunk + 6 || bt < 0)
                bt = -1;
            break;
        }
        at_line_start = strchr(chunk, '\n') != NULL;
    }
    fclose(f);
    return bt;
}

/* A fork() child gone without its exit dump while its cgroup counted no
 * OOM kill since it last wrote: ENDED; else GONE. */
static vt_pstate gone(const vt_stats_rec *r)
{
    char text[2048];
    uint64_t k;

    if (!r->process.present || !r->process.forked || !r->process.has_oom ||
        vt__read_regular(r->process.oom_file, text, sizeof text) <= 0 ||
        vt__cgroup_parse_oom_kill(text, &k) != 0)
        return VT_PSTATE_GONE;
    return k == r->process.oom_kills ? VT_PSTATE_ENDED : VT_PSTATE_GONE;
}

vt_pstate vt_stats_state(const vt_stats_rec *r, const char *proc_root)
{
    char path[PATH_MAX], text[2048], *p, *save = NULL;
    unsigned long long start_ticks = 0;
    long long bt;
    long tck;
    int field = 3;

    if (r->exited == 1)
        return VT_PSTATE_EXITED;
    snprintf(path, sizeof path, "%s/%llu/stat", proc_root, (unsigned long long)r->pid);
    if (vt__read_text(path, text, sizeof text) <= 0)
        return gone(r);
    /* "pid (comm) S ppid ...": comm may hold spaces and ')' */
    p = strrchr(text, ')');
    if (!p)
        return VT_PSTATE_RUNNING; /* there, but unreadable: do not call it dead */
    for (char *tok = strtok_r(p + 1, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save),
         field++) {
        if (field == 3 && (tok[0] == 'Z' || tok[0] == 'X'))
            return gone(r); /* died without the exit dump, not reaped yet */
        if (field == 22) {
            start_ticks = strtoull(tok, NULL, 10);
            break;
        }
    }
    bt = boot_time(proc_root);
    tck = sysconf(_SC_CLK_TCK);
    if (field == 22 && bt >= 0 && tck > 0 &&
        (unsigned long long)bt + start_ticks / (unsigned long long)tck > r->time + 1)
        return gone(r); /* pid reused after the counters were written */
    return VT_PSTATE_RUNNING;
}

/* "vsitune-<1..10 digits>.json" -> pid, else 0. */
static long long name_pid(const char *name)
{
    const char *d = name + 8;
    size_t nd = 0;

    if (strncmp(name, "vsitune-", 8) != 0)
        return 0;
    while (isdigit((unsigned char)d[nd]))
        nd++;
    if (nd == 0 || nd > 10 || strcmp(d + nd, ".json") != 0)
        return 0;
    return strtoll(d, NULL, 10);
}

/* Reads one counters file at dirfd/name into e (ok or error set). */
static void read_entry(int dirfd, const char *name, const char *proc_root, vt_stats_entry *e)
{
    char buf[VT_STATS_FILE_MAX + 1], perr[160];
    struct stat st;
    ssize_t got = 0, r = 0;
    long long want_pid = name_pid(name);
    int fd;

    memset(e, 0, sizeof *e);
    snprintf(e->file, sizeof e->file, "%s", name);
    fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        vt__seterr(e->error, sizeof e->error, "cannot open: %s", strerror(errno));
        return;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        vt__seterr(e->error, sizeof e->error, "not a regular file");
        goto out;
    }
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    while ((size_t)got < sizeof buf &&
           (r = read(fd, buf + got, sizeof buf - (size_t)got)) > 0)
        got += r;
    if (r < 0) {
        vt__seterr(e->error, sizeof e->error, "cannot read: %s", strerror(errno));
        goto out;
    }
    if (got == 0) {
        vt__seterr(e->error, sizeof e->error, "empty");
        goto out;
    }
    if (vt_stats_parse(buf, (size_t)got, &e->rec, perr, sizeof perr)) {
        vt__seterr(e->error, sizeof e->error, "%s", perr);
        goto out;
    }
    if ((long long)e->rec.pid != want_pid) {
        vt__seterr(e->error, sizeof e->error, "holds pid %llu, not the file name's %lld",
                   (unsigned long long)e->rec.pid, want_pid);
        goto out;
    }
    e->state = vt_stats_state(&e->rec, proc_root);
    e->ok = 1;
out:
    close(fd);
}

static int entry_order(const void *a, const void *b)
{
    const vt_stats_entry *x = a, *y = b;

    if (x->ok != y->ok)
        return y->ok - x->ok; /* readable first */
    if (x->ok && x->rec.pid != y->rec.pid)
        return x->rec.pid < y->rec.pid ? -1 : 1;
    return strcmp(x->file, y->file);
}

int vt_stats_scan(const char *dir, const char *proc_root, vt_stats_entry *out, int cap,
                  int *n_found, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0, found = 0;

    *n_found = 0;
    if (!d) {
        vt__seterr(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        if (name_pid(de->d_name) == 0)
            continue; /* not ours, or the plugin's .tmp of a write in progress */
        found++;
        if (n >= cap)
            continue;
        read_entry(dirfd(d), de->d_name, proc_root, &out[n++]);
    }
    closedir(d);
    qsort(out, (size_t)n, sizeof *out, entry_order);
    *n_found = found;
    return n;
}

int vt_stats_lookup(const char *dir, const char *proc_root, int pid, vt_stats_rec *out)
{
    char name[64];
    vt_stats_entry e;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    snprintf(name, sizeof name, "vsitune-%d.json", pid);
    read_entry(fd, name, proc_root, &e);
    close(fd);
    if (!e.ok || e.state != VT_PSTATE_RUNNING)
        return -1;
    *out = e.rec;
    return 0;
}

int vt_stats_clean(const char *dir, vt_stats_entry *e, int n, char *err, size_t errlen)
{
    char path[PATH_MAX];
    struct stat st;
    int failed = 0;

    for (int i = 0; i < n; i++) {
        if (!e[i].ok || e[i].state == VT_PSTATE_RUNNING)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e[i].file);
        if (lstat(path, &st) != 0 || st.st_dev != e[i].dev || st.st_ino != e[i].ino)
            continue; /* rewritten since: a new process with that pid */
        if (unlink(path) != 0) {
            vt__seterr(err, errlen, "cannot remove %s: %s", path, strerror(errno));
            failed++;
            continue;
        }
        e[i].removed = 1;
    }
    return failed;
}

static double mib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

static long long age(const vt_stats_rec *r, time_t now)
{
    return (long long)now > (long long)r->time ? (long long)now - (long long)r->time : 0;
}

const vt_stats_rec *vt_stats_shared_pick(const vt_stats_rec *const *r, int n, int i)
{
    const vt_stats_rec *best = r[i];

    if (!best->shared.present)
        return NULL;
    for (int j = 0; j < n; j++) {
        if (!r[j]->shared.present || strcmp(r[j]->shared.path, r[i]->shared.path) != 0)
            continue;
        if (j < i)
            return NULL; /* shown with an earlier record */
        if (r[j]->time > best->time)
            best = r[j];
    }
    return best;
}

void vt_stats_print_shared(FILE *f, const vt_stats_rec *const *r, int n)
{
    for (int i = 0; i < n; i++) {
        const vt_stats_rec *best = vt_stats_shared_pick(r, n, i);
        uint64_t done;
        if (!best)
            continue;
        done = best->shared.hits + best->shared.waits + best->shared.misses;
        fprintf(f, "# shared cache %s: %.1f MiB (%.1f MiB of blocks), %.1f MiB used, ",
                best->shared.path, mib(best->shared.size), mib(best->shared.data_bytes),
                mib(best->shared.used_bytes));
        if (done)
            fprintf(f, "hit %.1f%%", 100.0 * (double)(best->shared.hits + best->shared.waits) /
                                         (double)done);
        else
            fprintf(f, "hit -");
        fprintf(f, " (host: %llu hits, %llu waits, %llu misses), %llu process(es) attached, "
                   "%llu object(s), %llu eviction(s), %llu repair(s)\n",
                (unsigned long long)best->shared.hits, (unsigned long long)best->shared.waits,
                (unsigned long long)best->shared.misses,
                (unsigned long long)best->shared.attached,
                (unsigned long long)best->shared.objects,
                (unsigned long long)best->shared.evictions,
                (unsigned long long)best->shared.repairs);
    }
}

/* "# pid N by backend: s3 12 requests (1 4xx) 1.2 MiB, 1 LIST + 1 HEAD
 * avoided; gs ...": the backends that did anything, nothing when none did
 * (or the file predates the section). */
static void print_backends(FILE *f, const vt_stats_rec *r)
{
    const char *sep = "";

    if (!r->backends.present)
        return;
    for (int b = 0; b < VT_BACKENDS; b++) {
        const struct vt_stats_be *s = &r->backends.b[b];
        if (!s->requests && !s->avoided_lists && !s->avoided_heads)
            continue;
        if (!*sep)
            fprintf(f, "# pid %llu by backend: ", (unsigned long long)r->pid);
        fprintf(f, "%s%s %llu request(s)", sep, vt_backend_names[b],
                (unsigned long long)s->requests);
        for (int c = 1; c < VT_HTTP_CLASSES; c++) /* the failures, if any */
            if (s->status[c])
                fprintf(f, " (%llu %s)", (unsigned long long)s->status[c],
                        vt_http_class_names[c]);
        fprintf(f, " %.1f MiB, %llu LIST + %llu HEAD avoided", mib(s->bytes_received),
                (unsigned long long)s->avoided_lists, (unsigned long long)s->avoided_heads);
        sep = "; ";
    }
    if (*sep)
        fputc('\n', f);
}

void vt_stats_print(FILE *f, const char *dir, const vt_stats_entry *e, int n, int n_found,
                    time_t now, const vt_cgroup_mem *cg)
{
    int ok = 0;

    for (int i = 0; i < n; i++)
        ok += e[i].ok;
    fprintf(f, "# tunerd stats: %s: %d process(es), %d unreadable file(s)", dir, ok, n - ok);
    if (n_found > n)
        fprintf(f, " (only the first %d of %d files read)", n, n_found);
    fputc('\n', f);
    if (cg && cg->has_oom)
        fprintf(f, "# cgroup oom_kill: %llu (%s)\n", (unsigned long long)cg->oom_kills,
                cg->oom_file);
    else
        fprintf(f, "# cgroup oom_kill: unknown (no memory cgroup found)\n");
    fprintf(f, "%8s %-14s %6s %9s %7s %9s %5s %9s %10s %9s %6s\n", "pid", "state", "age_s",
            "requests", "retries", "recv_mib", "conns", "cache_mib", "budget_mib", "peak_mib",
            "hit%");
    for (int i = 0; i < n; i++) {
        const vt_stats_rec *r = &e[i].rec;
        double hit = vt_stats_hit_ratio(r);
        if (!e[i].ok)
            continue;
        fprintf(f, "%8llu %-14s %6lld %9llu %7llu %9.1f %5llu %9.1f %10.1f %9.1f",
                (unsigned long long)r->pid, vt_pstate_name(e[i].state), age(r, now),
                (unsigned long long)r->engine.requests, (unsigned long long)r->engine.retries,
                mib(r->engine.bytes_received), (unsigned long long)r->engine.connections,
                mib(r->cache.retained_bytes), mib(r->cache.budget),
                mib(r->cache.peak_retained_bytes));
        if (hit < 0)
            fprintf(f, " %6s\n", "-");
        else
            fprintf(f, " %6.1f\n", hit * 100.0);
    }
    for (int i = 0; i < n; i++)
        if (e[i].ok)
            print_backends(f, &e[i].rec);
    {
        const vt_stats_rec **recs = calloc((size_t)(n > 0 ? n : 1), sizeof *recs);
        int k = 0;
        for (int i = 0; recs && i < n; i++)
            if (e[i].ok)
                recs[k++] = &e[i].rec;
        if (recs)
            vt_stats_print_shared(f, recs, k);
        free(recs);
    }
    for (int i = 0; i < n; i++)
        if (!e[i].ok)
            fprintf(f, "unreadable %s/%s: %s\n", dir, e[i].file, e[i].error);
    for (int i = 0; i < n; i++)
        if (e[i].removed)
            fprintf(f, "removed %s/%s (%s)\n", dir, e[i].file, vt_pstate_name(e[i].state));
}

static void json_u64s(FILE *f, const char *const *names, const uint64_t *v, int n)
{
    for (int i = 0; i < n; i++)
        fprintf(f, "%s\"%s\": %llu", i ? ", " : "", names[i], (unsigned long long)v[i]);
}

static void json_counters(FILE *f, const vt_stats_rec *r)
{
    fprintf(f, "\"cache\": {\"budget\": %llu, \"retained_bytes\": %llu, "
            "\"peak_retained_bytes\": %llu, \"transient_bytes\": %llu, \"hits\": %llu, "
            "\"misses\": %llu, \"waits\": %llu, \"evictions\": %llu, \"blocks\": %llu}, ",
            (unsigned long long)r->cache.budget, (unsigned long long)r->cache.retained_bytes,
            (unsigned long long)r->cache.peak_retained_bytes,
            (unsigned long long)r->cache.transient_bytes, (unsigned long long)r->cache.hits,
            (unsigned long long)r->cache.misses, (unsigned long long)r->cache.waits,
            (unsigned long long)r->cache.evictions, (unsigned long long)r->cache.blocks);
    fprintf(f, "\"engine\": {\"requests\": %llu, \"retries\": %llu, \"bytes_received\": %llu, "
            "\"connections\": %llu, \"in_flight\": %llu, \"h2_responses\": %llu}",
            (unsigned long long)r->engine.requests, (unsigned long long)r->engine.retries,
            (unsigned long long)r->engine.bytes_received,
            (unsigned long long)r->engine.connections,
            (unsigned long long)r->engine.in_flight,
            (unsigned long long)r->engine.h2_responses);
    if (r->shared.present)
        fprintf(f, ", \"shared\": {\"path\": \"%s\", \"size\": %llu, \"data_bytes\": %llu, "
                "\"used_bytes\": %llu, \"attached\": %llu, \"objects\": %llu, \"hits\": %llu, "
                "\"misses\": %llu, \"waits\": %llu, \"evictions\": %llu, \"repairs\": %llu}",
                r->shared.path, (unsigned long long)r->shared.size,
                (unsigned long long)r->shared.data_bytes,
                (unsigned long long)r->shared.used_bytes,
                (unsigned long long)r->shared.attached, (unsigned long long)r->shared.objects,
                (unsigned long long)r->shared.hits, (unsigned long long)r->shared.misses,
                (unsigned long long)r->shared.waits, (unsigned long long)r->shared.evictions,
                (unsigned long long)r->shared.repairs);
    if (r->http.present) {
        fputs(", \"http\": {", f);
        for (int k = 0; k < VT_HTTP_KINDS; k++) {
            fprintf(f, "%s\"%s\": {", k ? ", " : "", vt_http_kind_names[k]);
            json_u64s(f, vt_http_class_names, r->http.n[k], VT_HTTP_CLASSES);
            fputc('}', f);
        }
        fputc('}', f);
    }
    if (r->latency.present) {
        fputs(", \"latency\": {", f);
        for (int b = 0; b < VT_LAT_BOUNDS; b++)
            fprintf(f, "\"le_%s\": %llu, ", vt_lat_bound_text[b],
                    (unsigned long long)r->latency.le[b]);
        fprintf(f, "\"le_inf\": %llu, \"sum_us\": %llu, \"count\": %llu}",
                (unsigned long long)r->latency.le[VT_LAT_BOUNDS],
                (unsigned long long)r->latency.sum_us, (unsigned long long)r->latency.count);
    }
    if (r->avoided.present)
        fprintf(f, ", \"avoided\": {\"lists\": %llu, \"heads\": %llu}",
                (unsigned long long)r->avoided.lists, (unsigned long long)r->avoided.heads);
    if (r->backends.present) {
        fputs(", \"backends\": {", f);
        for (int b = 0; b < VT_BACKENDS; b++) {
            const struct vt_stats_be *s = &r->backends.b[b];
            fprintf(f, "%s\"%s\": {\"requests\": %llu, \"bytes_received\": %llu, "
                    "\"avoided_lists\": %llu, \"avoided_heads\": %llu, ", b ? ", " : "",
                    vt_backend_names[b], (unsigned long long)s->requests,
                    (unsigned long long)s->bytes_received,
                    (unsigned long long)s->avoided_lists,
                    (unsigned long long)s->avoided_heads);
            json_u64s(f, vt_http_class_names, s->status, VT_HTTP_CLASSES);
            fputc('}', f);
        }
        fputc('}', f);
    }
    if (r->process.present) {
        fprintf(f, ", \"process\": {\"ppid\": %llu, \"forked\": %s",
                (unsigned long long)r->process.ppid, r->process.forked ? "true" : "false");
        if (r->process.has_oom) {
            fprintf(f, ", \"oom_kills\": %llu, \"oom_file\": ",
                    (unsigned long long)r->process.oom_kills);
            vt__json_str(f, r->process.oom_file);
        }
        fputc('}', f);
    }
}

void vt_stats_print_json(FILE *f, const char *dir, const vt_stats_entry *e, int n,
                         int n_found, time_t now, const vt_cgroup_mem *cg)
{
    const char *sep = "";

    fputs("{\"dir\": ", f);
    vt__json_str(f, dir);
    fprintf(f, ", \"time\": %lld, \"cgroup\": ", (long long)now);
    if (cg && cg->has_oom) {
        fprintf(f, "{\"oom_kills\": %llu, \"oom_file\": ", (unsigned long long)cg->oom_kills);
        vt__json_str(f, cg->oom_file);
        fputc('}', f);
    } else {
        fputs("null", f);
    }
    fputs(", \"processes\": [", f);
    for (int i = 0; i < n; i++) {
        const vt_stats_rec *r = &e[i].rec;
        double hit = vt_stats_hit_ratio(r);
        if (!e[i].ok)
            continue;
        fprintf(f, "%s\n  {\"pid\": %llu, \"state\": \"%s\", \"file\": ", sep,
                (unsigned long long)r->pid, vt_pstate_name(e[i].state));
        vt__json_str(f, e[i].file);
        fprintf(f, ", \"time\": %llu, \"age_s\": %lld, \"exited\": %s, \"removed\": %s, ",
                (unsigned long long)r->time, age(r, now),
                r->exited < 0 ? "null" : r->exited ? "true" : "false",
                e[i].removed ? "true" : "false");
        if (hit < 0)
            fputs("\"hit_ratio\": null, ", f);
        else
            fprintf(f, "\"hit_ratio\": %.4f, ", hit);
        json_counters(f, r);
        fputc('}', f);
        sep = ",";
    }
    fputs("],\n \"unreadable\": [", f);
    sep = "";
    for (int i = 0; i < n; i++) {
        if (e[i].ok)
            continue;
        fprintf(f, "%s\n  {\"file\": ", sep);
        vt__json_str(f, e[i].file);
        fputs(", \"error\": ", f);
        vt__json_str(f, e[i].error);
        fputc('}', f);
        sep = ",";
    }
    fprintf(f, "],\n \"not_shown\": %d}\n", n_found > n ? n_found - n : 0);
}
