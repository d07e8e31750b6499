/* shmofd.h: the segment's OFD lock bytes and the calls that take and test
 * them, shared by the plugin (shmproc.c, shmseg.c) and the watcher program
 * (shmwatch/vsitune-shmwatch.c), which both compile shmofd.c: the lock
 * facts the two programs rely on have this one home (STYLE.md 14).
 *
 * The locks are OFD locks (fcntl F_OFD_*) on single bytes of the segment's
 * file: owned by an open file description, released by the kernel when the
 * process dies however it dies, not confused by pid reuse. Nothing here
 * maps the file or reads its contents. Any thread; no lock of ours held. */
#ifndef VT_SHMOFD_H
#define VT_SHMOFD_H

#include <sys/types.h>

/* OFD lock bytes: ATTACHED is read-locked by every attached process (the
 * last one out can write-lock it); PROC_BASE + k is write-locked by the
 * owner of process slot k. */
#define VT_SHM_LOCK_ATTACHED 0
#define VT_SHM_LOCK_PROC_BASE 1
/* Write-locked by the segment's watcher (vsitune-shmwatch) while it waits
 * for the last attached process to go. */
#define VT_SHM_LOCK_WATCHER 4095

/* fcntl(fd, cmd) (F_OFD_SETLK, F_OFD_SETLKW) of a lock of `type` (F_RDLCK,
 * F_WRLCK, F_UNLCK) on one byte; fcntl's result, errno set. */
int vt__shm_ofd(int fd, int cmd, short type, off_t byte);

/* 1 when some other open file description holds a lock on byte (or when
 * that cannot be told: waits built on it stay bounded), else 0. */
int vt__shm_ofd_held(int fd, off_t byte);

#endif
