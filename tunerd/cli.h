/* cli.h: tunerd's command line: option parsing, commands, exit statuses.
 *
 * main.c only calls vt_cli_main; the parser is separate so unit tests can
 * check what each bad input turns into without spawning a process. */
#ifndef VT_TUNERD_CLI_H
#define VT_TUNERD_CLI_H

#include <stddef.h>

#include "emit.h"
#include "exitcode.h"
#include "sizing.h"

/* Exit statuses; documented in `tunerd --help` and docs/tuning.md. */
enum { VT_STATS_TABLE = 0, VT_STATS_JSON = 1, VT_STATS_PROMETHEUS = 2 };

typedef struct vt_cli_opts {
    const char *command;     /* profile | detect | exec | check-profiles | watch | stats */
    long memory_mb;          /* 0 = not given */
    double cpus;             /* 0 = not given */
    const char *platform;    /* NULL = detect / default */
    vt_workload workload;
    int workers;             /* 0 = derive */
    vt_format format;
    int plugin;              /* default 1; --no-plugin clears it */
    const char *profiles_dir;
    const char *plugin_dir;
    const char *sys_root;
    const char *proc_root;
    int json;                /* detect, stats --json */
    int verbose;             /* exec -v: say what was set and kept */
    int fail_open;           /* exec --fail-open: run the command even if sizing fails */
    char **cmd;              /* exec: argv after "--" (NULL-terminated) */
    double interval_s;       /* watch: seconds between samples (default 1) */
    long count;              /* watch: number of samples (default 1) */
    const char *match;       /* watch: mapped-file substring (default "libgdal") */
    const char *stats_dir;   /* stats --dir, watch --stats-dir (default $VSITUNE_STATS_DIR) */
    int clean;               /* stats --clean */
    int stats_format;        /* stats --format: VT_STATS_TABLE, _JSON, _PROMETHEUS */
    const char *listen;      /* watch --listen ADDR:PORT: serve /metrics */
    int count_given;         /* --count was given */
    const char *options_env; /* exec --options-env VAR: more options from $VAR */
    int help, version;
} vt_cli_opts;

/* Parses argv into *o (always initialised). Returns VT_EXIT_OK, or
 * VT_EXIT_USAGE with one line naming the problem and the valid values in
 * err. argv is borrowed: o->cmd points into it. */
int vt_cli_parse(int argc, char **argv, vt_cli_opts *o, char *err, size_t errlen);

/* `tunerd exec ... --options-env VAR ... -- CMD`: a new argv with the
 * blank-separated words of $VAR inserted before the "--" (a word "--" there
 * is refused). Returns argv itself when there is nothing to insert, a
 * malloc'd vector (free it; its strings point into *words and argv) with
 * *argc updated, or NULL with err set. *words is malloc'd or NULL. */
char **vt_cli_merge_options_env(int *argc, char **argv, char **words, char *err,
                                size_t errlen);

/* Runs tunerd; returns the exit status (or does not return: exec). */
int vt_cli_main(int argc, char **argv);

#endif
