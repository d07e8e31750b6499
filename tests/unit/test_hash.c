/* test_hash.c: the plugin's one string hash (base/hash.c) is FNV-1a, 64-bit:
 * the reference vectors of the algorithm's authors, a hash built in pieces
 * equal to the whole's, byte order, and the length (not a terminator)
 * deciding what is hashed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/hash.h"

static void test_reference_vectors(void **state)
{
    (void)state;
    assert_true(vt__fnv1a("", 0) == 0xcbf29ce484222325ULL);
    assert_true(vt__fnv1a("a", 1) == 0xaf63dc4c8601ec8cULL);
    assert_true(vt__fnv1a("foobar", 6) == 0x85944171f73967e8ULL);
}

static void test_in_pieces(void **state)
{
    (void)state;
    assert_true(vt__fnv1a("", 0) == VT_FNV1A_BASIS);
    assert_true(vt__fnv1a_more(VT_FNV1A_BASIS, "foobar", 6) == vt__fnv1a("foobar", 6));
    assert_true(vt__fnv1a_more(vt__fnv1a("foo", 3), "bar", 3) == vt__fnv1a("foobar", 6));
    assert_true(vt__fnv1a_more(vt__fnv1a("foobar", 6), "", 0) == vt__fnv1a("foobar", 6));
}

static void test_length_decides(void **state)
{
    static const char s[] = "lab/mosaic/m_0_0.tif\0tail";

    (void)state;
    /* a prefix of a name hashes as that prefix, bytes past a NUL count */
    assert_true(vt__fnv1a(s, 10) == vt__fnv1a("lab/mosaic", 10));
    assert_true(vt__fnv1a(s, sizeof s - 1) != vt__fnv1a(s, 20));
    /* high bytes are taken unsigned */
    assert_true(vt__fnv1a("\xff", 1) != vt__fnv1a("\x7f", 1));
    assert_true(vt__fnv1a("ab", 2) != vt__fnv1a("ba", 2));
}

static void test_id_is_the_hash_itself(void **state)
{
    (void)state;
    /* not the hash with its low bit set: an even hash stays even, so two
     * names whose hashes differ in that bit keep apart */
    assert_true(vt__fnv1a_id("a", 1) == 0xaf63dc4c8601ec8cULL);
    assert_true(vt__fnv1a_id("foobar", 6) == vt__fnv1a("foobar", 6));
    assert_true(vt__fnv1a_id("", 0) == VT_FNV1A_BASIS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_vectors),
        cmocka_unit_test(test_in_pieces),
        cmocka_unit_test(test_length_decides),
        cmocka_unit_test(test_id_is_the_hash_itself),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
