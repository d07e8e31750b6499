/* test_planner.c: block runs and readahead (planner.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sys/wait.h>
#include <unistd.h>

#include "read/planner.h"

static void test_sort_unique(void **state)
{
    uint64_t v[] = {5, 1, 5, 3, 1, 9};
    size_t n = vt__plan_sort_unique(v, 6);
    (void)state;
    assert_int_equal(n, 4);
    assert_int_equal(v[0], 1);
    assert_int_equal(v[1], 3);
    assert_int_equal(v[2], 5);
    assert_int_equal(v[3], 9);
    assert_int_equal(vt__plan_sort_unique(v, 0), 0);
}

static void test_runs_consecutive_and_gaps(void **state)
{
    uint64_t idx[] = {2, 3, 4, 6, 10, 11};
    vt_block_run r[6];
    size_t n;
    (void)state;
    /* no gap allowed: 2-4, 6, 10-11 */
    n = vt__plan_runs(idx, 6, 0, 100, r);
    assert_int_equal(n, 3);
    assert_int_equal(r[0].first, 2);
    assert_int_equal(r[0].count, 3);
    assert_int_equal(r[1].first, 6);
    assert_int_equal(r[1].count, 1);
    assert_int_equal(r[2].first, 10);
    assert_int_equal(r[2].count, 2);
    /* gap of 1 block bridged: 2-6, 10-11 */
    n = vt__plan_runs(idx, 6, 1, 100, r);
    assert_int_equal(n, 2);
    assert_int_equal(r[0].first, 2);
    assert_int_equal(r[0].count, 5);
    /* gap of 3 bridges everything */
    n = vt__plan_runs(idx, 6, 3, 100, r);
    assert_int_equal(n, 1);
    assert_int_equal(r[0].count, 10);
}

static void test_runs_capped(void **state)
{
    uint64_t idx[10];
    vt_block_run r[10];
    size_t i, n, total = 0;
    (void)state;
    for (i = 0; i < 10; i++)
        idx[i] = i;
    n = vt__plan_runs(idx, 10, 0, 4, r);
    assert_int_equal(n, 3);
    for (i = 0; i < n; i++) {
        assert_true(r[i].count <= 4);
        total += r[i].count;
    }
    assert_int_equal(total, 10);
    /* max 0 behaves as 1 */
    n = vt__plan_runs(idx, 10, 0, 0, r);
    assert_int_equal(n, 10);
}

static void test_readahead(void **state)
{
    vt_readahead ra = {0, 0};
    (void)state;
    /* The first fetch of a handle never carries readahead. */
    assert_int_equal(vt__readahead_fetch(&ra, 0, 0, 8), 0);
    /* Each fetch that continues the previous one is twice its size: one
     * block needed each time, fetches of 2, 4, 8, then capped at 8 + 1. */
    assert_int_equal(vt__readahead_fetch(&ra, 1, 1, 8), 1);   /* 1..2 */
    assert_int_equal(vt__readahead_fetch(&ra, 3, 3, 8), 3);   /* 3..6 */
    assert_int_equal(vt__readahead_fetch(&ra, 7, 7, 8), 7);   /* 7..14 */
    assert_int_equal(vt__readahead_fetch(&ra, 15, 15, 8), 8); /* 15..23 */
    /* A large read needs no help beyond one block. */
    assert_int_equal(vt__readahead_fetch(&ra, 24, 60, 8), 1); /* 24..61 */
    /* One unneeded block in between still counts as sequential. */
    assert_int_equal(vt__readahead_fetch(&ra, 63, 63, 8), 8);
    /* A jump resets it: a small read far away costs only its own blocks. */
    assert_int_equal(vt__readahead_fetch(&ra, 200, 200, 8), 0);
    assert_int_equal(vt__readahead_fetch(&ra, 201, 201, 8), 1);
    /* Backwards is not sequential. */
    assert_int_equal(vt__readahead_fetch(&ra, 50, 50, 8), 0);
    /* No room to keep the extra bytes (cache budget 0): never any. */
    assert_int_equal(vt__readahead_fetch(&ra, 51, 51, 0), 0);
    assert_int_equal(vt__readahead_fetch(&ra, 52, 52, 0), 0);
}

