/* envblock.h: the environment block a sizing result turns into.
 *
 * One ordered list of NAME=value pairs (with a short reason each) that every
 * output format renders and `tunerd exec` applies; keeping it in one place
 * means the formats cannot disagree on a value. */
#ifndef VT_TUNERD_ENVBLOCK_H
#define VT_TUNERD_ENVBLOCK_H

#include "platform.h"
#include "sizing.h"

#define VT_ENV_MAX 32

typedef struct vt_env_var {
    char name[64];
    char value[VT_PLATFORM_TEXT_MAX];
    const char *why;   /* static text, or a pointer into the platform profile */
} vt_env_var;

typedef struct vt_envblock {
    vt_env_var vars[VT_ENV_MAX];
    int n;
} vt_envblock;

/* Fills *out from a sizing result. plugin_dir is the GDAL_DRIVER_PATH to
 * emit (commands.c chooses it: --plugin-dir, tunerd's own install, or the
 * profile's for another platform). Extra env.NAME lines of the profile
 * come last. No allocation; returns 0, or -1 when the block overflows
 * VT_ENV_MAX (a profile with too many env lines). */
int vt_envblock_build(const vt_platform *plat, const vt_sizing *s,
                      vt_workload workload, int plugin, const char *plugin_dir,
                      vt_envblock *out);

/* The value of name in the block, or NULL. */
const char *vt_envblock_get(const vt_envblock *b, const char *name);

#endif
