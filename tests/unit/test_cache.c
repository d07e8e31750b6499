/* test_cache.c: unit tests of the block cache (vsiplugin/cache/cache.c).
 *
 * Every block's bytes are a deterministic function of (key, index), so any
 * reader anywhere can check byte-exactly what it was handed. The accounting
 * is checked through vt__cache_get_stats: single-threaded tests after every
 * operation, threaded tests at the end. No timing assertions: a thread that
 * must have looked a block up before it is filled says so on a counter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/cache.h"

enum { BS = 1024 };

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The bytes block `index` of object `key` holds: len bytes into buf. */
static void make_data(const char *key, uint64_t index, unsigned char *buf,
                      size_t len)
{
    uint64_t s = index * 0x100000001b3ULL;
    for (const char *p = key; *p; p++)
        s = (s ^ (unsigned char)*p) * 0x100000001b3ULL;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t v = splitmix(&s);
        for (size_t j = 0; j < 8 && i + j < len; j++)
            buf[i + j] = (unsigned char)(v >> (8 * j));
    }
}

/* 1 when b holds exactly the len bytes make_data gives for (key, index). */
static int data_ok(const vt_block *b, const char *key, uint64_t index,
                   size_t len)
{
    unsigned char want[4 * BS];
    size_t got_len = 0;
    const unsigned char *got = vt__block_data(b, &got_len);
    if (!got || got_len != len || len > sizeof want)
        return 0;
    make_data(key, index, want, len);
    return memcmp(got, want, len) == 0;
}

static void fill_with(vt_cache *c, vt_block *b, const char *key,
                      uint64_t index, size_t len)
{
    unsigned char buf[4 * BS];
    assert_true(len <= sizeof buf);
    make_data(key, index, buf, len);
    vt__cache_fill(c, b, buf, len);
}

/* Look up a block that must be missing, fill it, check it, release it. */
static void fill_new(vt_cache *c, const char *key, uint64_t index, size_t len)
{
    vt_block_role role;
    vt_block *b = vt__cache_lookup(c, key, index, &role);
    assert_non_null(b);
    assert_int_equal(role, VT_ROLE_FILL);
    fill_with(c, b, key, index, len);
    assert_true(data_ok(b, key, index, len));
    vt__cache_release(c, b);
}

/* Look up a block and return the role; the pin is released. Checks the data
 * of a hit. A miss is filled so the cache stays consistent. */
static vt_block_role probe(vt_cache *c, const char *key, uint64_t index,
                          size_t len)
{
    vt_block_role role;
    vt_block *b = vt__cache_lookup(c, key, index, &role);
    assert_non_null(b);
    if (role == VT_ROLE_HIT)
        assert_true(data_ok(b, key, index, len));
    else if (role == VT_ROLE_FILL)
        fill_with(c, b, key, index, len);
    vt__cache_release(c, b);
    return role;
}

static vt_cache_stats stats(vt_cache *c)
{
    vt_cache_stats st;
    vt__cache_get_stats(c, &st);
    assert_true(st.retained_bytes <= st.budget);
    return st;
}

