/* shmopts.h: the host-wide shared cache as the options configure it.
 *
 * VSITUNE_SHARED_CACHE (YES/NO), VSITUNE_SHARED_CACHE_SIZE (bytes for the
 * whole host), VSITUNE_SHARED_CACHE_NAME (a pool name: separate segments for
 * separate budgets), VSITUNE_SHARED_CACHE_WAIT (seconds a reader waits for
 * another process's fetch before fetching itself), VSITUNE_SHM_DIR (where
 * the segment lives, default /dev/shm). Read once, at the first read of the
 * process (docs/configuration.md). */
#ifndef VT_SHMOPTS_H
#define VT_SHMOPTS_H

#include <stdint.h>

#include "base/config.h" /* the defaults: VT_DEFAULT_SHARED_* */
#include "shm/shmseg.h"

/* Attach to the segment the options ask for (block_size: the process's
 * VSITUNE_BLOCK_SIZE, used only if this process creates it). NULL: use the
 * per-process cache. Says what it found and decided through CPLDebug
 * ("VSITUNE", "shared cache: ..."). *wait_ms gets the wait bound. The
 * segment lives until exit (detached by an exit handler). Call once (a fork
 * child whose parent was in this call calls it again), with no lock held: it
 * may create the segment and start vsitune-shmwatch. */
vt_shm *vt__shm_from_options(uint64_t block_size, long *wait_ms);

/* Emit, once per process, the warning vt__shm_from_options left when the
 * segment's name holds something planted (shmseg.h, refused): a CE_Warning
 * naming the file and the options that avoid it; when sharing was asked for
 * but is not used for another reason (no usable /dev/shm, too small, a lock
 * held past its bound, a damaged segment): a notice (notice.h) saying why,
 * shown without CPL_DEBUG. Each once per process. Call with no lock held
 * (the user's error handler runs in it). */
void vt__shm_warn(void);

/* What the last vt__shm_from_options found, for the stats ("" before). */
const char *vt__shm_status(void);

#endif
