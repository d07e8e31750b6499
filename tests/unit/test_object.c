/* test_object.c: the pure part of object.c, the judgement of an object's
 * first answer (issue 13: "one bad first response poisons an object"): only
 * an answer consistent in itself gives a size that is kept; every answer a
 * fault proxy produced in the fault campaign is judged doubtful. And the
 * making of the process's cache (issue 19 item 7): the shared segment is
 * created with no vsitune lock held. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "read/object.h"

#define ASKED 65536u

static vt_http_resp range_answer(long status, uint64_t first, uint64_t last,
                                 int has_total, uint64_t total, size_t body)
{
    vt_http_resp r;
    memset(&r, 0, sizeof(r));
    r.status = status;
    r.has_content_range = 1;
    r.range_first = first;
    r.range_last = last;
    r.has_total = has_total;
    r.total_size = total;
    r.body_len = body;
    return r;
}

static vt_first judge(const vt_http_resp *r, uint64_t *size, char *why)
{
    return vt__object_judge_first(r, ASKED, size, why, 256);
}

static void consistent_answers(void **state)
{
    uint64_t size;
    char why[256];
    vt_http_resp r;
    (void)state;

    /* The common case: the header of a larger object. */
    r = range_answer(206, 0, ASKED - 1, 1, 10000000, ASKED);
    assert_int_equal(judge(&r, &size, why), VT_FIRST_OK);
    assert_int_equal(size, 10000000);
    /* A small object, clipped at its end. */
    r = range_answer(206, 0, 999, 1, 1000, 1000);
    assert_int_equal(judge(&r, &size, why), VT_FIRST_OK);
    assert_int_equal(size, 1000);
    /* A server that ignored Range and sent all 5000 bytes it announced. */
    memset(&r, 0, sizeof(r));
    r.status = 200;
    r.has_total = 1;
    r.total_size = r.body_len = 5000;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_OK);
    assert_int_equal(size, 5000);
}

static void empty_object(void **state)
{
    static const char body[] =
        "<Error><Code>InvalidRange</Code><Message>The requested range is not "
        "satisfiable</Message><ActualObjectSize>0</ActualObjectSize></Error>";
    uint64_t size = 7;
    char why[256];
    vt_http_resp r;
    (void)state;

    /* S3's answer for an empty object. */
    memset(&r, 0, sizeof(r));
    r.status = 416;
    r.body = (unsigned char *)body;
    r.body_len = sizeof(body) - 1;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_EMPTY);
    assert_int_equal(size, 0);
    /* Content-Range "bytes * /0" says the same. */
    memset(&r, 0, sizeof(r));
    r.status = 416;
    r.has_total = 1;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_EMPTY);
}

static void doubtful_answers(void **state)
{
    static const char body_big[] =
        "<Error><Code>InvalidRange</Code><ActualObjectSize>123456"
        "</ActualObjectSize></Error>";
    uint64_t size = 7;
    char why[256];
    vt_http_resp r;
    (void)state;

    /* A 416 whose Content-Range names the real size: not empty. */
    memset(&r, 0, sizeof(r));
    r.status = 416;
    r.has_total = 1;
    r.total_size = 2048000;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    assert_non_null(strstr(why, "2048000"));
    assert_int_equal(size, 0);
    /* ... or whose body does. */
    memset(&r, 0, sizeof(r));
    r.status = 416;
    r.body = (unsigned char *)body_big;
    r.body_len = sizeof(body_big) - 1;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    assert_non_null(strstr(why, "123456"));
    /* A 416 that says nothing about the size. */
    memset(&r, 0, sizeof(r));
    r.status = 416;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    /* A 200 with an empty body. */
    memset(&r, 0, sizeof(r));
    r.status = 200;
    r.has_total = 1;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    assert_non_null(strstr(why, "empty"));
    /* A 200 whose body and Content-Length disagree, or without one. */
    r.total_size = 100;
    r.body_len = 50;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    r.has_total = 0;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    /* "bytes 0-65535 / *": no total. */
    r = range_answer(206, 0, ASKED - 1, 0, 0, ASKED);
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    assert_non_null(strstr(why, "no object size"));
    /* Fewer bytes than asked, a total past them, the body filling its
     * range: a server capping range lengths (issue 20); the size is the
     * total, as stock GDAL takes it, with no HEAD. */
    r = range_answer(206, 0, 999, 1, 5000, 1000);
    assert_int_equal(judge(&r, &size, why), VT_FIRST_OK);
    assert_int_equal(size, 5000);
    size = 0;
    /* ... but not a range past the total it states. */
    r = range_answer(206, 0, 999, 1, 500, 1000);
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    /* A body that does not match its range. */
    r = range_answer(206, 0, ASKED - 1, 1, 5000000, 100);
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    /* Another status. */
    memset(&r, 0, sizeof(r));
    r.status = 204;
    assert_int_equal(judge(&r, &size, why), VT_FIRST_DOUBT);
    assert_int_equal(size, 0);
}

