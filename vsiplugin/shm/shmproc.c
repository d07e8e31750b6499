/* shmproc.c: the segment's process table: who is attached, taken and given
 * back, and "is the process in slot k still alive".
 *
 * Every attached process read-locks byte VT_SHM_LOCK_ATTACHED of the file
 * and write-locks byte VT_SHM_LOCK_PROC_BASE + k for its process slot k,
 * with OFD locks (shmofd.h). "Is slot k alive" is an F_OFD_GETLK; "am I
 * the last" is a non-blocking write lock on the ATTACHED byte. A slot whose
 * holder died is freed by whoever meets it (its epoch bumped, so a filler
 * named by slot and epoch is never mistaken for the slot's next holder).
 * After fork() the child takes its own file description and attaches
 * lazily (vt__shm_attached). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shm/shm_int.h"
#include "shm/shmseg.h"

/* Take a free process slot (OFD lock first, then LIVE, under procs_mu). */
static int take_slot(vt_shm *s)
{
    uint32_t k;
    int got = -1;

    if (vt__shm_lock(s, &s->hdr->procs_mu, NULL) != 0)
        return -1;
    for (k = 0; k < s->g.nprocs && got < 0; k++) {
        vt_shm_proc *p = &s->procs[k];
        if (atomic_load(&p->state) == VT_SHM_PROC_LIVE) {
            if (vt__shm_ofd_held(s->fd, VT_SHM_LOCK_PROC_BASE + k))
                continue;
            atomic_store(&p->state, VT_SHM_PROC_FREE); /* its holder died */
            atomic_fetch_add(&p->epoch, 1);
            atomic_fetch_add_explicit(&s->hdr->ctr.reaped, 1, memory_order_relaxed);
        }
        if (vt__shm_ofd(s->fd, F_OFD_SETLK, F_WRLCK,
                        VT_SHM_LOCK_PROC_BASE + k) != 0)
            continue;
        s->epoch = atomic_fetch_add(&p->epoch, 1) + 1;
        p->pid = (int32_t)getpid();
        p->attached_at = (int64_t)time(NULL);
        atomic_store(&p->state, VT_SHM_PROC_LIVE);
        got = (int)k;
    }
    vt__shm_unlock(&s->hdr->procs_mu);
    return got;
}

/* Read-lock "attached" and take a slot; -1 when the name was removed under
 * us (a last process leaving) or no slot is free. */
int vt__shm_attach(vt_shm *s)
{
    struct stat st;
    int k, waited = 0;
    /* Never F_OFD_SETLKW: a process stopped while it holds the write lock
     * (leaving last, or the watcher removing the name) would hang us. */
    while (vt__shm_ofd(s->fd, F_OFD_SETLK, F_RDLCK, VT_SHM_LOCK_ATTACHED) != 0) {
        if ((errno != EAGAIN && errno != EACCES) || waited >= VT_SHM_LOCK_WAIT_MS) {
            vt__shm_off(s, "the segment's attach lock was held for more "
                        "than %d ms", VT_SHM_LOCK_WAIT_MS);
            return -1;
        }
        usleep(10000);
        waited += 10;
    }
    if (fstat(s->fd, &st) != 0 || st.st_nlink == 0)
        return -1;
    k = take_slot(s);
    if (k < 0)
        return -1;
    s->pid = (int)getpid();
    atomic_store(&s->proc, k);
    return 0;
}


