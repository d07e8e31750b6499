/* test_slots.c: the slot a bounded table fills next (slots.c): free slots
 * first, in order; when full, the oldest in round robin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/slots.h"

typedef struct row {
    long before;  /* the key is not the first member */
    char *key;
} row;

static void test_free_first_then_round_robin(void **state)
{
    row t[3] = {{0, NULL}, {0, NULL}, {0, NULL}};
    char k = 'k';
    size_t next = 0;
    int evict = -1;

    (void)state;
    for (size_t want = 0; want < 3; want++) {
        size_t i = vt__slot_take(t, sizeof t[0], 3, offsetof(row, key), &next, &evict);
        assert_int_equal(i, want);
        assert_int_equal(evict, 0);
        t[i].key = &k;
    }
    /* full: 0, 1, 2, 0, ... each in use */
    for (size_t n = 0; n < 5; n++) {
        size_t i = vt__slot_take(t, sizeof t[0], 3, offsetof(row, key), &next, &evict);
        assert_int_equal(i, n % 3);
        assert_int_equal(evict, 1);
    }
    /* a slot freed is taken before the next in turn */
    t[2].key = NULL;
    assert_int_equal(vt__slot_take(t, sizeof t[0], 3, offsetof(row, key), &next, &evict), 2);
    assert_int_equal(evict, 0);
    assert_int_equal(next, 2); /* the turn did not move */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_free_first_then_round_robin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
