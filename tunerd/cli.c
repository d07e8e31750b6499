/* cli.c: tunerd's command line: usage, option parsing, dispatch.
 *
 * Every bad input ends in one line on stderr, "tunerd: <problem> (valid:
 * ...)", and a documented exit status (cli.h); nothing here waits on
 * anything, so bad input can never hang. The commands themselves live in
 * commands.c. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "metricsd.h"
#include "errbuf.h"
#include "platform.h"

#define MAX_WORKERS_OPT 4096
#define MAX_CPUS_OPT 1024

static const char usage_text[] =
"usage: tunerd profile [--memory MIB] [--platform P] [--cpus N] [--workload W]\n"
"                      [--workers N] [--format F] [--no-plugin] [--plugin-dir DIR]\n"
"       tunerd detect [--json] [--sys-root DIR] [--proc-root DIR]\n"
"       tunerd exec [profile options] [-v] [--fail-open] [--options-env VAR]\n"
"                   -- CMD [ARGS...]\n"
"       tunerd check-profiles [--profiles DIR]\n"
"       tunerd watch [--interval S] [--count N] [--match STR] [--proc-root DIR]\n"
"                    [--stats-dir DIR] [--listen ADDR:PORT]\n"
"       tunerd stats [--dir DIR] [--json | --format table|json|prometheus] [--clean]\n"
"                    [--proc-root DIR]\n"
"       tunerd --help | --version\n"
"\n"
"profile   print the environment block for a platform and memory tier\n"
"detect    print the platform, memory and CPU limits found, and where from\n"
"exec      detect, set the profile's variables the caller did not set, exec CMD\n"
"check-profiles  validate every profiles/*.profile file (file:line: message)\n"
"watch     RSS, PSS and anonymous MiB of each process that mapped libgdal,\n"
"          --count samples (default 1, max 1000000) every --interval seconds\n"
"          (default 1, 0.1..3600); with the plugin's counters (--stats-dir,\n"
"          default $VSITUNE_STATS_DIR) also each process's requests and cache MiB;\n"
"          with --listen, serve all of it (and the counters) at /metrics for\n"
"          Prometheus until SIGTERM (or --count scrapes)\n"
"stats     the counters each vsitune process left in --dir (default\n"
"          $VSITUNE_STATS_DIR): one row per process, state running, exited,\n"
"          ended (a fork child gone with no OOM kill in its cgroup since) or\n"
"          killed-or-gone (no clean exit: OOM kill, signal, crash); --clean\n"
"          then removes the files of processes that are not running;\n"
"          --format prometheus for node-exporter's textfile collector\n"
"\n"
"options:\n"
"  --memory MIB      memory tier in MiB (what Lambda and Cloud Run call MB),\n"
"                    1..1048576 (default: detected)\n"
"  --platform P      lambda | cloudrun | azure-functions | kubernetes | host, or\n"
"                    any other <P>.profile in the profiles directory (default:\n"
"                    detected from the platforms' variables; for profile,\n"
"                    lambda when --memory is given and none is detected; else host)\n"
"  --cpus N          vCPU for cloudrun/kubernetes/host (default: detected)\n"
"  --workload W      batch (processes, CPU work after reads; default) | tiles\n"
"                    (threads, I/O-bound tile serving)\n"
"  --workers N       worker processes (default: from the sizing model)\n"
"  --format F        env | shell | dotenv | json | lambda-json | terraform |\n"
"                    dockerfile | k8s-yaml (default: env)\n"
"  --no-plugin       stock GDAL settings instead of the vsitune plugin\n"
"  --plugin-dir DIR  GDAL_DRIVER_PATH to emit, ':'-separated absolute paths\n"
"                    (default: <tunerd's dir>/" TUNERD_PLUGIN_RELDIR ", tunerd's own\n"
"                    install; for another platform than this one, its profile's)\n"
"  --profiles DIR    platform profiles (default: $TUNERD_PROFILES_DIR, then\n"
"                    <exe>/../share/vsitune/profiles, then the install dir)\n"
"  --sys-root DIR    read /sys from DIR (or $TUNERD_SYSFS_ROOT)\n"
"  --proc-root DIR   read /proc from DIR (or $TUNERD_PROCFS_ROOT)\n"
"  --json            detect, stats: print JSON\n"
"  --dir DIR         stats: the VSITUNE_STATS_DIR to read\n"
"  --format F        stats: table (default) | json | prometheus\n"
"  --listen A:P      watch: serve http://A:P/metrics (A numeric; P 0 = any port)\n"
"  --clean           stats: remove the files of exited and killed-or-gone processes\n"
"  --stats-dir DIR   watch: read the plugin's counters from DIR\n"
"  -v, --verbose     exec: report each variable set or kept on stderr\n"
"  --fail-open       exec: if anything fails (a bad option included), warn in\n"
"                    one line and run CMD unchanged\n"
"  --options-env VAR exec: more options from $VAR (blank-separated words)\n"
"\n"
"exit status:\n"
"  0    success\n"
"  1    internal error (write error, out of memory)\n"
"  2    bad option or value, or a request the platform contradicts\n"
"  3    the memory tier is too small for the minimum ledger\n"
"  4    a platform profile file is missing or invalid\n"
"  5    memory or CPUs could not be determined (pass --memory / --cpus);\n"
"       watch, stats: /proc cannot be read\n"
"  6    stats: the directory cannot be read, or --clean could not remove a file\n"
"  126  exec: CMD is not executable     127  exec: CMD not found\n"
"\n"
"The sizing model and its sources: docs/tuning.md.\n";

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
        vt__seterr(err, errlen, "no command (valid: profile, detect, exec, check-profiles, watch, "
               "stats; see tunerd --help)");
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
        strcmp(o->command, "watch") && strcmp(o->command, "stats")) {
        vt__seterr(err, errlen, "unknown command '%s' (valid: profile, detect, exec, "
               "check-profiles, watch, stats)", o->command);
        return VT_EXIT_USAGE;
    }
    for (i = 2; i < argc; i++) {
        char *arg = argv[i], *val = NULL, name[64];
        char *eq;

        if (strcmp(arg, "--") == 0) {
            if (strcmp(o->command, "exec") != 0) {
                vt__seterr(err, errlen, "'--' is only valid with exec");
                return VT_EXIT_USAGE;
            }
            o->cmd = &argv[i + 1];
            if (!o->cmd[0]) {
                vt__seterr(err, errlen, "exec: no command after '--'");
                return VT_EXIT_USAGE;
            }
            break;
        }
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            o->help = 1;
            return VT_EXIT_OK;
        }
        if (strncmp(arg, "--", 2) != 0 && strcmp(arg, "-v") != 0) {
            vt__seterr(err, errlen, "unexpected argument '%s'%s", arg,
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
            !strcmp(name, "--fail-open") || !strcmp(name, "--clean")) {
            if (val) {
                vt__seterr(err, errlen, "%s takes no value", name);
                return VT_EXIT_USAGE;
            }
            if (!strcmp(name, "--no-plugin"))
                o->plugin = 0;
            else if (!strcmp(name, "--json")) {
                o->json = 1;
                o->stats_format = VT_STATS_JSON;
            }
            else if (!strcmp(name, "--fail-open"))
                o->fail_open = 1;
            else if (!strcmp(name, "--clean"))
                o->clean = 1;
            else
                o->verbose = 1;
            continue;
        }
        static const char *const with_value[] = {
            "--memory", "--platform", "--cpus", "--workload", "--workers", "--format",
            "--profiles", "--plugin-dir", "--sys-root", "--proc-root", "--interval",
            "--count", "--match", "--dir", "--stats-dir", "--listen", "--options-env", NULL
        };
        int known = 0;
        for (int k = 0; with_value[k]; k++)
            known |= strcmp(name, with_value[k]) == 0;
        if (!known) {
            vt__seterr(err, errlen, "unknown option '%s' (valid: --memory, --platform, --cpus, "
                   "--workload, --workers, --format, --no-plugin, --plugin-dir, --profiles, "
                   "--sys-root, --proc-root, --json, --verbose, --fail-open, --interval, --count, "
                   "--match, --dir, --clean, --stats-dir, --listen, --options-env)", name);
            return VT_EXIT_USAGE;
        }
        if (!val) {
            if (i + 1 >= argc) {
                vt__seterr(err, errlen, "%s needs a value", name);
                return VT_EXIT_USAGE;
            }
            val = argv[++i];
        }
        if (!strcmp(name, "--memory")) {
            long v;
            int r = parse_whole(val, 1, VT_SIZE_MAX_MEMORY_MB, &v);
            if (r == -1) {
                vt__seterr(err, errlen, "--memory '%s' is not a whole number of MiB "
                       "(valid: 1..%ld)", val, VT_SIZE_MAX_MEMORY_MB);
                return VT_EXIT_USAGE;
            }
            if (r == -2) {
                vt__seterr(err, errlen, "--memory %s is out of range (valid: 1..%ld MiB)", val,
                       VT_SIZE_MAX_MEMORY_MB);
                return VT_EXIT_USAGE;
            }
            o->memory_mb = v;
        } else if (!strcmp(name, "--workers")) {
            long v;
            int r = parse_whole(val, 1, MAX_WORKERS_OPT, &v);
            if (r) {
                vt__seterr(err, errlen, "--workers '%s' is not a whole number from 1 to %d",
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
                vt__seterr(err, errlen, "--cpus '%s' is not a number from 0.01 to %d", val,
                       MAX_CPUS_OPT);
                return VT_EXIT_USAGE;
            }
            o->cpus = v;
        } else if (!strcmp(name, "--platform")) {
            if (!vt_platform_name_ok(val)) {
                vt__seterr(err, errlen, "bad platform name '%s' (the stem of a .profile "
                           "file: lower-case letters, digits, '-' and '_')", val);
                return VT_EXIT_USAGE;
            }
            o->platform = val;
        } else if (!strcmp(name, "--workload")) {
            if (!strcmp(val, "batch"))
                o->workload = VT_WORKLOAD_BATCH;
            else if (!strcmp(val, "tiles"))
                o->workload = VT_WORKLOAD_TILES;
            else {
                vt__seterr(err, errlen, "unknown workload '%s' (valid: batch, tiles)", val);
                return VT_EXIT_USAGE;
            }
        } else if (!strcmp(name, "--format") && !strcmp(o->command, "stats")) {
            if (!strcmp(val, "table"))
                o->stats_format = VT_STATS_TABLE;
            else if (!strcmp(val, "json"))
                o->stats_format = VT_STATS_JSON;
            else if (!strcmp(val, "prometheus"))
                o->stats_format = VT_STATS_PROMETHEUS;
            else {
                vt__seterr(err, errlen, "unknown stats format '%s' (valid: table, json, "
                           "prometheus)", val);
                return VT_EXIT_USAGE;
            }
        } else if (!strcmp(name, "--format")) {
            if (vt_format_parse(val, &o->format)) {
                vt__seterr(err, errlen, "unknown format '%s' (valid: %s)", val, vt_format_list());
                return VT_EXIT_USAGE;
            }
        } else if (!strcmp(name, "--profiles")) {
            o->profiles_dir = val;
        } else if (!strcmp(name, "--plugin-dir")) {
            if (!valid_path_list(val)) {
                vt__seterr(err, errlen, "--plugin-dir '%s' must be absolute paths separated "
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
                vt__seterr(err, errlen, "--count '%s' is not a whole number from 1 to 1000000",
                       val);
                return VT_EXIT_USAGE;
            }
            o->count_given = 1;
        } else if (!strcmp(name, "--listen")) {
            char host[256];
            int port;
            if (strcmp(o->command, "watch") != 0) {
                vt__seterr(err, errlen, "--listen is only valid with watch");
                return VT_EXIT_USAGE;
            }
            if (vt_metrics_parse_listen(val, host, sizeof host, &port, err, errlen))
                return VT_EXIT_USAGE;
            o->listen = val;
        } else if (!strcmp(name, "--options-env")) {
            if (strcmp(o->command, "exec") != 0) {
                vt__seterr(err, errlen, "--options-env is only valid with exec");
                return VT_EXIT_USAGE;
            }
            o->options_env = val;
        } else if (!strcmp(name, "--interval")) {
            char *end;
            errno = 0;
            double v = strtod(val, &end);
            if (!*val || *end || errno || !isfinite(v) || v < 0.1 || v > 3600 ||
                strspn(val, "0123456789.") != strlen(val)) {
                vt__seterr(err, errlen, "--interval '%s' is not a number of seconds from 0.1 "
                       "to 3600", val);
                return VT_EXIT_USAGE;
            }
            o->interval_s = v;
        } else if (!strcmp(name, "--match")) {
            if (!*val || strchr(val, '\n')) {
                vt__seterr(err, errlen, "--match needs a non-empty one-line string");
                return VT_EXIT_USAGE;
            }
            o->match = val;
        } else if (!strcmp(name, "--dir") || !strcmp(name, "--stats-dir")) {
            const char *want = !strcmp(name, "--dir") ? "stats" : "watch";
            if (strcmp(o->command, want) != 0) {
                vt__seterr(err, errlen, "%s is only valid with %s", name, want);
                return VT_EXIT_USAGE;
            }
            if (!*val) {
                vt__seterr(err, errlen, "%s needs a directory", name);
                return VT_EXIT_USAGE;
            }
            o->stats_dir = val;
        }
    }
    if (o->clean && strcmp(o->command, "stats") != 0) {
        vt__seterr(err, errlen, "--clean is only valid with stats");
        return VT_EXIT_USAGE;
    }
    if (!strcmp(o->command, "exec") && !o->cmd) {
        vt__seterr(err, errlen, "exec needs a command: tunerd exec [options] -- CMD [ARGS...]");
        return VT_EXIT_USAGE;
    }
    return VT_EXIT_OK;
}


#define MAX_ENV_WORDS 64

char **vt_cli_merge_options_env(int *argc, char **argv, char **words, char *err,
                                size_t errlen)
{
    const char *var = NULL, *text;
    char *w[MAX_ENV_WORDS], **out;
    int dashes = *argc, nw = 0, n = 0;

    *words = NULL;
    for (int i = 2; i < *argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            dashes = i;
            break;
        }
        if (strcmp(argv[i], "--options-env") == 0 && i + 1 < *argc)
            var = argv[i + 1];
        else if (strncmp(argv[i], "--options-env=", 14) == 0)
            var = argv[i] + 14;
    }
    if (!var || !(text = getenv(var)) || !*text)
        return argv;
    if (!(*words = strdup(text))) {
        vt__seterr(err, errlen, "out of memory");
        return NULL;
    }
    for (char *save = NULL, *t = strtok_r(*words, " \t\n", &save); t;
         t = strtok_r(NULL, " \t\n", &save)) {
        if (strcmp(t, "--") == 0 || nw == MAX_ENV_WORDS) {
            vt__seterr(err, errlen, "%s='%s': %s", var, text, nw == MAX_ENV_WORDS
                       ? "more than 64 words" : "'--' is not an option");
            return NULL;
        }
        w[nw++] = t;
    }
    out = malloc(sizeof *out * (size_t)(*argc + nw + 1));
    if (!out) {
        vt__seterr(err, errlen, "out of memory");
        return NULL;
    }
    for (int i = 0; i < dashes; i++)
        out[n++] = argv[i];
    for (int i = 0; i < nw; i++)
        out[n++] = w[i];
    for (int i = dashes; i < *argc; i++)
        out[n++] = argv[i];
    out[n] = NULL;
    *argc = n;
    return out;
}

/* exec's safety net: the command after the first "--" and whether
 * --fail-open comes before it, found without parsing anything else, so a
 * bad option (or a bad $TUNERD_OPTIONS) still runs the command. */