static void test_hit_miss_fill(void **state)
{
    vt_cache *c = vt__cache_new(4 * BS, BS);
    vt_block_role role;
    vt_block *b;
    vt_cache_stats st;

    assert_non_null(c);
    assert_int_equal(vt__cache_block_size(c), BS);
    b = vt__cache_lookup(c, "b/k.tif@E1", 0, &role);
    assert_non_null(b);
    assert_int_equal(role, VT_ROLE_FILL);
    st = stats(c);
    assert_int_equal(st.misses, 1);
    assert_int_equal(st.blocks, 1);
    assert_int_equal(st.retained_bytes, 0);
    fill_with(c, b, "b/k.tif@E1", 0, BS);
    assert_true(data_ok(b, "b/k.tif@E1", 0, BS));
    vt__cache_release(c, b);
    assert_int_equal(stats(c).retained_bytes, BS);

    assert_int_equal(probe(c, "b/k.tif@E1", 0, BS), VT_ROLE_HIT);
    /* Another index, another ETag: separate blocks; a short last block. */
    fill_new(c, "b/k.tif@E1", 1, 100);
    assert_int_equal(probe(c, "b/k.tif@E1", 1, 100), VT_ROLE_HIT);
    assert_int_equal(probe(c, "b/k.tif@E2", 0, BS), VT_ROLE_FILL);
    st = stats(c);
    assert_int_equal(st.hits, 2);
    assert_int_equal(st.misses, 3);
    assert_int_equal(st.waits, 0);
    assert_int_equal(st.blocks, 3);
    assert_int_equal(st.retained_bytes, 2 * BS + 100);
    assert_int_equal(st.peak_retained_bytes, 2 * BS + 100);
    assert_int_equal(st.transient_bytes, 0);

    /* A failure is not cached, not even while the failed block is still
     * pinned: the next lookup is a miss again, on a fresh block. */
    b = vt__cache_lookup(c, "b/gone.tif@E", 0, &role);
    assert_int_equal(role, VT_ROLE_FILL);
    vt__cache_fail(c, b, VT_ENOTFOUND,
                   "vsitune: read of s3://b/gone.tif: HTTP 404 NoSuchKey: gone");
    char msg[64];
    assert_int_equal(vt__cache_wait(c, b, msg, sizeof(msg)), VT_ENOTFOUND);
    /* Waiters get the filler's full words (cut to their buffer). */
    assert_string_equal(msg, "vsitune: read of s3://b/gone.tif: HTTP 404 NoSuchKey: gone");
    char tiny[8];
    assert_int_equal(vt__cache_wait(c, b, tiny, sizeof(tiny)), VT_ENOTFOUND);
    assert_string_equal(tiny, "vsitune");
    assert_null(vt__block_data(b, NULL));
    vt_block *fresh = vt__cache_lookup(c, "b/gone.tif@E", 0, &role);
    assert_int_equal(role, VT_ROLE_FILL);
    assert_ptr_not_equal(fresh, b);
    assert_int_equal(stats(c).blocks, 5);
    vt__cache_release(c, b);
    assert_int_equal(stats(c).blocks, 4);
    vt__cache_fail(c, fresh, VT_ETRANSIENT, NULL);
    vt__cache_release(c, fresh);
    assert_int_equal(stats(c).blocks, 3);
    assert_int_equal(probe(c, "b/gone.tif@E", 0, 10), VT_ROLE_FILL);
    assert_int_equal(probe(c, "b/gone.tif@E", 0, 10), VT_ROLE_HIT);
    vt__cache_free(c);
}

static void test_lru_order(void **state)
{
    vt_cache *c = vt__cache_new(3 * BS, BS);
    const char *k = "b/lru.tif@E";

    fill_new(c, k, 0, BS);
    fill_new(c, k, 1, BS);
    fill_new(c, k, 2, BS);
    assert_int_equal(probe(c, k, 0, BS), VT_ROLE_HIT);  /* 0 most recent */
    fill_new(c, k, 3, BS);                              /* evicts 1 */
    assert_int_equal(stats(c).evictions, 1);
    assert_int_equal(stats(c).retained_bytes, 3 * BS);
    /* Order of use now (oldest first): 2, 0, 3. Touch 2, 0, 3 again. */
    assert_int_equal(probe(c, k, 2, BS), VT_ROLE_HIT);
    assert_int_equal(probe(c, k, 0, BS), VT_ROLE_HIT);
    assert_int_equal(probe(c, k, 3, BS), VT_ROLE_HIT);
    assert_int_equal(probe(c, k, 1, BS), VT_ROLE_FILL); /* evicts 2 */
    assert_int_equal(probe(c, k, 0, BS), VT_ROLE_HIT);
    assert_int_equal(probe(c, k, 3, BS), VT_ROLE_HIT);
    assert_int_equal(probe(c, k, 2, BS), VT_ROLE_FILL); /* evicts 1 */
    assert_int_equal(probe(c, k, 1, BS), VT_ROLE_FILL); /* evicts 0 */
    assert_int_equal(stats(c).evictions, 4);
    assert_int_equal(stats(c).blocks, 3);
    vt__cache_free(c);
}

