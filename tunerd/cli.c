/* cli.c: tunerd's commands (profile, detect, exec, check-profiles, watch).
 *
 * Every bad input ends in one line on stderr, "tunerd: <problem> (valid:
 * ...)", and a documented exit status (cli.h); nothing here waits on
 * anything, so bad input can never hang. Platform choice: --platform wins;
 * else the platform detected from its variables; else, when --memory is
 * given, lambda (a bare memory tier is a Lambda question: the headline
 * `tunerd profile --memory 10240`); else host, sized from what detect finds. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "detect.h"
#include "envblock.h"
#include "platform.h"
#include "watch.h"

#define MAX_WORKERS_OPT 4096
#define MAX_CPUS_OPT 1024

static const char usage_text[] =
"usage: tunerd profile [--memory MB] [--platform P] [--cpus N] [--workload W]\n"
"                      [--workers N] [--format F] [--no-plugin] [--plugin-dir DIR]\n"
"       tunerd detect [--json] [--sys-root DIR] [--proc-root DIR]\n"
"       tunerd exec [profile options] [-v] [--fail-open] -- CMD [ARGS...]\n"
"       tunerd check-profiles [--profiles DIR]\n"
"       tunerd watch [--interval S] [--count N] [--match STR] [--proc-root DIR]\n"
"       tunerd --help | --version\n"
"\n"
"profile   print the environment block for a platform and memory tier\n"
"detect    print the platform, memory and CPU limits found, and where from\n"
"exec      detect, set the profile's variables the caller did not set, exec CMD\n"
"check-profiles  validate every profiles/*.profile file (file:line: message)\n"
"watch     RSS, PSS and anonymous MB of each process that mapped libgdal,\n"
"          --count samples (default 1, max 1000000) every --interval seconds\n"
"          (default 1, 0.1..3600)\n"
"\n"
"options:\n"
"  --memory MB       memory tier in MB, 1..1048576 (default: detected)\n"
"  --platform P      lambda | cloudrun | azure-functions | kubernetes | host\n"
"                    (default: detected from the platform's variables; lambda\n"
"                    when --memory is given and none is detected; else host)\n"
"  --cpus N          vCPU for cloudrun/kubernetes/host (default: detected)\n"
"  --workload W      batch (processes, CPU work after reads; default) | tiles\n"
"                    (threads, I/O-bound tile serving)\n"
"  --workers N       worker processes (default: from the sizing model)\n"
"  --format F        env | shell | dotenv | json | lambda-json | terraform |\n"
"                    dockerfile | k8s-yaml (default: env)\n"
"  --no-plugin       stock GDAL settings instead of the vsitune plugin\n"
"  --plugin-dir DIR  GDAL_DRIVER_PATH to emit, ':'-separated absolute paths\n"
"                    (default: the platform's, else " TUNERD_PLUGIN_DIR ")\n"
"  --profiles DIR    platform profiles (default: $TUNERD_PROFILES_DIR, then\n"
"                    <exe>/../share/vsitune/profiles, then the install dir)\n"
"  --sys-root DIR    read /sys from DIR (or $TUNERD_SYSFS_ROOT)\n"
"  --proc-root DIR   read /proc from DIR (or $TUNERD_PROCFS_ROOT)\n"
"  --json            detect: print JSON\n"
"  -v, --verbose     exec: report each variable set or kept on stderr\n"
"  --fail-open       exec: if sizing fails, warn and run CMD unchanged\n"
"\n"
"exit status:\n"
"  0    success\n"
"  1    internal error (write error, out of memory)\n"
"  2    bad option or value, or a request the platform contradicts\n"
"  3    the memory tier is too small for the minimum ledger\n"
"  4    a platform profile file is missing or invalid\n"
"  5    memory or CPUs could not be determined (pass --memory / --cpus);\n"
"       watch: /proc cannot be read\n"
"  126  exec: CMD is not executable     127  exec: CMD not found\n"
"\n"
"The sizing model and its sources: docs/tuning.md.\n";

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int parse_whole(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;

    if (!*s)
        return -1;
    for (const char *p = (*s == '-' ? s + 1 : s); *p; p++)
        if (*p < '0' || *p > '9')
            return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno == ERANGE)
        return -2;
    if (*end)
        return -1;
    if (v < lo || v > hi)
        return -2;
    *out = v;
    return 0;
}

/* "/a" or "/a:/b:...": every element absolute and non-empty. */
static int valid_path_list(const char *s)
{
    for (;;) {
        if (*s != '/')
            return 0;
        s = strchr(s, ':');
        if (!s)
            return 1;
        s++;
    }
}