static char **fail_open_cmd(int argc, char **argv)
{
    int fail_open = 0;

    if (argc < 3 || strcmp(argv[1], "exec") != 0)
        return NULL;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return fail_open && argv[i + 1] ? &argv[i + 1] : NULL;
        fail_open |= strcmp(argv[i], "--fail-open") == 0;
    }
    return NULL;
}

int vt_cli_main(int argc, char **argv)
{
    vt_cli_opts o;
    char err[1024], pdir[PATH_MAX], *words = NULL;
    char **safe_cmd = fail_open_cmd(argc, argv), **av;
    int ac = argc, rc;

    av = vt_cli_merge_options_env(&ac, argv, &words, err, sizeof err);
    rc = av ? vt_cli_parse(ac, av, &o, err, sizeof err) : VT_EXIT_USAGE;
    if (rc && safe_cmd) {
        fprintf(stderr, "tunerd: warning: %s; running %s without a profile\n", err,
                safe_cmd[0]);
        rc = vt__cmd_exec_plain(safe_cmd, err, sizeof err);
        goto out;
    }
    if (rc)
        goto out;
    if (o.help || o.version) {
        if (o.help)
            fputs(usage_text, stdout);
        else
            printf("tunerd %s\n", VT_VERSION);
        rc = fflush(stdout) ? VT_EXIT_INTERNAL : VT_EXIT_OK;
        goto out;
    }
    if (!strcmp(o.command, "watch")) {
        rc = vt__cmd_watch(&o, err, sizeof err);
        goto out;
    }
    if (!strcmp(o.command, "stats")) {
        rc = vt__cmd_stats(&o, err, sizeof err);
        goto out;
    }
    if (vt_platform_find_dir(o.profiles_dir, pdir, sizeof pdir, err, sizeof err)) {
        if (o.fail_open && o.cmd) {
            fprintf(stderr, "tunerd: warning: %s; running %s without a profile\n", err,
                    o.cmd[0]);
            rc = vt__cmd_exec_plain(o.cmd, err, sizeof err);
            goto out;
        }
        rc = VT_EXIT_PROFILE;
        goto out;
    }
    if (!strcmp(o.command, "profile"))
        rc = vt__cmd_profile(&o, pdir, err, sizeof err);
    else if (!strcmp(o.command, "detect"))
        rc = vt__cmd_detect(&o, pdir, err, sizeof err);
    else if (!strcmp(o.command, "exec"))
        rc = vt__cmd_exec(&o, pdir, err, sizeof err);
    else
        rc = vt__cmd_check(pdir);
out:
    if (rc && err[0])
        fprintf(stderr, "tunerd: %s\n", err);
    if (av && av != argv)
        free(av);
    free(words);
    return rc;
}