/* The process's readahead allowance: never more in flight than the limit,
 * each taker at most an equal share among the fetches holding some, a
 * partial give keeps holding, done ends it; a cut record follows what was
 * really fetched. */
/* A child forked while a fetch of the parent holds readahead starts with the
 * whole allowance; the parent's fetch still gives its share back. The child
 * says what it saw in its exit status (0: all of it). */
static void test_readahead_allowance_after_fork(void **state)
{
    const uint64_t bs = 64 * 1024, limit = 1024 * 1024;
    uint64_t held;
    int status = 0;
    pid_t pid;

    (void)state;
    held = vt__readahead_take(10, bs, limit);
    assert_int_equal(held, 10);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int bad = vt__readahead_in_flight() != 0;
        bad |= (vt__readahead_take(100, bs, limit) != 16) << 1; /* alone */
        _exit(bad);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(vt__readahead_in_flight(), 10 * bs); /* parent's own */
    vt__readahead_done(held, bs);
    assert_int_equal(vt__readahead_in_flight(), 0);
}

static void test_readahead_allowance(void **state)
{
    const uint64_t bs = 64 * 1024, limit = 1024 * 1024; /* 16 blocks */
    vt_readahead ra = {0};
    uint64_t a, b, c, w;

    (void)state;
    assert_int_equal(vt__readahead_in_flight(), 0);
    a = vt__readahead_take(100, bs, limit); /* alone: the whole allowance */
    assert_int_equal(a, 16);
    assert_int_equal(vt__readahead_take(4, bs, limit), 0); /* spent */
    vt__readahead_give(6, bs);                   /* a part back, holding */
    assert_int_equal(vt__readahead_in_flight(), 10 * bs);
    b = vt__readahead_take(100, bs, limit);      /* 2 holders: 8 each, 6 free */
    assert_int_equal(b, 6);
    c = vt__readahead_take(100, bs, limit);
    assert_int_equal(c, 0);
    vt__readahead_done(10, bs);
    vt__readahead_done(6, bs);
    assert_int_equal(vt__readahead_in_flight(), 0);
    a = vt__readahead_take(3, bs, limit);        /* fewer than the share */
    assert_int_equal(a, 3);
    b = vt__readahead_take(100, bs, limit);      /* share: 16 / 2 */
    assert_int_equal(b, 8);
    vt__readahead_done(a, bs);
    vt__readahead_done(b, bs);
    assert_int_equal(vt__readahead_in_flight(), 0);
    assert_int_equal(vt__readahead_take(5, 0, limit), 0); /* no block size */
    assert_int_equal(vt__readahead_take(5, bs, 0), 0);    /* no allowance */

    /* a sequential fetch proposed 4 blocks of readahead, got 1 */
    (void)vt__readahead_fetch(&ra, 10, 11, 8);   /* first: none */
    w = vt__readahead_fetch(&ra, 12, 13, 8);
    assert_int_equal(w, 2);
    w = vt__readahead_fetch(&ra, 16, 17, 8);
    assert_int_equal(w, 6);
    vt__readahead_cut(&ra, 6, 1);
    assert_int_equal(ra.next_block, 19);         /* 16..17 + 1 fetched */
    assert_int_equal(ra.last, 3);
    vt__readahead_cut(&ra, 1, 4);                /* not a cut: unchanged */
    assert_int_equal(ra.next_block, 19);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sort_unique),
        cmocka_unit_test(test_runs_consecutive_and_gaps),
        cmocka_unit_test(test_runs_capped),
        cmocka_unit_test(test_readahead),
        cmocka_unit_test(test_readahead_allowance),
        cmocka_unit_test(test_readahead_allowance_after_fork),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
