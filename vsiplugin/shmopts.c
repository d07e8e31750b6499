/* shmopts.c: the shared cache as the options ask for it (see shmopts.h). */
#include "shmopts.h"

#include <stdio.h>
#include <stdlib.h>

#include <cpl_error.h>

#include "config.h"

static vt_shm *g_shm;           /* the process's segment, for the exit hook */
static char g_status[900];

/* The segment turned itself off for this process (shmseg.h): one debug
 * line, and the status says so from now on. */
static void say_off(const char *why)
{
    snprintf(g_status, sizeof g_status,
             "no longer used (%s): per-process cache instead", why);
    CPLDebug("VSITUNE", "shared cache: %s", g_status);
}

static void detach_at_exit(void)
{
    vt__shm_exit(g_shm);
}

vt_shm *vt__shm_from_options(uint64_t block_size, long *wait_ms)
{
    vt_shm_opts o;
    char *dir = NULL, *pool = NULL, why[800];
    vt_shm *s = NULL;

    *wait_ms = 1000L * (long)vt__cfg_size(NULL, "VSITUNE_SHARED_CACHE_WAIT",
                                          VT_DEFAULT_SHARED_WAIT, 0, 3600);
    if (!vt__cfg_bool(NULL, "VSITUNE_SHARED_CACHE", VT_DEFAULT_SHARED_CACHE)) {
        snprintf(g_status, sizeof g_status, "off (VSITUNE_SHARED_CACHE)");
        return NULL;
    }
    dir = vt__cfg_dup(NULL, "VSITUNE_SHM_DIR");
    pool = vt__cfg_dup(NULL, "VSITUNE_SHARED_CACHE_NAME");
    o.dir = dir;
    o.pool = pool;
    o.budget = vt__cfg_size(NULL, "VSITUNE_SHARED_CACHE_SIZE",
                            VT_DEFAULT_SHARED_CACHE_SIZE, 0, (uint64_t)1 << 44);
    o.block_size = block_size;
    o.notice = say_off;
    s = vt__shm_open(&o, why, sizeof why);
    if (s) {
        snprintf(g_status, sizeof g_status, "%s", why);
        CPLDebug("VSITUNE", "shared cache: %s", why);
        g_shm = s;
        atexit(detach_at_exit);
    } else {
        snprintf(g_status, sizeof g_status,
                 "not used (%s): per-process cache instead", why);
        CPLDebug("VSITUNE", "shared cache: %s", g_status);
    }
    free(dir);
    free(pool);
    return s;
}

const char *vt__shm_status(void)
{
    return g_status;
}