static void test_transient_when_pinned(void **state)
{
    vt_cache *c = vt__cache_new(2 * BS, BS);
    const char *k = "b/t.tif@E";
    vt_block_role role;
    vt_block *p0, *p1, *b, *again;
    vt_cache_stats st;

    p0 = vt__cache_lookup(c, k, 0, &role);
    fill_with(c, p0, k, 0, BS);
    p1 = vt__cache_lookup(c, k, 1, &role);
    fill_with(c, p1, k, 1, BS);
    b = vt__cache_lookup(c, k, 2, &role);
    assert_int_equal(role, VT_ROLE_FILL);
    fill_with(c, b, k, 2, BS);  /* both others pinned: cannot be retained */
    st = stats(c);
    assert_int_equal(st.retained_bytes, 2 * BS);
    assert_int_equal(st.transient_bytes, BS);
    assert_int_equal(st.evictions, 0);
    assert_true(data_ok(b, k, 2, BS));
    again = vt__cache_lookup(c, k, 2, &role);  /* still served while pinned */
    assert_int_equal(role, VT_ROLE_HIT);
    assert_ptr_equal(again, b);
    vt__cache_release(c, again);
    assert_true(data_ok(b, k, 2, BS));
    vt__cache_release(c, b);
    st = stats(c);
    assert_int_equal(st.transient_bytes, 0);
    assert_int_equal(st.blocks, 2);
    vt__cache_release(c, p0);
    vt__cache_release(c, p1);
    assert_int_equal(probe(c, k, 2, BS), VT_ROLE_FILL);  /* evicts 0 */
    assert_int_equal(stats(c).retained_bytes, 2 * BS);
    assert_int_equal(probe(c, k, 1, BS), VT_ROLE_HIT);
    vt__cache_free(c);

    /* A block larger than the whole budget is delivered, never retained. */
    c = vt__cache_new(BS / 2, BS);
    b = vt__cache_lookup(c, k, 0, &role);
    fill_with(c, b, k, 0, BS);
    st = stats(c);
    assert_int_equal(st.retained_bytes, 0);
    assert_int_equal(st.transient_bytes, BS);
    assert_true(data_ok(b, k, 0, BS));
    vt__cache_release(c, b);
    st = stats(c);
    assert_int_equal(st.transient_bytes, 0);
    assert_int_equal(st.blocks, 0);
    assert_int_equal(st.peak_retained_bytes, 0);
    vt__cache_free(c);
}

struct waiter {
    vt_cache *c;
    atomic_int *looked_up;   /* incremented once the lookup is done */
    const char *key;
    uint64_t index;
    size_t len;
    vt_block_role role;
    vt_err err;
    int data_good;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    vt_block *b = vt__cache_lookup(w->c, w->key, w->index, &w->role);
    atomic_fetch_add(w->looked_up, 1);
    if (!b)
        return NULL;
    if (w->role == VT_ROLE_FILL)     /* wrong role: main asserts it; the */
        vt__cache_fail(w->c, b, VT_EINVAL, NULL);  /* fail keeps others moving */
    w->err = vt__cache_wait(w->c, b, NULL, 0);
    w->data_good = w->err == VT_OK && data_ok(b, w->key, w->index, w->len);
    vt__cache_release(w->c, b);
    return NULL;
}

/* Spin (yielding) until n threads have done their lookup: a count, not a
 * clock. */
static void await_lookups(atomic_int *looked_up, int n)
{
    while (atomic_load(looked_up) < n)
        sched_yield();
}

static void test_fail_wakes_waiters(void **state)
{
    enum { N = 6 };
    vt_cache *c = vt__cache_new(4 * BS, BS);
    const char *k = "b/fail.tif@E";
    struct waiter w[N];
    pthread_t th[N];
    vt_block_role role;
    vt_block *b = vt__cache_lookup(c, k, 5, &role);
    atomic_int looked_up;

    atomic_init(&looked_up, 0);
    assert_int_equal(role, VT_ROLE_FILL);
    for (int i = 0; i < N; i++) {
        w[i] = (struct waiter){ c, &looked_up, k, 5, BS, VT_ROLE_HIT, VT_OK, 0 };
        assert_int_equal(pthread_create(&th[i], NULL, waiter_main, &w[i]), 0);
    }
    await_lookups(&looked_up, N);
    vt__cache_fail(c, b, VT_ECHANGED, NULL);
    vt__cache_release(c, b);  /* the filler may go first: waiters hold pins */
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].role, VT_ROLE_WAIT);
        assert_int_equal(w[i].err, VT_ECHANGED);
    }
    assert_int_equal(stats(c).blocks, 0);
    assert_int_equal(stats(c).transient_bytes, 0);

    /* Next lookup refetches; this time the waiters get the data. */
    b = vt__cache_lookup(c, k, 5, &role);
    assert_int_equal(role, VT_ROLE_FILL);
    for (int i = 0; i < N; i++) {
        w[i] = (struct waiter){ c, &looked_up, k, 5, BS, VT_ROLE_HIT, VT_OK, 0 };
        assert_int_equal(pthread_create(&th[i], NULL, waiter_main, &w[i]), 0);
    }
    await_lookups(&looked_up, 2 * N);
    fill_with(c, b, k, 5, BS);
    vt__cache_release(c, b);
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].role, VT_ROLE_WAIT);
        assert_int_equal(w[i].err, VT_OK);
        assert_true(w[i].data_good);
    }
    assert_int_equal(stats(c).retained_bytes, BS);
    assert_int_equal(probe(c, k, 5, BS), VT_ROLE_HIT);
    vt__cache_free(c);
}

