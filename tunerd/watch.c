/* watch.c: find libgdal processes in /proc and read their memory (watch.h).
 *
 * Reads /proc/PID/maps line by line and stops at the first match, so a big
 * address space costs one pass at most; smaps_rollup (Linux >= 4.14) gives
 * Rss, Pss and Anonymous in one small file; without it, /proc/PID/status
 * VmRSS is used and PSS is reported unknown. The plugin's counters are
 * joined in by the caller (commands.c), so the scan stays /proc only. */
#include "watch.h"
#include "textfile.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int maps_match(const char *proc_root, int pid, const char *match)
{
    char path[PATH_MAX], line[4096];
    FILE *f;
    int hit = 0;

    snprintf(path, sizeof path, "%s/%d/maps", proc_root, pid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    while (!hit && fgets(line, sizeof line, f)) {
        char *slash = strchr(line, '/');
        if (slash && strstr(slash, match))
            hit = 1;
    }
    fclose(f);
    return hit;
}

static long field_kb(const char *text, const char *name)
{
    const char *p = text;
    size_t nl = strlen(name);

    while ((p = strstr(p, name)) != NULL) {
        if ((p == text || p[-1] == '\n') && p[nl] == ':')
            return strtol(p + nl + 1, NULL, 10);
        p += nl;
    }
    return -1;
}

static int read_text(const char *path, char *buf, size_t cap)
{
    return vt__read_text(path, buf, cap) < 0 ? -1 : 0;
}

static void read_mem(const char *proc_root, vt_watch_proc *w)
{
    char path[PATH_MAX], text[8192];

    w->rss_kb = w->pss_kb = w->anon_kb = -1;
    snprintf(path, sizeof path, "%s/%d/smaps_rollup", proc_root, w->pid);
    if (read_text(path, text, sizeof text) == 0) {
        w->rss_kb = field_kb(text, "Rss");
        w->pss_kb = field_kb(text, "Pss");
        w->anon_kb = field_kb(text, "Anonymous");
        return;
    }
    snprintf(path, sizeof path, "%s/%d/status", proc_root, w->pid);
    if (read_text(path, text, sizeof text) == 0) {
        w->rss_kb = field_kb(text, "VmRSS");
        w->anon_kb = field_kb(text, "RssAnon");
    }
}

static int by_pid(const void *a, const void *b)
{
    return ((const vt_watch_proc *)a)->pid - ((const vt_watch_proc *)b)->pid;
}

int vt_watch_scan(const char *proc_root, const char *match, vt_watch_proc *out,
                  int cap, int *n_found, char *err, size_t errlen)
{
    DIR *d = opendir(proc_root);
    struct dirent *de;
    int n = 0, found = 0;

    *n_found = 0;
    if (!d) {
        snprintf(err, errlen, "%s: %s", proc_root, strerror(errno));
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (!isdigit((unsigned char)de->d_name[0]) || *end || pid <= 0 || pid > INT_MAX)
            continue;
        if (!maps_match(proc_root, (int)pid, match))
            continue;
        found++;
        if (n >= cap)
            continue;
        vt_watch_proc *w = &out[n];
        memset(w, 0, sizeof *w);
        w->pid = (int)pid;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%ld/comm", proc_root, pid);
        if (read_text(path, w->comm, sizeof w->comm) == 0)
            w->comm[strcspn(w->comm, "\n")] = '\0';
        else
            snprintf(w->comm, sizeof w->comm, "?");
        read_mem(proc_root, w);
        if (w->rss_kb < 0) { /* vanished between maps and now */
            found--;
            continue;
        }
        n++;
    }
    closedir(d);
    qsort(out, (size_t)n, sizeof *out, by_pid);
    *n_found = found;
    return n;
}

static void mb(FILE *f, long kb)
{
    if (kb < 0)
        fprintf(f, " %9s", "-");
    else
        fprintf(f, " %9.1f", kb / 1024.0);
}

void vt_watch_print(FILE *f, const char *when, const vt_watch_proc *p, int n, int n_found,
                    int stats_cols)
{
    long rss = 0, pss = 0, anon = 0;
    uint64_t requests = 0, cache = 0;
    int pss_known = 1;

    for (int i = 0; i < n; i++) {
        fprintf(f, "%-9s %8d", when, p[i].pid);
        mb(f, p[i].rss_kb);
        mb(f, p[i].pss_kb);
        mb(f, p[i].anon_kb);
        if (stats_cols && p[i].has_stats)
            fprintf(f, " %9llu %9.1f", (unsigned long long)p[i].requests,
                    (double)p[i].cache_bytes / (1024.0 * 1024.0));
        else if (stats_cols)
            fprintf(f, " %9s %9s", "-", "-");
        fprintf(f, "  %s\n", p[i].comm);
        rss += p[i].rss_kb > 0 ? p[i].rss_kb : 0;
        anon += p[i].anon_kb > 0 ? p[i].anon_kb : 0;
        if (p[i].pss_kb < 0)
            pss_known = 0;
        else
            pss += p[i].pss_kb;
        if (p[i].has_stats) {
            requests += p[i].requests;
            cache += p[i].cache_bytes;
        }
    }
    fprintf(f, "%-9s %8s", when, "total");
    mb(f, rss);
    mb(f, pss_known ? pss : -1);
    mb(f, anon);
    if (stats_cols)
        fprintf(f, " %9llu %9.1f", (unsigned long long)requests,
                (double)cache / (1024.0 * 1024.0));
    fprintf(f, "  %d process(es)", n);
    if (n_found > n)
        fprintf(f, " of %d (only the first %d are shown)", n_found, n);
    fputc('\n', f);
}
