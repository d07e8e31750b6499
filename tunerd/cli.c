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
#include "usage.h"
#include "wholenum.h"

#define MAX_WORKERS_OPT 4096
#define MAX_CPUS_OPT 1024

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
    unsigned cmd;
    int i = 1;

    memset(o, 0, sizeof *o);
    o->plugin = 1;
    o->format = VT_FMT_ENV;
    o->interval_s = 1.0;
    o->count = 1;
    o->match = "libgdal";
    err[0] = '\0';

    if (argc < 2) {
        vt__seterr(err, errlen, "no command (valid: %s; see tunerd --help)",
                   vt__usage_commands());
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
    cmd = vt__usage_command(o->command);
    if (!cmd) {
        vt__seterr(err, errlen, "unknown command '%s' (valid: %s)", o->command,
                   vt__usage_commands());
        return VT_EXIT_USAGE;
    }
    for (i = 2; i < argc; i++) {
        char *arg = argv[i], *val = NULL, name[64], list[512];
        char *eq;
        int takes_value = 0, known;

        if (strcmp(arg, "--") == 0) {
            if (cmd != VT_CMD_EXEC) {
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
                   cmd == VT_CMD_EXEC ? " (put the command after '--')" : "");
            return VT_EXIT_USAGE;
        }
        snprintf(name, sizeof name, "%s", arg);
        eq = strchr(name, '=');
        if (eq) {
            *eq = '\0';
            val = arg + (eq - name) + 1;
        }
        known = vt__usage_option(cmd, name, &takes_value);
        if (known == 0) {
            vt__usage_valid(cmd, list, sizeof list);
            vt__seterr(err, errlen, "unknown option '%s' for %s (valid: %s)", name,
                       o->command, list);
            return VT_EXIT_USAGE;
        }
        if (known < 0) {
            char takers[128];
            vt__usage_takers(name, takers, sizeof takers);
            vt__usage_valid(cmd, list, sizeof list);
            vt__seterr(err, errlen, "%s is only valid with %s (%s takes: %s)", name, takers,
                       o->command, list);
            return VT_EXIT_USAGE;
        }
        /* flags */
        if (!takes_value) {
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
        if (!val) {
            if (i + 1 >= argc) {
                vt__seterr(err, errlen, "%s needs a value", name);
                return VT_EXIT_USAGE;
            }
            val = argv[++i];
        }
        if (!strcmp(name, "--memory")) {
            long v;
            int r = vt__parse_whole(val, 1, VT_SIZE_MAX_MEMORY_MB, &v);
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
            int r = vt__parse_whole(val, 1, MAX_WORKERS_OPT, &v);
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
        } else if (!strcmp(name, "--format") && cmd == VT_CMD_STATS) {
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
            if (vt__parse_whole(val, 1, 1000000, &o->count)) {
                vt__seterr(err, errlen, "--count '%s' is not a whole number from 1 to 1000000",
                       val);
                return VT_EXIT_USAGE;
            }
            o->count_given = 1;
        } else if (!strcmp(name, "--listen")) {
            char host[256];
            int port;
            if (vt_metrics_parse_listen(val, host, sizeof host, &port, err, errlen))
                return VT_EXIT_USAGE;
            o->listen = val;
        } else if (!strcmp(name, "--options-env")) {
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
            if (!*val) {
                vt__seterr(err, errlen, "%s needs a directory", name);
                return VT_EXIT_USAGE;
            }
            o->stats_dir = val;
        }
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
            vt__usage_print(stdout, o.command ? vt__usage_command(o.command) : 0);
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
