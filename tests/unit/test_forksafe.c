/* test_forksafe.c: a registered mutex held by another thread at fork() is
 * usable in the child (forksafe.c); an unregistered one is not (the control
 * showing what the module prevents). The child only trylocks, so a failure is
 * a nonzero exit, never a hang. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/forksafe.h"

static pthread_mutex_t guarded = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t unguarded = PTHREAD_MUTEX_INITIALIZER;
static sem_t holding;

/* Hold m for a while (200 ms), telling the main thread once it is held. */
static void *holder(void *arg)
{
    pthread_mutex_t *m = arg;
    pthread_mutex_lock(m);
    sem_post(&holding);
    usleep(200000);
    pthread_mutex_unlock(m);
    return NULL;
}

/* Fork while another thread holds m; the child's exit status says whether
 * it could take m (0) or found it locked (1). */
static int child_can_lock(pthread_mutex_t *m)
{
    pthread_t t;
    int status = 0;
    assert_int_equal(pthread_create(&t, NULL, holder, m), 0);
    sem_wait(&holding);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(pthread_mutex_trylock(m) == 0 ? 0 : 1);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    pthread_join(t, NULL);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status) == 0;
}

static void test_registered_mutex_survives_fork(void **state)
{
    (void)state;
    assert_int_equal(vt__forksafe_register(&guarded), 0);
    assert_int_equal(vt__forksafe_register(&guarded), 0); /* idempotent */
    assert_true(child_can_lock(&guarded));
}

static void test_unregistered_mutex_is_the_control(void **state)
{
    (void)state;
    assert_false(child_can_lock(&unguarded));
}

static void test_table_is_bounded(void **state)
{
    (void)state;
    static pthread_mutex_t many[20];
    int ok = 0, full = 0;
    for (int i = 0; i < 20; i++) {
        pthread_mutex_init(&many[i], NULL);
        if (vt__forksafe_register(&many[i]) == 0)
            ok++;
        else
            full++;
    }
    assert_true(ok >= 1 && full >= 1);
    assert_int_equal(ok + full, 20);
}

int main(void)
{
    sem_init(&holding, 0, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registered_mutex_survives_fork),
        cmocka_unit_test(test_unregistered_mutex_is_the_control),
        cmocka_unit_test(test_table_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
