/* probe.h: what vt_backend_probe.c shares with its service-only steps
 * (probe_<svc>.c): the JSON writers and the shape of a step, so that each
 * service's extra commands are rows of the one backends table. */
#ifndef VT_TESTS_PROBE_H
#define VT_TESTS_PROBE_H

#include "backends/backend.h"

/* One command of the probe: its name, how many arguments it takes and
 * what runs it (a[0] the command, a[1..n] its arguments). Prints one JSON
 * object on one line; returns 0, or 1 when the operation failed. */
typedef struct vt_probe_step {
    const char *cmd;
    int nargs;
    int (*run)(const vt_backend *be, char **a);
} vt_probe_step;

/* s as a JSON string (NULL: null). */
void vt__probe_str(const char *s);
/* "k":v then a comma unless last. */
void vt__probe_kv(const char *k, const char *v, int last);

/* The service-only steps, NULL-terminated (probe_<svc>.c). */
extern const vt_probe_step vt__probe_steps_az[];
extern const vt_probe_step vt__probe_steps_curl[];

#endif
