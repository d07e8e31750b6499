/* commands.c: what tunerd's commands do once the command line is parsed.
 *
 * profile and exec share resolve(): choose the platform (--platform, else
 * detected, else lambda when --memory is given, else host), take memory and
 * CPUs from the options or, for the platform we run on, from detect, run
 * the sizing model and build the environment block. exec then sets only the
 * variables the caller has not set and replaces itself with the command.
 * Errors come back as an exit status (cli.h) plus one line in err. */
#include "commands.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "detect.h"
#include "envblock.h"
#include "kept.h"
#include "prom.h"
#include "metricsd.h"
#include "errbuf.h"
#include "platform.h"
#include "statsdir.h"
#include "watch.h"

/* Everything `profile` and `exec` compute. */
#define MAX_WARN 4
typedef struct resolved {
    vt_platform plat;
    vt_sizing_in in;
    vt_sizing s;
    vt_envblock env;
    char memory_src[VT_DETECT_SRC_MAX + 32];
    char plugin_dir[PATH_MAX];
    char warn[MAX_WARN][PATH_MAX + 256];  /* printed as "tunerd: warning: ..." */
    int n_warn;
} resolved;

static void add_warn(resolved *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_warn(resolved *r, const char *fmt, ...)
{
    va_list ap;

    if (r->n_warn >= MAX_WARN)
        return;
    va_start(ap, fmt);
    vsnprintf(r->warn[r->n_warn++], sizeof r->warn[0], fmt, ap);
    va_end(ap);
}

/* The plugin directory of tunerd's own install: <dir of the executable>/
 * TUNERD_PLUGIN_RELDIR ("../lib/gdalplugins" for the default layout), and
 * in the build tree the build's vsiplugin/ directory. */
static void own_plugin_dir(char *out, size_t cap)
{
    char exe[PATH_MAX], *slash;
    const char *rel = TUNERD_PLUGIN_RELDIR;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

    snprintf(out, cap, "%s", TUNERD_PLUGIN_DIR);
    if (n <= 0)
        return;
    exe[n] = '\0';
    slash = strrchr(exe, '/');
    if (!slash)
        return;
    *slash = '\0';
#ifdef TUNERD_BUILD_BIN_DIR
    if (strcmp(exe, TUNERD_BUILD_BIN_DIR) == 0) {
        snprintf(out, cap, "%s", TUNERD_BUILD_PLUGIN_DIR);
        return;
    }
#endif
    while (strncmp(rel, "../", 3) == 0 && (slash = strrchr(exe, '/')) != NULL) {
        *(slash == exe ? slash + 1 : slash) = '\0';
        rel += 3;
    }
    if (snprintf(out, cap, "%s%s%s", exe, exe[strlen(exe) - 1] == '/' ? "" : "/", rel) >=
        (int)cap)
        snprintf(out, cap, "%s", TUNERD_PLUGIN_DIR);
}

/* 1 when some element of the ':'-separated list holds gdal_vsitune.so. */
static int holds_plugin(const char *list)
{
    char one[PATH_MAX + 32];

    while (*list) {
        size_t l = strcspn(list, ":");
        if (l < PATH_MAX) {
            snprintf(one, sizeof one, "%.*s/gdal_vsitune.so", (int)l, list);
            if (access(one, R_OK) == 0)
                return 1;
        }
        list += l;
        if (*list == ':')
            list++;
    }
    return 0;
}

/* A platform name that has no profile: a usage error listing those that do. */
static int unknown_platform(const char *pdir, const char *name, char *err, size_t errlen)
{
    char names[VT_PLATFORM_MAX_FILES][VT_PLATFORM_NAME_MAX], list[1024] = "";
    int n = vt_platform_list(pdir, names, VT_PLATFORM_MAX_FILES);
    size_t k = 0;

    for (int i = 0; i < n && k < sizeof list; i++)
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", names[i]);
    vt__seterr(err, errlen, "unknown platform '%s' (valid: %s): no %s/%s.profile", name, list,
               pdir, name);
    return VT_EXIT_USAGE;
}

/* here: the command runs on this machine (exec), so the platform is the one
 * detected, never a planning default. */
static int resolve(const vt_cli_opts *o, const char *profiles_dir, int here, resolved *r,
                   char *err, size_t errlen)
{
    vt_detect_opts dopts = { o->sys_root, o->proc_root, profiles_dir };
    vt_detect d;
    const char *pname;
    char path[PATH_MAX];
    int same;

    memset(r, 0, sizeof *r);
    if (vt_detect_run(&dopts, &d, err, errlen))
        return VT_EXIT_PROFILE;
    if (d.warning[0] && !o->memory_mb) {
        /* the platform's own memory variable is garbage: guessing would size
         * the wrong tier, so stop and ask */
        vt__seterr(err, errlen, "cannot determine memory: %s; pass --memory MiB", d.warning);
        return VT_EXIT_DETECT;
    }
    if (o->platform)
        pname = o->platform;
    else if (strcmp(d.platform, "host") != 0 || here)
        pname = d.platform;
    else
        pname = o->memory_mb ? "lambda" : "host";
    /* Detected limits describe this machine: use them only for the platform
     * we are running on (or for host, which is this machine by definition). */
    same = strcmp(pname, d.platform) == 0 || strcmp(pname, "host") == 0;
    snprintf(path, sizeof path, "%s/%s.profile", profiles_dir, pname);
    if (o->platform && access(path, F_OK) != 0)
        return unknown_platform(profiles_dir, pname, err, errlen);
    if (vt_platform_load(profiles_dir, pname, &r->plat, err, errlen))
        return VT_EXIT_PROFILE;

    r->in.plat = &r->plat;
    r->in.workload = o->workload;
    r->in.workers = o->workers;
    r->in.plugin = o->plugin;
    /* this machine's /dev/shm counts only for a plan that runs here */
    r->in.no_shm = (same || here) && !d.ipc_shm;
    if (o->memory_mb) {
        r->in.memory_mb = o->memory_mb;
        snprintf(r->memory_src, sizeof r->memory_src, "--memory");
    } else if (same && d.memory_mb > 0) {
        r->in.memory_mb = d.memory_mb;
        snprintf(r->memory_src, sizeof r->memory_src, "detected: %s", d.memory_src);
        /* a bare host's RAM, not a platform tier: may exceed a profile's cap */
        if (r->in.memory_mb > r->plat.memory_max_mb && d.platform_memory_mb == 0)
            r->in.memory_mb = r->plat.memory_max_mb;
        if (strcmp(pname, "kubernetes") == 0 && d.platform_memory_mb == 0 &&
            d.cg_memory_mb <= 0)
            add_warn(r, "kubernetes: no memory limit found (%s); sizing for the whole node's "
                     "%ld MiB: set resources.limits.memory, or pass --memory",
                     d.cg_memory_src[0] ? d.cg_memory_src : "no memory cgroup",
                     r->in.memory_mb);
    } else if (same) {
        vt__seterr(err, errlen, "cannot determine memory (%s); pass --memory MiB", d.memory_src);
        return VT_EXIT_DETECT;
    } else {
        vt__seterr(err, errlen, "--platform %s needs --memory MiB when not running on %s",
               pname, pname);
        return VT_EXIT_USAGE;
    }
    if (o->cpus > 0) {
        r->in.cpus = o->cpus;
        r->in.cpus_from_option = 1;
    } else if (same && r->plat.cpu_rule == VT_CPU_GIVEN) {
        if (d.cpus <= 0) {
            vt__seterr(err, errlen, "cannot determine CPUs (%s); pass --cpus N", d.cpus_src);
            return VT_EXIT_DETECT;
        }
        r->in.cpus = d.cpus;
    }
    vt_size_rc rc = vt_sizing_compute(&r->in, &r->s, err, errlen);
    if (rc != VT_SIZE_OK)
        return rc == VT_SIZE_ETOOSMALL ? VT_EXIT_TOOSMALL : VT_EXIT_USAGE;
    if (r->s.minimal)
        add_warn(r, "%s at %ld MiB is below one process's minimum ledger (%ld MiB): a minimal "
                 "profile (one process, %ld MiB block cache, %ld MiB range cache); large "
                 "windows may not fit", pname, r->in.memory_mb, r->s.min_ledger_mb,
                 r->s.cachemax_mb, r->s.range_cache_mb);
    /* GDAL_DRIVER_PATH: --plugin-dir; else tunerd's own install when the
     * command runs here (exec) or sizes this machine; else (planning for
     * another platform) its profile's. */
    if (o->plugin_dir)
        snprintf(r->plugin_dir, sizeof r->plugin_dir, "%s", o->plugin_dir);
    else if (!here && !same && r->plat.plugin_dir[0])
        snprintf(r->plugin_dir, sizeof r->plugin_dir, "%s", r->plat.plugin_dir);
    else
        own_plugin_dir(r->plugin_dir, sizeof r->plugin_dir);
    if (o->plugin && (here || same || o->plugin_dir) && !holds_plugin(r->plugin_dir))
        add_warn(r, "GDAL_DRIVER_PATH=%s holds no gdal_vsitune.so: GDAL will run without "
                 "vsitune (install it there, or pass --plugin-dir)", r->plugin_dir);
    if (vt_envblock_build(&r->plat, &r->s, o->workload, o->plugin, r->plugin_dir, &r->env)) {
        vt__seterr(err, errlen, "%s.profile: too many env.NAME lines", pname);
        return VT_EXIT_PROFILE;
    }
    return VT_EXIT_OK;
}

static void print_warnings(const resolved *r)
{
    for (int i = 0; i < r->n_warn; i++)
        fprintf(stderr, "tunerd: warning: %s\n", r->warn[i]);
}

int vt__cmd_profile(const vt_cli_opts *o, const char *pdir, char *err, size_t errlen)
{
    static resolved r;
    int rc = resolve(o, pdir, 0, &r, err, errlen);

    if (rc)
        return rc;
    print_warnings(&r);
    vt_emit_ctx ctx = { &r.plat, &r.in, &r.s, &r.env, r.memory_src };
    if (vt_emit(stdout, o->format, &ctx)) {
        vt__seterr(err, errlen, "cannot write the profile: %s", strerror(errno));
        return VT_EXIT_INTERNAL;
    }
    return VT_EXIT_OK;
}

int vt__cmd_exec_plain(char **cmd, char *err, size_t errlen)
{
    execvp(cmd[0], cmd);
    vt__seterr(err, errlen, "exec %s: %s", cmd[0], strerror(errno));
    return errno == ENOENT ? VT_EXIT_NOTFOUND : VT_EXIT_NOEXEC;
}

/* The directory the plugin will publish its counters in: created 0700, or
 * an existing real directory of ours (never a symlink or someone else's
 * directory in a shared /tmp, where the plugin's files could be redirected).
 * Returns 0, or -1 with the reason in err. */
static int ensure_stats_dir(const char *path, char *err, size_t errlen)
{
    struct stat st;

    if (mkdir(path, 0700) == 0)
        return 0;
    if (errno != EEXIST) {
        vt__seterr(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        vt__seterr(err, errlen, "%s exists and is not a directory", path);
        return -1;
    }
    if (st.st_uid != geteuid()) {
        vt__seterr(err, errlen, "%s belongs to uid %ld, not to this user", path,
                   (long)st.st_uid);
        return -1;
    }
    return 0;
}

/* exec: create VSITUNE_STATS_DIR; a profile's value that cannot be used is
 * dropped (the plugin then publishes nothing), a caller's is kept. */
static void prepare_stats_dir(const vt_envblock *env, int verbose)
{
    const char *mine = vt_envblock_get(env, "VSITUNE_STATS_DIR");
    const char *have = getenv("VSITUNE_STATS_DIR");
    char why[PATH_MAX + 128];

    if (!have || !*have || ensure_stats_dir(have, why, sizeof why) == 0) {
        if (verbose && have && *have)
            fprintf(stderr, "tunerd: counters directory %s ready\n", have);
        return;
    }
    if (mine && strcmp(mine, have) == 0) {
        fprintf(stderr, "tunerd: warning: %s; VSITUNE_STATS_DIR not set\n", why);
        unsetenv("VSITUNE_STATS_DIR");
    } else {
        fprintf(stderr, "tunerd: warning: VSITUNE_STATS_DIR: %s\n", why);
    }
}

static const char *env_get(const char *name)
{
    return getenv(name);
}

int vt__cmd_exec(const vt_cli_opts *o, const char *pdir, char *err, size_t errlen)
{
    static resolved r;
    char warn[1024];
    int rc = resolve(o, pdir, 1, &r, err, errlen);

    if (rc)
        goto fail;
    print_warnings(&r);
    for (int i = 0; i < r.env.n; i++) {
        const vt_env_var *v = &r.env.vars[i];
        const char *have = getenv(v->name);
        if (have) {
            if (o->verbose)
                fprintf(stderr, "tunerd: kept %s=%s (set by caller; profile says %s)\n",
                        v->name, have, v->value);
            continue;
        }
        if (setenv(v->name, v->value, 0) != 0) {
            vt__seterr(err, errlen, "setenv %s: %s", v->name, strerror(errno));
            rc = VT_EXIT_INTERNAL;
            goto fail;
        }
        if (o->verbose)
            fprintf(stderr, "tunerd: set %s=%s\n", v->name, v->value);
    }
    if (vt_kept_check(&r.in, &r.s, env_get, warn, sizeof warn))
        fprintf(stderr, "tunerd: warning: %s\n", warn);
    prepare_stats_dir(&r.env, o->verbose);
    return vt__cmd_exec_plain(o->cmd, err, errlen);
fail:
    if (!o->fail_open)
        return rc;
    fprintf(stderr, "tunerd: warning: %s; running %s without a profile\n", err, o->cmd[0]);
    return vt__cmd_exec_plain(o->cmd, err, errlen);
}

int vt__cmd_detect(const vt_cli_opts *o, const char *pdir, char *err, size_t errlen)
{
    vt_detect_opts dopts = { o->sys_root, o->proc_root, pdir };
    vt_detect d;

    if (vt_detect_run(&dopts, &d, err, errlen))
        return VT_EXIT_PROFILE;
    if (o->json)
        vt_detect_print_json(stdout, &d);
    else
        vt_detect_print(stdout, &d);
    if (fflush(stdout) != 0) {
        vt__seterr(err, errlen, "cannot write: %s", strerror(errno));
        return VT_EXIT_INTERNAL;
    }
    return VT_EXIT_OK;
}

int vt__cmd_check(const char *pdir)
{
    char err[1024];
    int bad = 0, n = 0;
    DIR *dir = opendir(pdir);
    struct dirent *de;

    if (!dir) {
        fprintf(stderr, "tunerd: %s: %s\n", pdir, strerror(errno));
        return VT_EXIT_PROFILE;
    }
    while ((de = readdir(dir)) != NULL) {
        size_t l = strlen(de->d_name);
        char stem[256];
        vt_platform p;
        if (l < 9 || strcmp(de->d_name + l - 8, ".profile") != 0 || l - 8 >= sizeof stem)
            continue;
        memcpy(stem, de->d_name, l - 8);
        stem[l - 8] = '\0';
        n++;
        if (vt_platform_load(pdir, stem, &p, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            bad++;
        } else {
            printf("%s/%s: ok\n", pdir, de->d_name);
        }
    }
    closedir(dir);
    for (int i = 0; vt_platform_names[i]; i++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/%s.profile", pdir, vt_platform_names[i]);
        if (access(path, R_OK) != 0) {
            fprintf(stderr, "%s: missing (every known platform needs a profile)\n", path);
            bad++;
        }
    }
    if (n == 0)
        fprintf(stderr, "%s: no .profile files\n", pdir);
    return bad || n == 0 ? VT_EXIT_PROFILE : VT_EXIT_OK;
}

static const char *proc_root_of(const vt_cli_opts *o)
{
    const char *proc_root = o->proc_root ? o->proc_root : getenv("TUNERD_PROCFS_ROOT");

    return proc_root && *proc_root ? proc_root : "/proc";
}

/* --stats-dir / --dir, else $VSITUNE_STATS_DIR, else NULL. */
static const char *stats_dir_of(const vt_cli_opts *o)
{
    const char *dir = o->stats_dir ? o->stats_dir : getenv("VSITUNE_STATS_DIR");

    return dir && *dir ? dir : NULL;
}

static const char *sys_root_of(const vt_cli_opts *o)
{
    const char *sys_root = o->sys_root ? o->sys_root : getenv("TUNERD_SYSFS_ROOT");

    return sys_root && *sys_root ? sys_root : "/sys";
}

/* What one /metrics scrape reads; the tables live as long as the server. */
typedef struct scrape_ctx {
    const vt_cli_opts *o;
    vt_watch_proc procs[VT_WATCH_MAX];
    vt_stats_entry *stats;   /* VT_STATSDIR_MAX entries, or NULL */
    vt_cgroup_mem cg;
} scrape_ctx;

static int render_scrape(FILE *f, void *arg)
{
    scrape_ctx *c = arg;
    const vt_cli_opts *o = c->o;
    const char *proc_root = proc_root_of(o), *sdir = stats_dir_of(o);
    char err[512];
    int found, n, ns = 0;
    vt_prom_in in = { 0 };

    n = vt_watch_scan(proc_root, o->match, c->procs, VT_WATCH_MAX, &found, err, sizeof err);
    if (n < 0)
        return -1;
    if (sdir && c->stats) {
        ns = vt_stats_scan(sdir, proc_root, c->stats, VT_STATSDIR_MAX, &found, err, sizeof err);
        if (ns < 0)
            ns = 0; /* the directory may not exist yet: no counters, still memory */
    }
    vt__cgroup_memory(sys_root_of(o), proc_root, &c->cg);
    in.stats = c->stats;
    in.n_stats = ns;
    in.stats_dir_given = sdir != NULL;
    in.procs = c->procs;
    in.n_procs = n;
    in.cg = &c->cg;
    return vt_prom_write(f, &in);
}

static void print_cgroup_line(const vt_cgroup_mem *cg)
{
    if (!cg->version) {
        printf("# cgroup: none found\n");
        return;
    }
    printf("# cgroup v%d %s:", cg->version, cg->dir);
    if (cg->has_usage)
        printf(" usage %.1f MiB", (double)cg->usage_bytes / 1048576.0);
    if (cg->has_limit)
        printf(", limit %.1f MiB", (double)cg->limit_bytes / 1048576.0);
    else
        printf(", no limit");
    if (cg->has_oom)
        printf(", oom_kill %llu", (unsigned long long)cg->oom_kills);
    putchar('\n');
}

/* watch: bounded by --count; sleeps --interval between samples. With
 * --listen, serves /metrics instead (until a signal, or --count scrapes). */
int vt__cmd_watch(const vt_cli_opts *o, char *err, size_t errlen)
{
    static vt_watch_proc procs[VT_WATCH_MAX];
    const char *proc_root = proc_root_of(o), *sdir = stats_dir_of(o);

    if (o->listen) {
        static scrape_ctx ctx;
        int rc;
        ctx.o = o;
        ctx.stats = sdir ? calloc(VT_STATSDIR_MAX, sizeof *ctx.stats) : NULL;
        if (sdir && !ctx.stats) {
            vt__seterr(err, errlen, "out of memory");
            return VT_EXIT_INTERNAL;
        }
        rc = vt_metrics_serve(o->listen, o->count_given ? o->count : 0, render_scrape, &ctx,
                              err, errlen);
        free(ctx.stats);
        return rc;
    }
    printf("# tunerd watch: processes mapping '%s', %ld sample(s) every %.1f s", o->match,
           o->count, o->interval_s);
    if (sdir)
        printf("; vsitune counters from %s", sdir);
    printf("\n%-9s %8s %9s %9s %9s", "time", "pid", "rss_mib", "pss_mib", "anon_mib");
    if (sdir)
        printf(" %9s %9s", "requests", "cache_mib");
    printf("  %s\n", "command");
    for (long i = 0; i < o->count; i++) {
        static vt_stats_rec recs[VT_WATCH_MAX];
        static const vt_stats_rec *shared[VT_WATCH_MAX];
        int found, n_shared = 0, n = vt_watch_scan(proc_root, o->match, procs, VT_WATCH_MAX,
                                                   &found, err, errlen);
        vt_cgroup_mem cg;
        if (n < 0)
            return VT_EXIT_DETECT;
        for (int k = 0; sdir && k < n; k++) {
            vt_stats_rec *r = &recs[k];
            if (vt_stats_lookup(sdir, proc_root, procs[k].pid, r) == 0) {
                procs[k].has_stats = 1;
                procs[k].requests = r->engine.requests;
                procs[k].cache_bytes = r->cache.retained_bytes;
                if (r->shared.present)
                    shared[n_shared++] = r;
            }
        }
        char when[16];
        time_t t = time(NULL);
        struct tm tm;
        strftime(when, sizeof when, "%H:%M:%S", localtime_r(&t, &tm));
        vt_watch_print(stdout, when, procs, n, found, sdir != NULL);
        vt_stats_print_shared(stdout, shared, n_shared);
        vt__cgroup_memory(sys_root_of(o), proc_root, &cg);
        print_cgroup_line(&cg);
        if (fflush(stdout) != 0) {
            vt__seterr(err, errlen, "cannot write: %s", strerror(errno));
            return VT_EXIT_INTERNAL;
        }
        if (i + 1 < o->count) {
            struct timespec ts = { (time_t)o->interval_s,
                                   (long)((o->interval_s - (double)(time_t)o->interval_s) * 1e9) };
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
        }
    }
    return VT_EXIT_OK;
}

/* stats: one pass over the directory; --clean after the listing was made,
 * so the post-mortem of what is removed is printed once. */
int vt__cmd_stats(const vt_cli_opts *o, char *err, size_t errlen)
{
    const char *proc_root = proc_root_of(o), *dir = stats_dir_of(o);
    vt_stats_entry *e = NULL;
    vt_cgroup_mem *cg = NULL;
    int n, found, rc = VT_EXIT_OK;

    if (!dir) {
        vt__seterr(err, errlen, "stats needs a directory: --dir DIR or VSITUNE_STATS_DIR");
        rc = VT_EXIT_USAGE;
        goto out;
    }
    /* Without a readable /proc every process would look gone (and --clean
     * would remove the files of live ones): refuse instead. */
    if (access(proc_root, R_OK | X_OK) != 0) {
        vt__seterr(err, errlen, "%s: %s (stats needs /proc to tell live processes from dead)",
                   proc_root, strerror(errno));
        rc = VT_EXIT_DETECT;
        goto out;
    }
    e = calloc(VT_STATSDIR_MAX, sizeof *e);
    cg = calloc(1, sizeof *cg);
    if (!e || !cg) {
        vt__seterr(err, errlen, "out of memory");
        rc = VT_EXIT_INTERNAL;
        goto out;
    }
    n = vt_stats_scan(dir, proc_root, e, VT_STATSDIR_MAX, &found, err, errlen);
    if (n < 0) {
        rc = VT_EXIT_STATS;
        goto out;
    }
    if (o->clean && vt_stats_clean(dir, e, n, err, errlen) > 0)
        rc = VT_EXIT_STATS;
    vt__cgroup_memory(sys_root_of(o), proc_root, cg);
    if (o->stats_format == VT_STATS_JSON) {
        vt_stats_print_json(stdout, dir, e, n, found, time(NULL), cg);
    } else if (o->stats_format == VT_STATS_PROMETHEUS) {
        vt_prom_in in = { 0 };
        in.stats = e;
        in.n_stats = n;
        in.stats_dir_given = 1;
        in.cg = cg;
        vt_prom_write(stdout, &in);
    } else {
        vt_stats_print(stdout, dir, e, n, found, time(NULL), cg);
    }
    if (fflush(stdout) != 0) {
        vt__seterr(err, errlen, "cannot write: %s", strerror(errno));
        rc = VT_EXIT_INTERNAL;
    }
out:
    free(e);
    free(cg);
    return rc;
}
