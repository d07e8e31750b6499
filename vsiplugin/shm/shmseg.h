/* shmseg.h: the host-wide shared segment: its name, creation, attachment,
 * process table, robust locks, waits and lifetime.
 *
 * One segment per user and pool, "<dir>/vsitune-<uid>-<pool>" (dir:
 * VSITUNE_SHM_DIR, default /dev/shm; pool: VSITUNE_SHARED_CACHE_NAME,
 * default "default"), mode 0600. The first process creates it (sized once,
 * from its VSITUNE_SHARED_CACHE_SIZE fitted to the file system, see
 * vt__shm_fit), the others attach to it as it is. Creation is atomic: the
 * file is built unnamed (O_TMPFILE) and linked under its name only once
 * fully initialised, so a process killed while creating leaves nothing and
 * an attacher never sees half a segment. A file of ours under the name
 * with another mode or layout is replaced when no process is attached to
 * it, otherwise left alone (this process falls back to its own cache);
 * anything else under the name (a symbolic link, a FIFO, another user's
 * file, a file with a second name) is never followed, opened for I/O or
 * touched, and sets *refused. The last process to detach cleanly removes the name; after a
 * SIGKILL of the last one the file stays until the next vsitune process of
 * that user and pool attaches and reuses it (its ready blocks are valid:
 * every block is checked by identity, state and length).
 *
 * The contents (blocks: shmcache.h, object metadata: shmmeta.h) live behind
 * robust process-shared mutexes that are never held across I/O or while
 * another is held; waiting for another process is a futex wait with a
 * bound, checking that the other process is still alive. Every lock is
 * waited for at most a bound (a stopped holder, SIGSTOP or a debugger, is
 * alive, so robust recovery never frees it): past it, or on any
 * inconsistency found in the segment, this process stops using the segment
 * and says so once (vt_shm_opts.notice); it never hangs.
 *
 * Thread-safety: all functions may be called from any thread once the
 * segment is open; vt__shm_open/vt__shm_close are not concurrent with other
 * calls on the same segment. */
#ifndef VT_SHMSEG_H
#define VT_SHMSEG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "shmfit.h"

typedef struct vt_shm vt_shm;

typedef struct vt_shm_opts {
    const char *dir;          /* NULL: /dev/shm */
    const char *pool;         /* NULL: "default"; [A-Za-z0-9_.-]{1,32} */
    uint64_t budget;          /* bytes asked for the whole segment */
    uint64_t block_size;      /* bytes per cache block */
    int *refused;             /* optional out: set to 1 when the name holds
                                 something that is not this user's to use
                                 or remove (planted: the caller warns) */
    /* Told once, from whichever thread meets it, when this process stops
     * using the segment (a lock held past its bound, a damaged segment):
     * it goes on with its own cache. NULL: nobody is told. */
    void (*notice)(const char *why);
} vt_shm_opts;


/* Attach to the segment of this user and pool, creating it when absent.
 * Returns NULL when shared memory cannot be used; why (always set) says
 * what was found and decided, for CPL_DEBUG: the size asked, the size of the
 * file system, the size used. The caller owns the result (vt__shm_close). */
vt_shm *vt__shm_open(const vt_shm_opts *o, char *why, size_t whylen);

/* Detach: give up this process's slot, remove the name when no other
 * process is attached, unmap. No call on s may be running or follow. */
void vt__shm_close(vt_shm *s);

/* At exit: give up the slot and remove the name when last, but keep the
 * mapping (other exit handlers may still read through it). */
void vt__shm_exit(vt_shm *s);

/* In a fork()ed child (from an atfork child handler): the inherited file
 * description is the parent's (its OFD locks say "the parent lives"), so
 * the child takes its own and is not attached until vt__shm_attached. */
void vt__shm_fork_child(vt_shm *s);

/* Make sure this process holds a slot (after fork()). Returns the slot, or
 * -1 when it cannot: then the segment must not be used by this process. */
int vt__shm_attached(vt_shm *s, uint32_t *epoch);

/* 1 while process slot `proc` is held by a live process that took it at
 * `epoch`; a dead holder's slot is freed on the way (0). */
int vt__shm_proc_alive(vt_shm *s, uint32_t proc, uint32_t epoch);

/* Take a robust mutex of the segment. When its last owner died holding it,
 * repair(s) runs first (under the mutex) to rebuild what it guards. Returns
 * 0, or an errno value when the mutex is unusable, was held past the bound
 * (ETIMEDOUT: the segment is now off for this process) or the segment is
 * off (ECANCELED). */
int vt__shm_lock(vt_shm *s, pthread_mutex_t *mu, void (*repair)(vt_shm *));
void vt__shm_unlock(pthread_mutex_t *mu);

/* 0 once this process stopped using the segment (vt__shm_off: a lock
 * held past its bound, an inconsistency); one relaxed load. */
int vt__shm_usable(const vt_shm *s);

/* Sleep while *w == val, at most timeout_ms (futex on the shared page). */
void vt__shm_wait(_Atomic uint32_t *w, uint32_t val, long timeout_ms);
/* Wake every process sleeping on w. */
void vt__shm_wake(_Atomic uint32_t *w);

/* Bytes per cache block of the segment. */
uint64_t vt__shm_block_size(const vt_shm *s);

/* Reserve (fallocate) the data chunk holding byte offset `off` of the data
 * region; 0 on success. Caller holds the blocks lock. */
int vt__shm_reserve(vt_shm *s, uint64_t off, uint64_t len);

typedef struct vt_shm_info {
    char path[256];
    uint64_t size;            /* the file */
    uint64_t budget_asked;    /* what its creator asked */
    uint64_t block_size;
    uint64_t data_bytes;      /* slots x block size */
    uint64_t used_bytes;      /* bytes held by resident blocks' slots */
    uint64_t reserved_bytes;  /* of the file, allocated in the file system */
    uint32_t slots, resident, procs_attached, objects;
    int64_t created_at;
    int32_t creator_pid;
    uint64_t hits, misses, waits, wait_timeouts, fills, fails, evictions;
    uint64_t takeovers, repairs, meta_hits, meta_misses, meta_waits, reaped;
} vt_shm_info;

/* A snapshot of the segment (counters relaxed, no lock held). */
void vt__shm_info(vt_shm *s, vt_shm_info *out);

#endif
