/* engine_state.c: the state engine.c (submission, lifecycle, fork) and
 * engine_io.c (the I/O thread) share: the engine's one lock, the two
 * process-wide condition variables of parking the I/O thread for fork(),
 * and the process-wide counters (engine_int.h says what each guards).
 *
 * Why a file of its own: defined in either of the two, the other would
 * reach up into it and the two would call each other in a circle; here,
 * below both, calls go one way (engine.c -> engine_io.c -> this file). */
#include "http/engine_int.h"

pthread_mutex_t vt__eng_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t vt__eng_park_cv = PTHREAD_COND_INITIALIZER;
pthread_cond_t vt__eng_resume_cv = PTHREAD_COND_INITIALIZER;
_Atomic uint64_t vt__eng_st_requests, vt__eng_st_retries, vt__eng_st_bytes,
    vt__eng_st_connections, vt__eng_st_in_flight, vt__eng_st_h2;
