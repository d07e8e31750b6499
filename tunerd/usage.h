/* usage.h: tunerd's command and option table (usage.c): which command takes
 * which option, and the help text printed by `tunerd --help` and
 * `tunerd CMD --help`. Pure. */
#ifndef VT_TUNERD_USAGE_H
#define VT_TUNERD_USAGE_H

#include <stddef.h>
#include <stdio.h>

/* One bit per command. */
enum {
    VT_CMD_PROFILE = 1u << 0,
    VT_CMD_DETECT = 1u << 1,
    VT_CMD_EXEC = 1u << 2,
    VT_CMD_CHECK = 1u << 3,   /* check-profiles */
    VT_CMD_WATCH = 1u << 4,
    VT_CMD_STATS = 1u << 5
};

/* The command's bit, or 0 for no such command. */
unsigned vt__usage_command(const char *name);

/* "profile, detect, ...": every command, for error messages. */
const char *vt__usage_commands(void);

/* 1: cmd takes option name (*takes_value set); -1: another command takes
 * it, cmd does not; 0: no command does. */
int vt__usage_option(unsigned cmd, const char *name, int *takes_value);

/* The options cmd takes (a mask: any of them), ", "-separated, into buf. */
void vt__usage_valid(unsigned cmd, char *buf, size_t len);

/* The commands that take option name, ", "-separated, into buf. */
void vt__usage_takers(const char *name, char *buf, size_t len);

/* `tunerd --help` (cmd 0) or `tunerd CMD --help` (cmd's bit). */
void vt__usage_print(FILE *f, unsigned cmd);

#endif