static void test_drop_prefix(void **state)
{
    vt_cache *c = vt__cache_new(8 * BS, BS);
    const char *a = "s3/b/a.tif@E1", *ab = "s3/b/ab.tif@E1", *x = "s3/c/x@E";
    vt_block_role role;
    vt_block *pinned, *inflight;
    vt_cache_stats st;

    fill_new(c, a, 0, BS);
    fill_new(c, a, 1, BS);
    fill_new(c, ab, 0, BS);
    fill_new(c, x, 0, BS);
    pinned = vt__cache_lookup(c, a, 1, &role);
    assert_int_equal(role, VT_ROLE_HIT);
    inflight = vt__cache_lookup(c, a, 2, &role);
    assert_int_equal(role, VT_ROLE_FILL);

    vt__cache_drop_prefix(c, "s3/b/a.tif@");
    st = stats(c);
    assert_int_equal(st.retained_bytes, 2 * BS);  /* ab and x */
    assert_int_equal(st.transient_bytes, BS);     /* the pinned a:1 */
    assert_int_equal(st.blocks, 4);               /* ab, x, a:1, a:2 */
    assert_true(data_ok(pinned, a, 1, BS));       /* holder still reads */

    assert_int_equal(probe(c, ab, 0, BS), VT_ROLE_HIT);
    assert_int_equal(probe(c, x, 0, BS), VT_ROLE_HIT);
    assert_int_equal(probe(c, a, 0, BS), VT_ROLE_FILL);
    assert_int_equal(probe(c, a, 1, BS), VT_ROLE_FILL);  /* not the old one */
    assert_int_equal(probe(c, a, 2, BS), VT_ROLE_FILL);  /* nor in-flight */
    fill_with(c, inflight, a, 2, BS);                    /* stale: transient */
    st = stats(c);
    assert_int_equal(st.transient_bytes, 2 * BS);
    assert_int_equal(st.retained_bytes, 5 * BS);
    vt__cache_release(c, inflight);
    vt__cache_release(c, pinned);
    st = stats(c);
    assert_int_equal(st.transient_bytes, 0);
    assert_int_equal(st.retained_bytes, 5 * BS);
    assert_int_equal(st.blocks, 5);

    vt__cache_drop_prefix(c, "s3/");
    st = stats(c);
    assert_int_equal(st.retained_bytes, 0);
    assert_int_equal(st.blocks, 0);
    vt__cache_free(c);
}

/* vt__cache_drop forgets ready blocks of one key and index span: the next
 * lookup of each fills anew; a pinned one stays readable by its holder;
 * in-flight blocks, other indexes and other keys stay. */