/* ---- the cache made with no lock held ---- */

static char seg_dir[64];
static char hold[128];
static vt_cache *_Atomic made;      /* what the maker thread got */
static atomic_int forked_status = -1; /* the fork()ing thread's child */

static void *maker(void *arg)
{
    (void)arg;
    made = vt__object_cache();
    return NULL;
}

/* fork() takes the table lock (object.c's fork handlers); the child makes
 * its own cache, the parent's maker being absent from it. */
static void *forker(void *arg)
{
    int st = 0;
    pid_t pid;
    (void)arg;
    pid = fork();
    if (pid == 0) {
        vt_cache *c;
        unsetenv("VSITUNE_SHM_INJECT");
        c = vt__object_cache();
        _exit(c && vt__cache_shared(c) ? 0 : 1);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        st = 0x7f00;
    forked_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    return NULL;
}

static int exists(const char *p)
{
    return access(p, F_OK) == 0;
}

/* Wait up to secs for *flag or a file to appear: a bound on a hang, not a
 * measure of speed. */
static int await(const char *file, atomic_int *flag, int secs)
{
    struct timespec ten_ms = {0, 10 * 1000 * 1000};
    int i;
    for (i = 0; i < secs * 100; i++) {
        if ((file && exists(file)) || (flag && *flag != -1))
            return 1;
        nanosleep(&ten_ms, NULL);
    }
    return 0;
}

/* Segment creation held (VSITUNE_SHM_INJECT=hold-create) in the thread that
 * makes the cache: another thread's fork() (which takes the object table's
 * lock) goes through meanwhile, and its child makes a cache of its own with
 * the segment; released, the maker ends with the shared cache, and every
 * later caller gets that same cache. Before issue 19 item 7 the table lock
 * was held across the creation and the fork waited for it. */
static void segment_made_with_no_lock_held(void **state)
{
    char held[160], seg[160], inj[160];
    pthread_t a, b;
    int fork_went;
    FILE *f;
    (void)state;

    snprintf(seg_dir, sizeof seg_dir, "/dev/shm/vt-object-XXXXXX");
    assert_non_null(mkdtemp(seg_dir));
    snprintf(hold, sizeof hold, "%s/hold", seg_dir);
    snprintf(held, sizeof held, "%s.held", hold);
    snprintf(seg, sizeof seg, "%s/vsitune-%u-unit", seg_dir, (unsigned)geteuid());
    snprintf(inj, sizeof inj, "hold-create:%s", hold);
    assert_non_null(f = fopen(hold, "w"));
    fclose(f);
    setenv("VSITUNE_SHARED_CACHE", "YES", 1);
    setenv("VSITUNE_SHM_DIR", seg_dir, 1);
    setenv("VSITUNE_SHARED_CACHE_NAME", "unit", 1);
    setenv("VSITUNE_SHARED_CACHE_SIZE", "16777216", 1);
    setenv("VSITUNE_CACHE_SIZE", "8388608", 1);
    setenv("VSITUNE_SHM_INJECT", inj, 1);

    assert_int_equal(pthread_create(&a, NULL, maker, NULL), 0);
    assert_true(await(held, NULL, 30)); /* the maker is in the creation */
    assert_int_equal(pthread_create(&b, NULL, forker, NULL), 0);
    fork_went = await(NULL, &forked_status, 30);
    assert_true(exists(hold) && made == NULL); /* still held meanwhile */
    unlink(hold);                         /* release (a hang ends too) */
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    unsetenv("VSITUNE_SHM_INJECT");

    assert_true(fork_went);               /* not waiting for the creation */
    assert_int_equal(forked_status, 0);   /* the child's own shared cache */
    assert_non_null(made);
    assert_non_null(vt__cache_shared(made));
    assert_ptr_equal(vt__object_cache(), made);
    unlink(held);
    unlink(seg);
    rmdir(seg_dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(consistent_answers),
        cmocka_unit_test(empty_object),
        cmocka_unit_test(doubtful_answers),
        cmocka_unit_test(segment_made_with_no_lock_held),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
