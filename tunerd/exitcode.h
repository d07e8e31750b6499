/* exitcode.h: tunerd's exit codes (docs/tuning.md), in a header of their own
 * so that the modules below cli.c (metricsd.c) return them without
 * including the command line's header. Values are never renumbered. */
#ifndef VT_TUNERD_EXITCODE_H
#define VT_TUNERD_EXITCODE_H

enum {
    VT_EXIT_OK = 0,
    VT_EXIT_INTERNAL = 1,  /* write error, out of memory */
    VT_EXIT_USAGE = 2,     /* bad option or value, contradictory request */
    VT_EXIT_TOOSMALL = 3,  /* the tier cannot hold the minimum ledger */
    VT_EXIT_PROFILE = 4,   /* a platform profile file is missing or invalid */
    VT_EXIT_DETECT = 5,    /* memory or CPUs could not be determined; watch, stats: no /proc */
    VT_EXIT_STATS = 6,     /* stats: the directory cannot be read, or --clean failed */
    VT_EXIT_NOEXEC = 126,  /* exec: command found but not executable */
    VT_EXIT_NOTFOUND = 127 /* exec: command not found */
};

#endif