static void test_drop_blocks(void **state)
{
    vt_cache *c = vt__cache_new(16 * BS, BS);
    const char *a = "b/a.tif\nE1", *b = "b/a.tif\nE2";
    vt_block_role role;
    vt_block *pinned, *inflight;
    vt_cache_stats st;

    (void)state;
    for (uint64_t i = 0; i < 5; i++)
        fill_new(c, a, i, BS);
    fill_new(c, b, 2, BS);
    pinned = vt__cache_lookup(c, a, 2, &role);
    assert_int_equal(role, VT_ROLE_HIT);
    inflight = vt__cache_lookup(c, a, 7, &role);
    assert_int_equal(role, VT_ROLE_FILL);

    assert_int_equal(vt__cache_drop(c, a, 1, 2), 2);  /* a:1, a:2 */
    assert_int_equal(vt__cache_drop(c, a, 7, 1), 0);  /* in flight */
    assert_int_equal(vt__cache_drop(c, a, 9, 3), 0);  /* absent */
    st = stats(c);
    assert_int_equal(st.retained_bytes, 4 * BS);      /* a:0, a:3, a:4, b:2 */
    assert_int_equal(st.transient_bytes, BS);         /* the pinned a:2 */
    assert_true(data_ok(pinned, a, 2, BS));

    assert_int_equal(probe(c, a, 0, BS), VT_ROLE_HIT);
    assert_int_equal(probe(c, a, 1, BS), VT_ROLE_FILL);
    assert_int_equal(probe(c, a, 2, BS), VT_ROLE_FILL);  /* not the old one */
    assert_int_equal(probe(c, a, 3, BS), VT_ROLE_HIT);
    assert_int_equal(probe(c, b, 2, BS), VT_ROLE_HIT);
    assert_int_equal(probe(c, a, 7, BS), VT_ROLE_WAIT);  /* still in flight */
    fill_with(c, inflight, a, 7, BS);
    vt__cache_release(c, inflight);
    vt__cache_release(c, pinned);
    st = stats(c);
    assert_int_equal(st.transient_bytes, 0);
    assert_int_equal(st.retained_bytes, 7 * BS);
    assert_int_equal(st.blocks, 7);
    vt__cache_free(c);
}

static void test_set_budget(void **state)
{
    vt_cache *c = vt__cache_new(4 * BS, BS);
    const char *k = "b/sb.tif@E";
    vt_block_role role;
    vt_block *b;
    vt_cache_stats st;

    for (uint64_t i = 0; i < 4; i++)
        fill_new(c, k, i, BS);
    assert_int_equal(probe(c, k, 0, BS), VT_ROLE_HIT);  /* order: 1 2 3 0 */
    vt__cache_set_budget(c, 2 * BS + 10);
    st = stats(c);
    assert_int_equal(st.budget, 2 * BS + 10);
    assert_int_equal(st.retained_bytes, 2 * BS);
    assert_int_equal(st.evictions, 2);
    assert_int_equal(probe(c, k, 3, BS), VT_ROLE_HIT);
    assert_int_equal(probe(c, k, 0, BS), VT_ROLE_HIT);

    b = vt__cache_lookup(c, k, 0, &role);
    vt__cache_set_budget(c, 0);        /* the pinned block turns transient */
    st = stats(c);
    assert_int_equal(st.retained_bytes, 0);
    assert_int_equal(st.transient_bytes, BS);
    assert_int_equal(st.blocks, 1);
    assert_true(data_ok(b, k, 0, BS));
    vt__cache_release(c, b);
    st = stats(c);
    assert_int_equal(st.transient_bytes, 0);
    assert_int_equal(st.blocks, 0);

    vt__cache_set_budget(c, 3 * BS);
    fill_new(c, k, 7, BS);
    assert_int_equal(probe(c, k, 7, BS), VT_ROLE_HIT);
    assert_int_equal(stats(c).retained_bytes, BS);
    vt__cache_free(c);
}

static void test_budget_zero(void **state)
{
    vt_cache *c = vt__cache_new(0, BS);
    const char *k = "b/z.tif@E";
    vt_block_role r1, r2;
    vt_block *b1 = vt__cache_lookup(c, k, 3, &r1);
    vt_block *b2 = vt__cache_lookup(c, k, 3, &r2);
    vt_cache_stats st;
    char key[32];

    /* Still coalesces: the second lookup waits on the first's fetch. */
    assert_int_equal(r1, VT_ROLE_FILL);
    assert_int_equal(r2, VT_ROLE_WAIT);
    assert_ptr_equal(b1, b2);
    fill_with(c, b1, k, 3, BS);
    assert_int_equal(vt__cache_wait(c, b2, NULL, 0), VT_OK);
    assert_true(data_ok(b2, k, 3, BS));
    vt__cache_release(c, b1);
    vt__cache_release(c, b2);
    assert_int_equal(probe(c, k, 3, BS), VT_ROLE_FILL);

    /* Many distinct keys pinned at once, then released: nothing is left
     * behind (entries exist only while pinned or retained). */
    enum { M = 5000 };
    vt_block **held = calloc(M, sizeof *held);
    assert_non_null(held);
    for (int i = 0; i < M; i++) {
        snprintf(key, sizeof key, "b/many%d@E", i);
        held[i] = vt__cache_lookup(c, key, (uint64_t)i, &r1);
        assert_int_equal(r1, VT_ROLE_FILL);
        fill_with(c, held[i], key, (uint64_t)i, 64);
    }
    assert_int_equal(stats(c).blocks, M);
    assert_int_equal(stats(c).transient_bytes, (size_t)M * 64);
    for (int i = 0; i < M; i++) {
        snprintf(key, sizeof key, "b/many%d@E", i);
        assert_true(data_ok(held[i], key, (uint64_t)i, 64));
        vt__cache_release(c, held[i]);
    }
    free(held);
    st = stats(c);
    assert_int_equal(st.blocks, 0);
    assert_int_equal(st.retained_bytes, 0);
    assert_int_equal(st.peak_retained_bytes, 0);
    assert_int_equal(st.transient_bytes, 0);
    vt__cache_free(c);
}

