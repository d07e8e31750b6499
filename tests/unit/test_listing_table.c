/* test_listing_table.c: listing.c's table (listing_table.c): newest first,
 * a key found through its hash chain among keys that share a bucket, a
 * name's covering keys found one prefix at a time, unlinking from the
 * middle, the end and twice, the oldest node kept through all of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "read/listing_table.h"

static uint64_t hash_of(const char *s)
{
    return vt__fnv1a_more(VT_FNV1A_BASIS, s, strlen(s));
}

/* The newest node of key, through its chain, or NULL. */
static vt_ltab_node *find(const vt_ltab *t, const char *key)
{
    uint64_t h = hash_of(key);
    for (vt_ltab_node *n = vt__ltab_chain(t, h); n; n = vt__ltab_next_of(n))
        if (vt__ltab_is(n, h, key, strlen(key), "", 0))
            return n;
    return NULL;
}

static void test_hash_in_pieces(void **state)
{
    (void)state;
    /* FNV-1a 64 of "a": a published value */
    assert_true(hash_of("a") == 0xaf63dc4c8601ec8cULL);
    assert_true(hash_of("") == VT_FNV1A_BASIS);
    assert_true(vt__fnv1a_more(hash_of("ep\n"), "b/dir/x", 7) ==
                hash_of("ep\nb/dir/x"));
}

static void test_newest_first_and_unlink(void **state)
{
    static vt_ltab t;
    vt_ltab_node a = {0}, b = {0}, c = {0};
    (void)state;
    memset(&t, 0, sizeof(t));
    vt__ltab_link(&t, &a, "ep\nb/d/a", 8);
    vt__ltab_link(&t, &b, "ep\nb/d/b", 8);
    vt__ltab_link(&t, &c, "ep\nb/d/c", 8);
    assert_int_equal(t.count, 3);
    assert_ptr_equal(t.head, &c);
    assert_ptr_equal(c.next, &b);
    assert_ptr_equal(b.next, &a);
    assert_true(c.seq > b.seq && b.seq > a.seq);

    assert_ptr_equal(vt__ltab_oldest(&t), &a);
    assert_ptr_equal(vt__ltab_newer_of(&a), &b);
    assert_ptr_equal(vt__ltab_newer_of(&b), &c);
    assert_null(vt__ltab_newer_of(&c));

    vt__ltab_unlink(&t, &b); /* the middle */
    assert_ptr_equal(vt__ltab_oldest(&t), &a);
    assert_ptr_equal(vt__ltab_newer_of(&a), &c);
    assert_int_equal(t.count, 2);
    assert_ptr_equal(c.next, &a);
    assert_ptr_equal(a.prev, &c);
    assert_null(find(&t, "ep\nb/d/b"));
    vt__ltab_unlink(&t, &b); /* not linked: nothing changes */
    assert_int_equal(t.count, 2);
    vt__ltab_unlink(&t, &c); /* the head */
    assert_ptr_equal(t.head, &a);
    assert_ptr_equal(vt__ltab_oldest(&t), &a);
    assert_null(a.prev);
    assert_ptr_equal(find(&t, "ep\nb/d/a"), &a);
    vt__ltab_link(&t, &b, "ep\nb/d/b", 8);
    vt__ltab_unlink(&t, &a); /* the oldest */
    assert_ptr_equal(vt__ltab_oldest(&t), &b);
    assert_ptr_equal(t.head, &b);
    vt__ltab_unlink(&t, &b);
    assert_null(t.head);
    assert_null(vt__ltab_oldest(&t));
    assert_int_equal(t.count, 0);
    for (size_t i = 0; i < VT_LTAB_BUCKETS; i++)
        assert_null(t.buckets[i]);
}

/* 2,000 keys in 512 buckets: every chain is shared, and each key is still
 * found, the newest of two equal keys first; unlinking keeps the others. */
static void test_chains_shared(void **state)
{
    static vt_ltab t;
    static vt_ltab_node nodes[2000], twin;
    static char keys[2000][40];
    (void)state;
    memset(&t, 0, sizeof(t));
    for (int i = 0; i < 2000; i++) {
        snprintf(keys[i], sizeof(keys[i]), "127.0.0.1:9000\nlab/many/%05d", i);
        vt__ltab_link(&t, &nodes[i], keys[i], strlen(keys[i]));
    }
    for (int i = 0; i < 2000; i++)
        assert_ptr_equal(find(&t, keys[i]), &nodes[i]);
    vt__ltab_link(&t, &twin, keys[7], strlen(keys[7]));
    assert_ptr_equal(find(&t, keys[7]), &twin);
    vt__ltab_unlink(&t, &twin);
    assert_ptr_equal(find(&t, keys[7]), &nodes[7]);
    for (int i = 0; i < 2000; i += 2)
        vt__ltab_unlink(&t, &nodes[i]);
    assert_int_equal(t.count, 1000);
    for (int i = 0; i < 2000; i++) {
        if (i % 2)
            assert_ptr_equal(find(&t, keys[i]), &nodes[i]);
        else
            assert_null(find(&t, keys[i]));
    }
    assert_null(find(&t, "127.0.0.1:9000\nlab/many/2000"));
}

/* How listing.c finds the listings covering a name: the key's first part
 * (the endpoint) and second part (a prefix of the path) compared apart,
 * one hash extended one byte at a time. */
static void test_prefix_probe(void **state)
{
    static vt_ltab t;
    vt_ltab_node stem = {0}, own = {0}, dir = {0};
    const char *ep = "ep\n", *path = "b/d/scene_B04.tif";
    size_t epl = 3, dl = 4, pl = strlen(path);
    vt_ltab_node *found[32] = {0};
    uint64_t h;
    (void)state;
    memset(&t, 0, sizeof(t));
    vt__ltab_link(&t, &dir, "ep\nb/d/\nnames", 7);
    vt__ltab_link(&t, &stem, "ep\nb/d/scene", 12);
    vt__ltab_link(&t, &own, "ep\nb/d/scene_B04.tif\nsidecars", 20);
    h = vt__fnv1a_more(vt__fnv1a_more(VT_FNV1A_BASIS, ep, epl), path, dl);
    for (size_t k = dl; k <= pl; k++) {
        if (k > dl)
            h = vt__fnv1a_more(h, path + k - 1, 1);
        for (vt_ltab_node *n = vt__ltab_chain(&t, h); n; n = vt__ltab_next_of(n))
            if (vt__ltab_is(n, h, ep, epl, path, k))
                found[k] = n;
    }
    for (size_t k = 0; k <= pl; k++) {
        if (k == 4)
            assert_ptr_equal(found[k], &dir);
        else if (k == 9)
            assert_ptr_equal(found[k], &stem);
        else if (k == pl)
            assert_ptr_equal(found[k], &own);
        else
            assert_null(found[k]);
    }
    /* another endpoint's key of the same path is not this one's */
    assert_false(vt__ltab_is(&stem, stem.hash, "ep2\n", 4, "b/d/scene", 9));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_in_pieces),
        cmocka_unit_test(test_newest_first_and_unlink),
        cmocka_unit_test(test_chains_shared),
        cmocka_unit_test(test_prefix_probe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