/* Free our slot; then remove the name if nobody else is attached. */
void vt__shm_leave(vt_shm *s)
{
    int k = atomic_load(&s->proc);
    struct stat mine, now;

    if (k < 0 || s->pid != (int)getpid())
        return;
    if (vt__shm_lock(s, &s->hdr->procs_mu, NULL) == 0) {
        atomic_store(&s->procs[k].state, VT_SHM_PROC_FREE);
        atomic_fetch_add(&s->procs[k].epoch, 1);
        vt__shm_unlock(&s->hdr->procs_mu);
    }
    vt__shm_ofd(s->fd, F_OFD_SETLK, F_UNLCK, VT_SHM_LOCK_PROC_BASE + k);
    atomic_store(&s->proc, -1);
    if (vt__shm_ofd(s->fd, F_OFD_SETLK, F_WRLCK, VT_SHM_LOCK_ATTACHED) == 0) {
        if (fstat(s->fd, &mine) == 0 && stat(s->path, &now) == 0 &&
            mine.st_ino == now.st_ino && mine.st_dev == now.st_dev)
            unlink(s->path);
    }
    vt__shm_ofd(s->fd, F_OFD_SETLK, F_UNLCK, VT_SHM_LOCK_ATTACHED);
}

/* Only async-signal-safe calls: this runs in the child of a fork() that
 * other threads may have been in the middle of anything. */
void vt__shm_fork_child(vt_shm *s)
{
    char p[64];
    int nfd, n;

    if (!s)
        return;
    atomic_store(&s->proc, -1);
    n = snprintf(p, sizeof p, "/proc/self/fd/%d", s->fd);
    nfd = n > 0 ? open(p, O_RDWR | O_CLOEXEC) : -1;
    if (nfd >= 0 && dup3(nfd, s->fd, O_CLOEXEC) >= 0) {
        /* The parent's description is dropped; keep the name alive for
         * this child until it attaches (a parent leaving now sees us). */
        vt__shm_ofd(s->fd, F_OFD_SETLK, F_RDLCK, VT_SHM_LOCK_ATTACHED);
        s->pid = 0;                  /* attach lazily */
    } else {
        s->pid = -1;                 /* cannot: never attach in this child */
    }
    if (nfd >= 0)
        close(nfd);
    pthread_mutex_init(&s->attach_mu, NULL); /* no other thread here */
    pthread_mutex_init(&s->gu_mu, NULL);
}

int vt__shm_attached(vt_shm *s, uint32_t *epoch)
{
    int k = atomic_load(&s->proc);
    if (atomic_load_explicit(&s->off, memory_order_relaxed)) {
        *epoch = 0;
        return -1;
    }
    if (k >= 0) {
        *epoch = s->epoch;
        return k;
    }
    pthread_mutex_lock(&s->attach_mu);
    k = atomic_load(&s->proc);
    if (k < 0 && s->pid == 0) {
        if (vt__shm_attach(s) != 0)
            s->pid = -1;
        k = atomic_load(&s->proc);
    }
    *epoch = s->epoch;
    pthread_mutex_unlock(&s->attach_mu);
    return k;
}

int vt__shm_proc_alive(vt_shm *s, uint32_t proc, uint32_t epoch)
{
    vt_shm_proc *p;
    int alive = 1;

    if (proc >= s->g.nprocs)
        return 0;
    p = &s->procs[proc];
    if (atomic_load(&p->epoch) != epoch ||
        atomic_load(&p->state) != VT_SHM_PROC_LIVE)
        return 0;
    if ((int)proc == atomic_load(&s->proc))
        return 1;
    if (vt__shm_ofd_held(s->fd, VT_SHM_LOCK_PROC_BASE + proc))
        return 1;
    if (vt__shm_lock(s, &s->hdr->procs_mu, NULL) != 0)
        return 1;
    if (atomic_load(&p->epoch) == epoch &&
        atomic_load(&p->state) == VT_SHM_PROC_LIVE &&
        !vt__shm_ofd_held(s->fd, VT_SHM_LOCK_PROC_BASE + proc)) {
        atomic_store(&p->state, VT_SHM_PROC_FREE);
        atomic_fetch_add(&p->epoch, 1);
        atomic_fetch_add_explicit(&s->hdr->ctr.reaped, 1, memory_order_relaxed);
        alive = 0;
    } else {
        alive = atomic_load(&p->epoch) == epoch;
    }
    vt__shm_unlock(&s->hdr->procs_mu);
    return alive;
}
