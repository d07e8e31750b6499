/* shmopts.c: the shared cache as the options ask for it (see shmopts.h). */
#include "shm/shmopts.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_error.h>

#include "base/config.h"
#include "base/notice.h"

static vt_shm *g_shm;           /* the process's segment, for the exit hook */
static char g_status[900];
/* A warning to emit once the caller's lock is released (vt__shm_warn). */
static char g_warning[1100];
static atomic_int g_warn_pending;
static atomic_int g_notice_pending; /* g_status says why sharing is not used */
static atomic_int g_exit_hooked; /* detach_at_exit registered */

/* The segment turned itself off for this process (shmseg.h): one debug
 * line, and the status says so from now on. */
static void say_off(const char *why)
{
    snprintf(g_status, sizeof g_status,
             "no longer used (%s): per-process cache instead", why);
    /* once per process (shmseg.c tells once); the user asked for sharing,
     * so it is said without CPL_DEBUG, as a notice, not an error */
    vt__notice("shared cache: %s", g_status);
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
    int refused = 0;

    memset(&o, 0, sizeof o);
    *wait_ms = 1000L * (long)vt__opt_size(NULL, VT_OPT_SHARED_CACHE_WAIT);
    if (!vt__opt_choice(NULL, VT_OPT_SHARED_CACHE, NULL)) {
        snprintf(g_status, sizeof g_status, "off (VSITUNE_SHARED_CACHE)");
        return NULL;
    }
    dir = vt__cfg_dup(NULL, "VSITUNE_SHM_DIR");
    pool = vt__cfg_dup(NULL, "VSITUNE_SHARED_CACHE_NAME");
    o.dir = dir;
    o.pool = pool;
    o.budget = vt__opt_size(NULL, VT_OPT_SHARED_CACHE_SIZE);
    o.block_size = block_size;
    o.refused = &refused;
    o.notice = say_off;
    s = vt__shm_open(&o, why, sizeof why);
    if (s) {
        snprintf(g_status, sizeof g_status, "%s", why);
        CPLDebug("VSITUNE", "shared cache: %s", why);
        g_shm = s;
        if (!atomic_exchange(&g_exit_hooked, 1)) /* a fork child's own too */
            atexit(detach_at_exit);
    } else {
        snprintf(g_status, sizeof g_status,
                 "not used (%s): per-process cache instead", why);
        /* The user asked for sharing: a fallback is said without
         * CPL_DEBUG (a notice, or the warning below), once the caller's
         * lock is released (vt__shm_warn). */
        if (!refused)
            atomic_store(&g_notice_pending, 1);
        else
            CPLDebug("VSITUNE", "shared cache: %s", g_status);
        if (refused) {
            /* Planted under our name: only its owner can remove it, and
             * the user asked for sharing, so say so without CPL_DEBUG. */
            snprintf(g_warning, sizeof g_warning,
                     "vsitune: VSITUNE_SHARED_CACHE=YES, but %s: the shared "
                     "cache is not used, this process uses its own cache. "
                     "Remove it, or choose another pool "
                     "(VSITUNE_SHARED_CACHE_NAME) or a directory only this "
                     "user can write to (VSITUNE_SHM_DIR).", why);
            atomic_store(&g_warn_pending, 1);
        }
    }
    free(dir);
    free(pool);
    return s;
}

const char *vt__shm_status(void)
{
    return g_status;
}

void vt__shm_warn(void)
{
    if (atomic_load(&g_warn_pending) && atomic_exchange(&g_warn_pending, 0))
        CPLError(CE_Warning, CPLE_AppDefined, "%s", g_warning);
    if (atomic_load(&g_notice_pending) && atomic_exchange(&g_notice_pending, 0))
        vt__notice("shared cache: %s", g_status);
}