/* Length of block `index` of random-workload object o: the last block of
 * each object is short. */
static size_t rw_len(int o, uint64_t index)
{
    return index == 15 ? (size_t)(37 * (o + 1)) : BS;
}

struct pin {
    vt_block *b;
    int o;
    uint64_t index;
    vt_block_role role;
    int resolved;   /* FILL: filled or failed already */
};

static void rw_key(char *buf, size_t n, int o)
{
    snprintf(buf, n, "rw/obj%d.tif@E", o);
}

/* Resolve a pending fill: fill with the right bytes, or fail (1 in 8). */
static void rw_resolve(vt_cache *c, struct pin *p, uint64_t *seed)
{
    char key[32];
    rw_key(key, sizeof key, p->o);
    if (splitmix(seed) % 8 == 0)
        vt__cache_fail(c, p->b, VT_ETRANSIENT, NULL);
    else
        fill_with(c, p->b, key, p->index, rw_len(p->o, p->index));
    p->resolved = 1;
}

static void test_random_workload(void **state)
{
    enum { OPS = 100000, MAXPIN = 12, OBJS = 6 };
    uint64_t seed = 42;
    size_t max_budget = 6 * BS;
    vt_cache *c = vt__cache_new(6 * BS, BS);
    struct pin pins[MAXPIN];
    int npins = 0;
    char key[32];

    for (int op = 0; op < OPS; op++) {
        uint64_t r = splitmix(&seed) % 100;
        if (r < 50 && npins < MAXPIN) {
            struct pin *p = &pins[npins];
            p->o = (int)(splitmix(&seed) % OBJS);
            p->index = splitmix(&seed) % 16;
            p->resolved = 0;
            rw_key(key, sizeof key, p->o);
            p->b = vt__cache_lookup(c, key, p->index, &p->role);
            assert_non_null(p->b);
            if (p->role == VT_ROLE_HIT)
                assert_true(data_ok(p->b, key, p->index,
                                    rw_len(p->o, p->index)));
            if (p->role == VT_ROLE_FILL && splitmix(&seed) % 4 != 0)
                rw_resolve(c, p, &seed);
            npins++;
        } else if (r < 95 && npins > 0) {
            int i = (int)(splitmix(&seed) % (uint64_t)npins);
            struct pin *p = &pins[i];
            if (p->role == VT_ROLE_FILL && !p->resolved)
                rw_resolve(c, p, &seed);
            if (p->role == VT_ROLE_WAIT) {
                /* Its filler is pinned here too: resolve it first. */
                for (int j = 0; j < npins; j++)
                    if (pins[j].b == p->b && pins[j].role == VT_ROLE_FILL &&
                        !pins[j].resolved)
                        rw_resolve(c, &pins[j], &seed);
                vt_err err = vt__cache_wait(c, p->b, NULL, 0);
                rw_key(key, sizeof key, p->o);
                if (err == VT_OK)
                    assert_true(data_ok(p->b, key, p->index,
                                        rw_len(p->o, p->index)));
                else
                    assert_int_equal(err, VT_ETRANSIENT);
            }
            vt__cache_release(c, p->b);
            pins[i] = pins[--npins];
        } else if (r < 97) {
            rw_key(key, sizeof key, (int)(splitmix(&seed) % OBJS));
            vt__cache_drop_prefix(c, key);
        } else {
            size_t budget = (size_t)(splitmix(&seed) % (8 * BS));
            if (budget > max_budget)
                max_budget = budget;
            vt__cache_set_budget(c, budget);
        }
        vt_cache_stats st = stats(c);  /* asserts retained <= budget */
        assert_true(st.peak_retained_bytes <= max_budget);
        assert_true(st.transient_bytes <= (size_t)npins * BS);
        /* Blocks in memory: the pinned ones plus at most 8 retained full
         * blocks or short ones (>= 37 bytes) within the budget. */
        assert_true(st.blocks <= (uint64_t)npins + st.budget / 37);
    }
    for (int i = 0; i < npins; i++) {
        if (pins[i].role == VT_ROLE_FILL && !pins[i].resolved)
            rw_resolve(c, &pins[i], &seed);
    }
    for (int i = 0; i < npins; i++)
        vt__cache_release(c, pins[i].b);
    vt_cache_stats st = stats(c);
    assert_int_equal(st.transient_bytes, 0);
    assert_true(st.hits > 1000 && st.evictions > 1000 && st.waits > 100);
    vt__cache_set_budget(c, 0);
    st = stats(c);
    assert_int_equal(st.blocks, 0);
    vt__cache_free(c);
}

