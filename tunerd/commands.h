/* commands.h: tunerd's commands, called by cli.c after parsing (internal).
 *
 * Each returns an exit status from cli.h and, on failure, one line in err
 * (without the "tunerd: " prefix). pdir is the profiles directory chosen by
 * vt_platform_find_dir. They write to stdout; exec does not return on
 * success. Single-threaded. */
#ifndef VT_TUNERD_COMMANDS_H
#define VT_TUNERD_COMMANDS_H

#include <stddef.h>

#include "cli.h"

int vt__cmd_profile(const vt_cli_opts *o, const char *pdir, char *err, size_t errlen);
int vt__cmd_detect(const vt_cli_opts *o, const char *pdir, char *err, size_t errlen);
int vt__cmd_check(const char *pdir);
int vt__cmd_watch(const vt_cli_opts *o, char *err, size_t errlen);

/* Lists the plugin's counters files (statsdir.h); allocates its table and
 * frees it before returning. */
int vt__cmd_stats(const vt_cli_opts *o, char *err, size_t errlen);

/* Applies the profile (variables the caller did not set) and execs o->cmd;
 * with o->fail_open, a sizing failure warns and execs o->cmd unchanged. */
int vt__cmd_exec(const vt_cli_opts *o, const char *pdir, char *err, size_t errlen);

/* execvp(cmd); returns 127 (not found) or 126 with err set when it fails. */
int vt__cmd_exec_plain(char **cmd, char *err, size_t errlen);

#endif