int vt_cli_parse(int argc, char **argv, vt_cli_opts *o, char *err, size_t errlen)
{
    int i = 1;

    memset(o, 0, sizeof *o);
    o->plugin = 1;
    o->format = VT_FMT_ENV;
    o->interval_s = 1.0;
    o->count = 1;
    o->match = "libgdal";
    err[0] = '\0';

    if (argc < 2) {
        seterr(err, errlen, "no command (valid: profile, detect, exec, check-profiles, watch; "
               "see tunerd --help)");
        return VT_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        o->help = 1;
        return VT_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        o->version = 1;
        return VT_EXIT_OK;
    }
    o->command = argv[1];
    if (strcmp(o->command, "profile") && strcmp(o->command, "detect") &&
        strcmp(o->command, "exec") && strcmp(o->command, "check-profiles") &&
        strcmp(o->command, "watch")) {
        seterr(err, errlen, "unknown command '%s' (valid: profile, detect, exec, "
               "check-profiles, watch)", o->command);
        return VT_EXIT_USAGE;
    }
    for (i = 2; i < argc; i++) {
        char *arg = argv[i], *val = NULL, name[64];
        char *eq;

        if (strcmp(arg, "--") == 0) {
            if (strcmp(o->command, "exec") != 0) {
                seterr(err, errlen, "'--' is only valid with exec");
                return VT_EXIT_USAGE;
            }
            o->cmd = &argv[i + 1];
            if (!o->cmd[0]) {
                seterr(err, errlen, "exec: no command after '--'");
                return VT_EXIT_USAGE;
            }
            break;
        }
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            o->help = 1;
            return VT_EXIT_OK;
        }
        if (strncmp(arg, "--", 2) != 0 && strcmp(arg, "-v") != 0) {
            seterr(err, errlen, "unexpected argument '%s'%s", arg,
                   strcmp(o->command, "exec") == 0 ? " (put the command after '--')" : "");
            return VT_EXIT_USAGE;
        }
        snprintf(name, sizeof name, "%s", arg);
        eq = strchr(name, '=');
        if (eq) {
            *eq = '\0';
            val = arg + (eq - name) + 1;
        }
        /* flags */
        if (!strcmp(name, "--no-plugin") || !strcmp(name, "--json") ||
            !strcmp(name, "-v") || !strcmp(name, "--verbose") ||
            !strcmp(name, "--fail-open")) {
            if (val) {
                seterr(err, errlen, "%s takes no value", name);
                return VT_EXIT_USAGE;
            }
            if (!strcmp(name, "--no-plugin"))
                o->plugin = 0;
            else if (!strcmp(name, "--json"))
                o->json = 1;
            else if (!strcmp(name, "--fail-open"))
                o->fail_open = 1;
            else
                o->verbose = 1;
            continue;
        }
        static const char *const with_value[] = {
            "--memory", "--platform", "--cpus", "--workload", "--workers", "--format",
            "--profiles", "--plugin-dir", "--sys-root", "--proc-root", "--interval",
            "--count", "--match", NULL
        };
        int known = 0;
        for (int k = 0; with_value[k]; k++)
            known |= strcmp(name, with_value[k]) == 0;
        if (!known) {
            seterr(err, errlen, "unknown option '%s' (valid: --memory, --platform, --cpus, "
                   "--workload, --workers, --format, --no-plugin, --plugin-dir, --profiles, "
                   "--sys-root, --proc-root, --json, --verbose, --fail-open, --interval, --count, "
                   "--match)", name);
            return VT_EXIT_USAGE;
        }
        if (!val) {
            if (i + 1 >= argc) {
                seterr(err, errlen, "%s needs a value", name);
                return VT_EXIT_USAGE;
            }
            val = argv[++i];
        }
        if (!strcmp(name, "--memory")) {
            long v;
            int r = parse_whole(val, 1, VT_SIZE_MAX_MEMORY_MB, &v);
            if (r == -1) {
                seterr(err, errlen, "--memory '%s' is not a whole number of MB "
                       "(valid: 1..%ld)", val, VT_SIZE_MAX_MEMORY_MB);
                return VT_EXIT_USAGE;
            }
            if (r == -2) {
                seterr(err, errlen, "--memory %s is out of range (valid: 1..%ld MB)", val,
                       VT_SIZE_MAX_MEMORY_MB);
                return VT_EXIT_USAGE;
            }
            o->memory_mb = v;
        } else if (!strcmp(name, "--workers")) {
            long v;
            int r = parse_whole(val, 1, MAX_WORKERS_OPT, &v);
            if (r) {
                seterr(err, errlen, "--workers '%s' is not a whole number from 1 to %d",
                       val, MAX_WORKERS_OPT);
                return VT_EXIT_USAGE;
            }
            o->workers = (int)v;
        } else if (!strcmp(name, "--cpus")) {
            char *end;
            errno = 0;
            double v = strtod(val, &end);
            if (!*val || *end || errno || !isfinite(v) || !(v >= 0.01 && v <= MAX_CPUS_OPT) ||
                strspn(val, "0123456789.") != strlen(val)) {
                seterr(err, errlen, "--cpus '%s' is not a number from 0.01 to %d", val,
                       MAX_CPUS_OPT);
                return VT_EXIT_USAGE;
            }
            o->cpus = v;
        } else if (!strcmp(name, "--platform")) {
            if (!vt_platform_known(val)) {
                seterr(err, errlen, "unknown platform '%s' (valid: lambda, cloudrun, "
                       "azure-functions, kubernetes, host)", val);
                return VT_EXIT_USAGE;
            }
            o->platform = val;
        } else if (!strcmp(name, "--workload")) {
            if (!strcmp(val, "batch"))
                o->workload = VT_WORKLOAD_BATCH;
            else if (!strcmp(val, "tiles"))
                o->workload = VT_WORKLOAD_TILES;
            else {
                seterr(err, errlen, "unknown workload '%s' (valid: batch, tiles)", val);
                return VT_EXIT_USAGE;
            }
        } else if (!strcmp(name, "--format")) {
            if (vt_format_parse(val, &o->format)) {
                seterr(err, errlen, "unknown format '%s' (valid: %s)", val, vt_format_list());
                return VT_EXIT_USAGE;
            }
        } else if (!strcmp(name, "--profiles")) {
            o->profiles_dir = val;
        } else if (!strcmp(name, "--plugin-dir")) {
            if (!valid_path_list(val)) {
                seterr(err, errlen, "--plugin-dir '%s' must be absolute paths separated "
                       "by ':'", val);
                return VT_EXIT_USAGE;
            }
            o->plugin_dir = val;
        } else if (!strcmp(name, "--sys-root")) {
            o->sys_root = val;
        } else if (!strcmp(name, "--proc-root")) {
            o->proc_root = val;
        } else if (!strcmp(name, "--count")) {
            if (parse_whole(val, 1, 1000000, &o->count)) {
                seterr(err, errlen, "--count '%s' is not a whole number from 1 to 1000000",
                       val);
                return VT_EXIT_USAGE;
            }
        } else if (!strcmp(name, "--interval")) {
            char *end;
            errno = 0;
            double v = strtod(val, &end);
            if (!*val || *end || errno || !isfinite(v) || v < 0.1 || v > 3600 ||
                strspn(val, "0123456789.") != strlen(val)) {
                seterr(err, errlen, "--interval '%s' is not a number of seconds from 0.1 "
                       "to 3600", val);
                return VT_EXIT_USAGE;
            }
            o->interval_s = v;
        } else if (!strcmp(name, "--match")) {
            if (!*val || strchr(val, '\n')) {
                seterr(err, errlen, "--match needs a non-empty one-line string");
                return VT_EXIT_USAGE;
            }
            o->match = val;
        }
    }
    if (!strcmp(o->command, "exec") && !o->cmd) {
        seterr(err, errlen, "exec needs a command: tunerd exec [options] -- CMD [ARGS...]");
        return VT_EXIT_USAGE;
    }
    return VT_EXIT_OK;
}