/* ---- threads ---- */

struct stress {
    vt_cache *c;
    unsigned seed;
    atomic_int bad;      /* data mismatches or unexpected errors */
    atomic_int failed;   /* fails observed by waiters (expected) */
};

static void *stress_main(void *arg)
{
    struct stress *s = arg;
    uint64_t seed = s->seed;
    char keys[4][32];
    vt_block *b[4];
    vt_block_role role[4];
    int obj[4];
    uint64_t idx[4];

    for (int it = 0; it < 2000; it++) {
        int n = 1 + (int)(splitmix(&seed) % 4);
        for (int i = 0; i < n; i++) {
            obj[i] = (int)(splitmix(&seed) % 4);
            idx[i] = splitmix(&seed) % 64;
            snprintf(keys[i], sizeof keys[i], "st/o%d.tif@E", obj[i]);
            b[i] = vt__cache_lookup(s->c, keys[i], idx[i], &role[i]);
            if (!b[i])
                atomic_fetch_add(&s->bad, 1);
        }
        /* Fill everything we were handed before waiting on anything. */
        for (int i = 0; i < n; i++) {
            if (!b[i] || role[i] != VT_ROLE_FILL)
                continue;
            if (splitmix(&seed) % 50 == 0) {
                vt__cache_fail(s->c, b[i], VT_ETRANSIENT, NULL);
            } else {
                unsigned char buf[BS];
                size_t len = idx[i] == 63 ? 100 : BS;
                make_data(keys[i], idx[i], buf, len);
                vt__cache_fill(s->c, b[i], buf, len);
            }
        }
        for (int i = 0; i < n; i++) {
            if (!b[i])
                continue;
            vt_err err = vt__cache_wait(s->c, b[i], NULL, 0);
            if (err == VT_ETRANSIENT)
                atomic_fetch_add(&s->failed, 1);
            else if (err != VT_OK ||
                     !data_ok(b[i], keys[i], idx[i], idx[i] == 63 ? 100 : BS))
                atomic_fetch_add(&s->bad, 1);
        }
        for (int i = 0; i < n; i++)
            vt__cache_release(s->c, b[i]);
    }
    return NULL;
}

