/* forksafe.h: keep process-wide leaf mutexes usable in a fork()ed child.
 *
 * A child starts with one thread; a mutex some other parent thread held at
 * fork() stays locked in it forever. Registered mutexes are all taken before
 * fork() and released on both sides after it. Only for leaf locks (never
 * held while taking another), so taking them all in order cannot deadlock. */
#ifndef VT_FORKSAFE_H
#define VT_FORKSAFE_H

#include <pthread.h>

/* Register m (static storage) once; later calls with the same m are no-ops.
 * At most 16 mutexes; returns 0, or -1 when the table is full. Thread-safe. */
int vt__forksafe_register(pthread_mutex_t *m);

#endif