/* Everything `profile` and `exec` compute. */
typedef struct resolved {
    vt_platform plat;
    vt_sizing_in in;
    vt_sizing s;
    vt_envblock env;
    char memory_src[VT_DETECT_SRC_MAX + 32];
} resolved;

static int resolve(const vt_cli_opts *o, const char *profiles_dir, resolved *r,
                   char *err, size_t errlen)
{
    vt_detect_opts dopts = { o->sys_root, o->proc_root, profiles_dir };
    vt_detect d;
    const char *pname;
    int same;

    memset(r, 0, sizeof *r);
    if (vt_detect_run(&dopts, &d, err, errlen))
        return VT_EXIT_PROFILE;
    if (d.warning[0] && !o->memory_mb) {
        /* the platform's own memory variable is garbage: guessing would size
         * the wrong tier, so stop and ask */
        seterr(err, errlen, "cannot determine memory: %s; pass --memory MB", d.warning);
        return VT_EXIT_DETECT;
    }
    if (o->platform)
        pname = o->platform;
    else if (strcmp(d.platform, "host") != 0)
        pname = d.platform;
    else
        pname = o->memory_mb ? "lambda" : "host";
    /* Detected limits describe this machine: use them only for the platform
     * we are running on (or for host, which is this machine by definition). */
    same = strcmp(pname, d.platform) == 0 || strcmp(pname, "host") == 0;
    if (vt_platform_load(profiles_dir, pname, &r->plat, err, errlen))
        return VT_EXIT_PROFILE;

    r->in.plat = &r->plat;
    r->in.workload = o->workload;
    r->in.workers = o->workers;
    r->in.plugin = o->plugin;
    if (o->memory_mb) {
        r->in.memory_mb = o->memory_mb;
        snprintf(r->memory_src, sizeof r->memory_src, "--memory");
    } else if (same && d.memory_mb > 0) {
        r->in.memory_mb = d.memory_mb;
        snprintf(r->memory_src, sizeof r->memory_src, "detected: %s", d.memory_src);
        /* a bare host's RAM, not a platform tier: may exceed a profile's cap */
        if (r->in.memory_mb > r->plat.memory_max_mb && d.platform_memory_mb == 0)
            r->in.memory_mb = r->plat.memory_max_mb;
    } else if (same) {
        seterr(err, errlen, "cannot determine memory (%s); pass --memory MB", d.memory_src);
        return VT_EXIT_DETECT;
    } else {
        seterr(err, errlen, "--platform %s needs --memory MB when not running on %s",
               pname, pname);
        return VT_EXIT_USAGE;
    }
    if (o->cpus > 0) {
        r->in.cpus = o->cpus;
        r->in.cpus_from_option = 1;
    } else if (same && r->plat.cpu_rule == VT_CPU_GIVEN) {
        if (d.cpus <= 0) {
            seterr(err, errlen, "cannot determine CPUs (%s); pass --cpus N", d.cpus_src);
            return VT_EXIT_DETECT;
        }
        r->in.cpus = d.cpus;
    }
    vt_size_rc rc = vt_sizing_compute(&r->in, &r->s, err, errlen);
    if (rc != VT_SIZE_OK)
        return rc == VT_SIZE_ETOOSMALL ? VT_EXIT_TOOSMALL : VT_EXIT_USAGE;
    if (vt_envblock_build(&r->plat, &r->s, o->workload, o->plugin,
                          o->plugin_dir ? o->plugin_dir : TUNERD_PLUGIN_DIR, &r->env)) {
        seterr(err, errlen, "%s.profile: too many env.NAME lines", pname);
        return VT_EXIT_PROFILE;
    }
    if (o->plugin_dir && o->plugin) /* the option beats the profile's layer path */
        snprintf(r->env.vars[0].value, sizeof r->env.vars[0].value, "%s", o->plugin_dir);
    return VT_EXIT_OK;
}

