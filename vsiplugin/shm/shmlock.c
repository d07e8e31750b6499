/* shmlock.c: the segment's robust process-shared mutexes, taken with a
 * bound (vt__shm_lock), the switch that turns the segment off for this
 * process (vt__shm_off) and the checks that do it on a bad index, the
 * futex waits and wakes on its state words, and the fillers this process
 * gave up waiting for. See shmseg.h for the rules (never held across I/O
 * or another lock, every wait bounded).
 *
 * The lowest file of the segment that takes locks: it calls no other. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shm/shm_int.h"
#include "shm/shmseg.h"

/* How long a filler given up on (its wait timed out) is not waited for. */
#define GIVEN_UP_MS 60000

int vt__shm_mutex_init(pthread_mutex_t *mu)
{
    pthread_mutexattr_t a;
    int rc;
    if (pthread_mutexattr_init(&a) != 0)
        return -1;
    rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) |
         pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) |
         pthread_mutex_init(mu, &a);
    pthread_mutexattr_destroy(&a);
    return rc ? -1 : 0;
}

/* ---- locks and waits ---- */

static pthread_mutex_t *injected_lock(vt_shm *s, int which)
{
    return which == VT_SHM_INJ_PROCS    ? &s->hdr->procs_mu
           : which == VT_SHM_INJ_BLOCKS ? &s->hdr->blocks_mu
           : which == VT_SHM_INJ_META   ? &s->hdr->meta_mu
                                 : NULL;
}

/* Uncontended: one trylock, no clock read and no system call. Contended:
 * a wait bounded by VT_SHM_LOCK_WAIT_MS, after which the segment is off for this
 * process (a holder that long is stopped, not working). A dead holder is
 * EOWNERDEAD at once, whichever call meets it. */
int vt__shm_lock(vt_shm *s, pthread_mutex_t *mu, void (*repair)(vt_shm *))
{
    int rc;

    if (atomic_load_explicit(&s->off, memory_order_relaxed))
        return ECANCELED;
    rc = pthread_mutex_trylock(mu);
    if (rc == EBUSY) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_sec += VT_SHM_LOCK_WAIT_MS / 1000;
        t.tv_nsec += (VT_SHM_LOCK_WAIT_MS % 1000) * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000L;
        }
        rc = pthread_mutex_clocklock(mu, CLOCK_MONOTONIC, &t);
        if (rc == ETIMEDOUT) {
            vt__shm_off(s, "a lock of the segment was held for more than "
                        "%d ms (a stopped process?)", VT_SHM_LOCK_WAIT_MS);
            return rc;
        }
    }
    if (rc == EOWNERDEAD) {
        /* Its owner died inside: rebuild what it guards, then carry on. A
         * death inside repair leaves EOWNERDEAD again for the next one. */
        if (repair)
            repair(s);
        atomic_fetch_add_explicit(&s->hdr->ctr.repairs, 1, memory_order_relaxed);
        pthread_mutex_consistent(mu);
        rc = 0;
    }
    if (rc == 0 && atomic_load_explicit(&s->inject, memory_order_relaxed) &&
        mu == injected_lock(s, atomic_load(&s->inject)) &&
        atomic_exchange(&s->inject, VT_SHM_INJ_NONE) != VT_SHM_INJ_NONE)
        raise(SIGSTOP); /* VSITUNE_SHM_INJECT: stopped holding mu */
    if (rc == 0 && atomic_load_explicit(&s->off, memory_order_relaxed)) {
        pthread_mutex_unlock(mu); /* turned off while we waited */
        rc = ECANCELED;
    }
    return rc;
}

void vt__shm_off(vt_shm *s, const char *fmt, ...)
{
    va_list ap;
    atomic_store(&s->off, 1);
    if (atomic_exchange(&s->off_said, 1) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(s->off_why, sizeof s->off_why, fmt, ap);
    va_end(ap);
    if (s->notice)
        s->notice(s->off_why);
}

int32_t vt__shm_index(vt_shm *s, int32_t v, uint32_t n, const char *what)
{
    if (v >= 0 && (uint32_t)v < n)
        return v;
    if (v != -1)
        vt__shm_off(s, "the segment is damaged: %s %d out of range [0, %u)",
                    what, (int)v, n);
    return -1;
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void vt__shm_give_up(vt_shm *s, uint32_t proc, uint32_t epoch)
{
    uint64_t now = mono_ms();
    int k, use = 0;
    pthread_mutex_lock(&s->gu_mu);
    for (k = 0; k < VT_SHM_GIVEN_UP; k++) {
        if (s->given_up[k].proc == proc && s->given_up[k].epoch == epoch) {
            use = k;
            break;
        }
        if (s->given_up[k].until_ms < s->given_up[use].until_ms)
            use = k; /* the oldest (or an empty one) makes room */
    }
    s->given_up[use].proc = proc;
    s->given_up[use].epoch = epoch;
    s->given_up[use].until_ms = now + GIVEN_UP_MS;
    pthread_mutex_unlock(&s->gu_mu);
}

int vt__shm_given_up(vt_shm *s, uint32_t proc, uint32_t epoch)
{
    uint64_t now = mono_ms();
    int k, found = 0;
    pthread_mutex_lock(&s->gu_mu);
    for (k = 0; k < VT_SHM_GIVEN_UP && !found; k++)
        found = s->given_up[k].proc == proc && s->given_up[k].epoch == epoch &&
                s->given_up[k].until_ms > now;
    pthread_mutex_unlock(&s->gu_mu);
    return found;
}

void vt__shm_unlock(pthread_mutex_t *mu)
{
    pthread_mutex_unlock(mu);
}

void vt__shm_wait(_Atomic uint32_t *w, uint32_t val, long timeout_ms)
{
    struct timespec ts;
    ts.tv_sec = timeout_ms / 1000;
    ts.tv_nsec = (timeout_ms % 1000) * 1000000L;
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, val, &ts, NULL, 0);
}

void vt__shm_wake(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

int vt__shm_usable(const vt_shm *s)
{
    return s && !atomic_load_explicit(&s->off, memory_order_relaxed);
}