static void test_stress_threads(void **state)
{
    enum { T = 16 };
    vt_cache *c = vt__cache_new(64 * BS, BS);
    struct stress s[T];
    pthread_t th[T];
    int bad = 0;

    for (int i = 0; i < T; i++) {
        s[i].c = c;
        s[i].seed = 1000u + (unsigned)i;
        atomic_init(&s[i].bad, 0);
        atomic_init(&s[i].failed, 0);
        assert_int_equal(pthread_create(&th[i], NULL, stress_main, &s[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        bad += atomic_load(&s[i].bad);
    }
    assert_int_equal(bad, 0);
    vt_cache_stats st = stats(c);
    assert_int_equal(st.transient_bytes, 0);
    assert_true(st.peak_retained_bytes <= 64 * BS);
    assert_true(st.hits > 0 && st.evictions > 0);
    vt__cache_set_budget(c, 0);
    assert_int_equal(stats(c).blocks, 0);
    vt__cache_free(c);
}

struct coal {
    vt_cache *c;
    pthread_barrier_t *bar;
    vt_block_role role;
    vt_err err;
    int data_good;
};

static void *coal_main(void *arg)
{
    struct coal *t = arg;
    const char *k = "b/same.tif@E";
    vt_block *b;

    pthread_barrier_wait(t->bar);             /* all look up together */
    b = vt__cache_lookup(t->c, k, 7, &t->role);
    pthread_barrier_wait(t->bar);             /* all have looked up */
    if (!b)
        return NULL;
    if (t->role == VT_ROLE_FILL)
        fill_with(t->c, b, k, 7, BS);
    t->err = vt__cache_wait(t->c, b, NULL, 0);
    t->data_good = t->err == VT_OK && data_ok(b, k, 7, BS);
    vt__cache_release(t->c, b);
    return NULL;
}

static void test_coalescing(void **state)
{
    enum { T = 16 };
    vt_cache *c = vt__cache_new(8 * BS, BS);
    pthread_barrier_t bar;
    struct coal t[T];
    pthread_t th[T];
    int fills = 0, waits = 0;

    pthread_barrier_init(&bar, NULL, T);
    for (int i = 0; i < T; i++) {
        t[i] = (struct coal){ c, &bar, VT_ROLE_HIT, VT_EINVAL, 0 };
        assert_int_equal(pthread_create(&th[i], NULL, coal_main, &t[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        fills += t[i].role == VT_ROLE_FILL;
        waits += t[i].role == VT_ROLE_WAIT;
        assert_int_equal(t[i].err, VT_OK);
        assert_true(t[i].data_good);
    }
    pthread_barrier_destroy(&bar);
    assert_int_equal(fills, 1);
    assert_int_equal(waits, T - 1);
    vt_cache_stats st = stats(c);
    assert_int_equal(st.misses, 1);
    assert_int_equal(st.waits, T - 1);
    assert_int_equal(st.retained_bytes, BS);
    assert_int_equal(st.blocks, 1);
    vt__cache_free(c);
}

/* fork(): the child keeps ready blocks and forgets blocks a parent thread was
 * filling (that fill will never come in the child), without deadlocking. */
static void test_fork_child_keeps_ready_blocks(void **state)
{
    vt_cache *c = vt__cache_new(1 << 20, 16);
    vt_block_role role;
    vt_block *ready, *filling;
    pid_t pid;
    int status;

    (void)state;
    ready = vt__cache_lookup(c, "k", 0, &role);
    assert_int_equal(role, VT_ROLE_FILL);
    vt__cache_fill(c, ready, "0123456789abcdef", 16);
    vt__cache_release(c, ready);
    filling = vt__cache_lookup(c, "k", 1, &role); /* a fetch in flight */
    assert_int_equal(role, VT_ROLE_FILL);

    vt__cache_fork_prepare(c);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int bad = 0;
        size_t len = 0;
        vt_block *b;
        vt__cache_fork_child(c);
        b = vt__cache_lookup(c, "k", 0, &role);
        bad |= role != VT_ROLE_HIT;
        bad |= memcmp(vt__block_data(b, &len), "0123456789abcdef", 16) != 0;
        vt__cache_release(c, b);
        b = vt__cache_lookup(c, "k", 1, &role);
        bad |= role != VT_ROLE_FILL; /* not WAIT: nobody would ever fill it */
        vt__cache_fail(c, b, VT_ETRANSIENT, NULL);
        vt__cache_release(c, b);
        _exit(bad ? 1 : 0);
    }
    vt__cache_fork_parent(c);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* The parent's fill goes on as if nothing happened. */
    vt__cache_fill(c, filling, "fedcba9876543210", 16);
    vt__cache_release(c, filling);
    ready = vt__cache_lookup(c, "k", 1, &role);
    assert_int_equal(role, VT_ROLE_HIT);
    vt__cache_release(c, ready);
    vt__cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit_miss_fill),
        cmocka_unit_test(test_lru_order),
        cmocka_unit_test(test_transient_when_pinned),
        cmocka_unit_test(test_fail_wakes_waiters),
        cmocka_unit_test(test_drop_prefix),
        cmocka_unit_test(test_drop_blocks),
        cmocka_unit_test(test_set_budget),
        cmocka_unit_test(test_budget_zero),
        cmocka_unit_test(test_random_workload),
        cmocka_unit_test(test_stress_threads),
        cmocka_unit_test(test_coalescing),
        cmocka_unit_test(test_fork_child_keeps_ready_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