static int cmd_profile(const vt_cli_opts *o, const char *pdir, char *err, size_t errlen)
{
    resolved r;
    int rc = resolve(o, pdir, &r, err, errlen);

    if (rc)
        return rc;
    vt_emit_ctx ctx = { &r.plat, &r.in, &r.s, &r.env, r.memory_src };
    if (vt_emit(stdout, o->format, &ctx)) {
        seterr(err, errlen, "cannot write the profile: %s", strerror(errno));
        return VT_EXIT_INTERNAL;
    }
    return VT_EXIT_OK;
}

static int exec_cmd(char **cmd, char *err, size_t errlen)
{
    execvp(cmd[0], cmd);
    seterr(err, errlen, "exec %s: %s", cmd[0], strerror(errno));
    return errno == ENOENT ? VT_EXIT_NOTFOUND : VT_EXIT_NOEXEC;
}

static int cmd_exec(const vt_cli_opts *o, const char *pdir, char *err, size_t errlen)
{
    resolved r;
    int rc = resolve(o, pdir, &r, err, errlen);

    if (rc) {
        if (!o->fail_open)
            return rc;
        fprintf(stderr, "tunerd: warning: %s; running %s without a profile\n", err,
                o->cmd[0]);
        return exec_cmd(o->cmd, err, errlen);
    }
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
            seterr(err, errlen, "setenv %s: %s", v->name, strerror(errno));
            return VT_EXIT_INTERNAL;
        }
        if (o->verbose)
            fprintf(stderr, "tunerd: set %s=%s\n", v->name, v->value);
    }
    return exec_cmd(o->cmd, err, errlen);
}

