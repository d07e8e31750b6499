/* usage.c: tunerd's commands and options as one table: which command takes
 * which option, and the help text of each.
 *
 * The parser (cli.c) asks this table whether an option belongs to the
 * command at hand, so `tunerd detect --memory 5` is refused naming only
 * detect's options, and `tunerd CMD --help` prints that command's usage from
 * the same rows `tunerd --help` prints whole. Pure: no I/O but the FILE the
 * caller hands in. */
#include "usage.h"

#include <stdio.h>
#include <string.h>


typedef struct {
    const char *name;     /* "profile" */
    unsigned bit;
    const char *synopsis; /* the usage lines after "tunerd " */
    const char *what;     /* one paragraph, lines of at most 66 characters */
} cmd_doc;

typedef struct {
    const char *name;  /* "--memory" */
    const char *arg;   /* "MIB", or NULL for a flag */
    unsigned cmds;     /* the commands that take it */
    const char *help;  /* lines joined by '\n', each printed at column 20 */
} opt_doc;

#define PROFILE_OPTS "[--memory MIB] [--platform P] [--cpus N] [--workload W]\n" \
                     "[--workers N] [--no-plugin] [--plugin-dir DIR] [--profiles DIR]"

static const cmd_doc cmds[] = {
    { "profile", VT_CMD_PROFILE, "profile " PROFILE_OPTS " [--format F]",
      "print the environment block for a platform and memory tier" },
    { "detect", VT_CMD_DETECT, "detect [--json] [--sys-root DIR] [--proc-root DIR] [--profiles DIR]",
      "print the platform, memory and CPU limits found, and where from" },
    { "exec", VT_CMD_EXEC, "exec [profile options] [-v] [--fail-open] [--options-env VAR]\n"
      "-- CMD [ARGS...]",
      "detect, set the profile's variables the caller did not set, exec CMD" },
    { "check-profiles", VT_CMD_CHECK, "check-profiles [--profiles DIR]",
      "validate every profiles/*.profile file (file:line: message)" },
    { "watch", VT_CMD_WATCH, "watch [--interval S] [--count N] [--match STR] [--proc-root DIR]\n"
      "[--stats-dir DIR] [--listen ADDR:PORT]",
      "RSS, PSS and anonymous MiB of each process that mapped libgdal,\n"
      "--count samples (default 1, max 1000000) every --interval seconds\n"
      "(default 1, 0.1..3600); with the plugin's counters (--stats-dir,\n"
      "default $VSITUNE_STATS_DIR) also each process's requests and cache MiB;\n"
      "with --listen, serve all of it (and the counters) at /metrics for\n"
      "Prometheus until SIGTERM (or --count scrapes)" },
    { "stats", VT_CMD_STATS, "stats [--dir DIR] [--json | --format table|json|prometheus] "
      "[--clean]\n[--proc-root DIR]",
      "the counters each vsitune process left in --dir (default\n"
      "$VSITUNE_STATS_DIR): one row per process, state running, exited,\n"
      "ended (a fork child gone with no OOM kill in its cgroup since) or\n"
      "killed-or-gone (no clean exit: OOM kill, signal, crash); --clean\n"
      "then removes the files of processes that are not running;\n"
      "--format prometheus for node-exporter's textfile collector" },
};

#define SIZING (VT_CMD_PROFILE | VT_CMD_EXEC)

static const opt_doc opts[] = {
    { "--memory", "MIB", SIZING, "memory tier in MiB (what Lambda and Cloud Run call MB),\n"
      "1..1048576 (default: detected)" },
    { "--platform", "P", SIZING, "lambda | cloudrun | azure-functions | kubernetes | host, or\n"
      "any other <P>.profile in the profiles directory (default:\n"
      "detected from the platforms' variables; for profile,\n"
      "lambda when --memory is given and none is detected; else host)" },
    { "--cpus", "N", SIZING, "vCPU for cloudrun/kubernetes/host (default: detected)" },
    { "--workload", "W", SIZING, "batch (processes, CPU work after reads; default) | tiles\n"
      "(threads, I/O-bound tile serving)" },
    { "--workers", "N", SIZING, "worker processes (default: from the sizing model)" },
    { "--format", "F", VT_CMD_PROFILE, "env | shell | dotenv | json | lambda-json | terraform |\n"
      "dockerfile | k8s-yaml (default: env)" },
    { "--no-plugin", NULL, SIZING, "stock GDAL settings instead of the vsitune plugin" },
    { "--plugin-dir", "DIR", SIZING, "GDAL_DRIVER_PATH to emit, ':'-separated absolute paths\n"
      "(default: <tunerd's dir>/" TUNERD_PLUGIN_RELDIR ", tunerd's own\n"
      "install; for another platform than this one, its profile's)" },
    { "--profiles", "DIR", SIZING | VT_CMD_DETECT | VT_CMD_CHECK,
      "platform profiles (default: $TUNERD_PROFILES_DIR, then\n"
      "<exe>/../share/vsitune/profiles, then the install dir)" },
    { "--sys-root", "DIR", SIZING | VT_CMD_DETECT | VT_CMD_WATCH | VT_CMD_STATS,
      "read /sys from DIR (or $TUNERD_SYSFS_ROOT)" },
    { "--proc-root", "DIR", SIZING | VT_CMD_DETECT | VT_CMD_WATCH | VT_CMD_STATS,
      "read /proc from DIR (or $TUNERD_PROCFS_ROOT)" },
    { "--json", NULL, VT_CMD_DETECT | VT_CMD_STATS, "detect, stats: print JSON" },
    { "--dir", "DIR", VT_CMD_STATS, "stats: the VSITUNE_STATS_DIR to read" },
    { "--format", "F", VT_CMD_STATS, "stats: table (default) | json | prometheus" },
    { "--clean", NULL, VT_CMD_STATS,
      "stats: remove the files of exited and killed-or-gone processes" },
    { "--interval", "S", VT_CMD_WATCH, "watch: seconds between samples (0.1..3600, default 1)" },
    { "--count", "N", VT_CMD_WATCH, "watch: samples, or scrapes with --listen (1..1000000)" },
    { "--match", "STR", VT_CMD_WATCH,
      "watch: processes that mapped a file whose path holds STR\n(default libgdal)" },
    { "--stats-dir", "DIR", VT_CMD_WATCH, "watch: read the plugin's counters from DIR" },
    { "--listen", "A:P", VT_CMD_WATCH,
      "watch: serve http://A:P/metrics (A numeric; P 0 = any port)" },
    { "-v", NULL, VT_CMD_EXEC, "exec: report each variable set or kept on stderr" },
    { "--verbose", NULL, VT_CMD_EXEC, "the same as -v" },
    { "--fail-open", NULL, VT_CMD_EXEC, "exec: if anything fails (a bad option included), warn in\n"
      "one line and run CMD unchanged" },
    { "--options-env", "VAR", VT_CMD_EXEC,
      "exec: more options from $VAR (blank-separated words)" },
};

