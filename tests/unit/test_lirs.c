/* test_lirs.c: unit tests of the LIRS policy (vsiplugin/cache/lirs.c).
 *
 * A tiny cache driven exactly as shmcache.c drives it (take the ghost out,
 * evict the victim when full, admit), with the structure's invariants
 * checked after every access: list links agree both ways, the bottom of S
 * is LIR, the counts match the statuses, ghosts never exceed their cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cache/lirs.h"

enum { NODES = 256 };

static vt_lirs L;
static vt_lirs_node N[NODES];
static int resident;
static int cap;
static int freed[NODES];

static void gone(void *ctx, int32_t i)
{
    (void)ctx;
    freed[i]++;
}

static void reset(int capacity, int hir_pct, int ghosts)
{
    memset(N, 0, sizeof N);
    for (int i = 0; i < NODES; i++)
        N[i].s_prev = N[i].s_next = N[i].q_prev = N[i].q_next = -1;
    memset(freed, 0, sizeof freed);
    vt__lirs_init(&L, (uint32_t)capacity, (uint32_t)hir_pct, (uint32_t)ghosts);
    resident = 0;
    cap = capacity;
}

static void check(void)
{
    uint32_t lir = 0, hir = 0, ghost = 0;
    int32_t i, prev = -1;
    for (i = L.s_bottom; i != -1; prev = i, i = N[i].s_next) {
        assert_int_equal(N[i].s_prev, prev);
        assert_true(N[i].in_s);
    }
    assert_int_equal(L.s_top, prev);
    if (L.s_bottom != -1)
        assert_int_equal(N[L.s_bottom].status, VT_LIRS_LIR);
    prev = -1;
    for (i = L.q_head; i != -1; prev = i, i = N[i].q_next) {
        assert_int_equal(N[i].q_prev, prev);
        assert_int_equal(N[i].status, VT_LIRS_HIR);
    }
    assert_int_equal(L.q_tail, prev);
    for (i = 0; i < NODES; i++) {
        lir += N[i].status == VT_LIRS_LIR;
        hir += N[i].status == VT_LIRS_HIR;
        ghost += N[i].status == VT_LIRS_GHOST;
        if (N[i].status == VT_LIRS_LIR || N[i].status == VT_LIRS_GHOST)
            assert_true(N[i].in_s);
    }
    assert_int_equal(lir, L.nlir);
    assert_int_equal(hir, L.nhir);
    assert_int_equal(ghost, L.nghost);
    assert_true(L.nghost <= L.ghost_cap);
    assert_int_equal((int)(lir + hir), resident);
}

/* One access of block i; returns 1 on a hit. */
static int access_block(int32_t i)
{
    int ghost;
    if (N[i].status == VT_LIRS_LIR || N[i].status == VT_LIRS_HIR) {
        vt__lirs_hit(&L, N, i, gone, NULL);
        check();
        return 1;
    }
    ghost = vt__lirs_take_ghost(&L, N, i);
    if (resident >= cap) {
        int32_t v = vt__lirs_victim(&L, N, 1, NULL, NULL);
        assert_true(v >= 0);
        vt__lirs_evict(&L, N, v, gone, NULL);
        resident--;
    }
    vt__lirs_admit(&L, N, i, ghost, gone, NULL);
    resident++;
    check();
    return 0;
}

static void test_warmup_then_hir(void **state)
{
    reset(10, 10, 20);                /* 9 LIR, 1 HIR */
    for (int i = 0; i < 9; i++)
        assert_int_equal(access_block(i), 0);
    assert_int_equal(L.nlir, 9);
    assert_int_equal(access_block(9), 0);
    assert_int_equal(N[9].status, VT_LIRS_HIR);
    for (int i = 0; i < 10; i++)
        assert_int_equal(access_block(i), 1);
}

/* A loop twice the cache, read three times: LRU would never hit; LIRS keeps
 * its LIR set (about 90% of the capacity) through the scan. */
static void test_loop_keeps_lir_set(void **state)
{
    int hits = 0;
    reset(40, 10, 80);
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < 80; i++) {
            int hit = access_block(i);
            if (pass > 0)
                hits += hit;
        }
    assert_true(hits >= 2 * 34);
}

/* A block reused while still in S becomes LIR; the least recent LIR block
 * goes to Q. */
static void test_short_reuse_promotes(void **state)
{
    reset(4, 25, 8);                  /* 3 LIR, 1 HIR */
    access_block(0);
    access_block(1);
    access_block(2);
    access_block(3);                  /* HIR resident */
    assert_int_equal(N[3].status, VT_LIRS_HIR);
    access_block(3);                  /* reused while in S: LIR */
    assert_int_equal(N[3].status, VT_LIRS_LIR);
    assert_int_equal(N[0].status, VT_LIRS_HIR); /* the bottom was demoted */
    assert_int_equal(vt__lirs_victim(&L, N, 1, NULL, NULL), 0);
}

/* Ghosts beyond the cap are let go (reported), and removal keeps the bottom
 * of S an LIR node. */
static void test_ghost_cap_and_remove(void **state)
{
    int total = 0;
    reset(8, 25, 4);
    for (int i = 0; i < 60; i++)
        access_block(i % 30);
    for (int i = 0; i < NODES; i++)
        total += freed[i];
    assert_true(total > 0);
    assert_true(L.nghost <= 4);
    for (int i = 0; i < 30; i++)
        if (N[i].status != VT_LIRS_NONE) {
            int res = N[i].status == VT_LIRS_LIR || N[i].status == VT_LIRS_HIR;
            vt__lirs_remove(&L, N, i, gone, NULL);
            resident -= res;
            check();
        }
    assert_int_equal(L.nlir + L.nhir + L.nghost, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_warmup_then_hir),
        cmocka_unit_test(test_loop_keeps_lir_set),
        cmocka_unit_test(test_short_reuse_promotes),
        cmocka_unit_test(test_ghost_cap_and_remove),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