static int cmd_detect(const vt_cli_opts *o, const char *pdir, char *err, size_t errlen)
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
        seterr(err, errlen, "cannot write: %s", strerror(errno));
        return VT_EXIT_INTERNAL;
    }
    return VT_EXIT_OK;
}

static int cmd_check(const char *pdir)
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

/* watch: bounded by --count; sleeps --interval between samples. */
static int cmd_watch(const vt_cli_opts *o, char *err, size_t errlen)
{
    static vt_watch_proc procs[VT_WATCH_MAX];
    const char *proc_root = o->proc_root ? o->proc_root : getenv("TUNERD_PROCFS_ROOT");

    if (!proc_root || !*proc_root)
        proc_root = "/proc";
    printf("# tunerd watch: processes mapping '%s', %ld sample(s) every %.1f s\n", o->match,
           o->count, o->interval_s);
    printf("%-9s %8s %9s %9s %9s  %s\n", "time", "pid", "rss_mb", "pss_mb", "anon_mb",
           "command");
    for (long i = 0; i < o->count; i++) {
        int found, n = vt_watch_scan(proc_root, o->match, procs, VT_WATCH_MAX, &found,
                                     err, errlen);
        if (n < 0)
            return VT_EXIT_DETECT;
        char when[16];
        time_t t = time(NULL);
        struct tm tm;
        strftime(when, sizeof when, "%H:%M:%S", localtime_r(&t, &tm));
        vt_watch_print(stdout, when, procs, n, found);
        if (fflush(stdout) != 0) {
            seterr(err, errlen, "cannot write: %s", strerror(errno));
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

int vt_cli_main(int argc, char **argv)
{
    vt_cli_opts o;
    char err[1024], pdir[PATH_MAX];
    int rc = vt_cli_parse(argc, argv, &o, err, sizeof err);

    if (rc)
        goto out;
    if (o.help) {
        fputs(usage_text, stdout);
        return fflush(stdout) ? VT_EXIT_INTERNAL : VT_EXIT_OK;
    }
    if (o.version) {
        printf("tunerd %s\n", VT_VERSION);
        return fflush(stdout) ? VT_EXIT_INTERNAL : VT_EXIT_OK;
    }
    if (!strcmp(o.command, "watch")) {
        rc = cmd_watch(&o, err, sizeof err);
        goto out;
    }
    if (vt_platform_find_dir(o.profiles_dir, pdir, sizeof pdir, err, sizeof err)) {
        if (o.fail_open && o.cmd) {
            fprintf(stderr, "tunerd: warning: %s; running %s without a profile\n", err,
                    o.cmd[0]);
            rc = exec_cmd(o.cmd, err, sizeof err);
            goto out;
        }
        rc = VT_EXIT_PROFILE;
        goto out;
    }
    if (!strcmp(o.command, "profile"))
        rc = cmd_profile(&o, pdir, err, sizeof err);
    else if (!strcmp(o.command, "detect"))
        rc = cmd_detect(&o, pdir, err, sizeof err);
    else if (!strcmp(o.command, "exec"))
        rc = cmd_exec(&o, pdir, err, sizeof err);
    else
        rc = cmd_check(pdir);
out:
    if (rc && err[0])
        fprintf(stderr, "tunerd: %s\n", err);
    return rc;
}