static const char exit_text[] =
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

#define N_CMDS (sizeof cmds / sizeof cmds[0])
#define N_OPTS (sizeof opts / sizeof opts[0])

unsigned vt__usage_command(const char *name)
{
    for (size_t i = 0; i < N_CMDS; i++)
        if (strcmp(cmds[i].name, name) == 0)
            return cmds[i].bit;
    return 0;
}

int vt__usage_option(unsigned cmd, const char *name, int *takes_value)
{
    int elsewhere = 0;

    for (size_t i = 0; i < N_OPTS; i++) {
        if (strcmp(opts[i].name, name) != 0)
            continue;
        if (opts[i].cmds & cmd) {
            *takes_value = opts[i].arg != NULL;
            return 1;
        }
        elsewhere = 1;
    }
    return elsewhere ? -1 : 0;
}

void vt__usage_valid(unsigned cmd, char *buf, size_t len)
{
    size_t k = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < N_OPTS && k < len; i++) {
        int dup = 0;
        if (!(opts[i].cmds & cmd))
            continue;
        for (size_t j = 0; j < i; j++)  /* --format is two rows */
            dup |= (opts[j].cmds & cmd) && strcmp(opts[j].name, opts[i].name) == 0;
        if (!dup)
            k += (size_t)snprintf(buf + k, len - k, "%s%s", k ? ", " : "", opts[i].name);
    }
}

void vt__usage_takers(const char *name, char *buf, size_t len)
{
    unsigned mask = 0;
    size_t k = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < N_OPTS; i++)
        if (strcmp(opts[i].name, name) == 0)
            mask |= opts[i].cmds;
    for (size_t i = 0; i < N_CMDS && k < len; i++)
        if (mask & cmds[i].bit)
            k += (size_t)snprintf(buf + k, len - k, "%s%s", k ? ", " : "", cmds[i].name);
}

const char *vt__usage_commands(void)
{
    return "profile, detect, exec, check-profiles, watch, stats";
}

/* text's lines, the first after what is already on the line (at column
 * col), the others indented to col. */
static void indented(FILE *f, const char *text, int col, int at)
{
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        fprintf(f, "%*s%.*s\n", at < col ? col - at : 1, "", (int)n, p);
        p += n;
        if (*p == '\n')
            p++;
        at = 0;
    }
}

static void print_synopsis(FILE *f, const cmd_doc *c, int first)
{
    const char *lead = first ? "usage: tunerd " : "       tunerd ";
    int col = (int)strlen(lead) + (int)strlen(c->name) + 1;
    const char *p = c->synopsis;
    size_t n = strcspn(p, "\n");

    fprintf(f, "%s%.*s\n", lead, (int)n, p);
    for (p += n; *p == '\n';) {
        p++;
        n = strcspn(p, "\n");
        fprintf(f, "%*s%.*s\n", col, "", (int)n, p);
        p += n;
    }
}

static void print_options(FILE *f, unsigned cmd)
{
    fputs("\noptions:\n", f);
    for (size_t i = 0; i < N_OPTS; i++) {
        char head[40];
        int at;
        if (!(opts[i].cmds & cmd))
            continue;
        at = snprintf(head, sizeof head, "  %s%s%s", opts[i].name, opts[i].arg ? " " : "",
                      opts[i].arg ? opts[i].arg : "");
        fputs(head, f);
        indented(f, opts[i].help, 20, at);
    }
    fputs("  -h, --help        this text\n", f);
}

void vt__usage_print(FILE *f, unsigned cmd)
{
    unsigned all = 0;
    int first = 1;

    for (size_t i = 0; i < N_CMDS; i++) {
        if (cmd && cmds[i].bit != cmd)
            continue;
        print_synopsis(f, &cmds[i], first);
        first = 0;
        all |= cmds[i].bit;
    }
    if (!cmd)
        fputs("       tunerd --help | --version | CMD --help\n", f);
    fputc('\n', f);
    for (size_t i = 0; i < N_CMDS; i++) {
        if (cmd && cmds[i].bit != cmd)
            continue;
        fputs(cmds[i].name, f);
        indented(f, cmds[i].what, 10, (int)strlen(cmds[i].name));
    }
    print_options(f, all);
    fputc('\n', f);
    fputs(exit_text, f);
}
