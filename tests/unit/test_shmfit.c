/* test_shmfit.c: the shared segment's size on a given file system
 * (shmfit.c): what was asked when it fits, else at most half of the file
 * system and nine tenths of its free space, in whole blocks; 0 under the
 * 8 MiB minimum; and the sentence that says which bound applied. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "shmfit.h"

#define MIB (1024ULL * 1024)
#define BLOCK 65536ULL

static void test_fits_as_asked(void **state)
{
    char why[256];

    (void)state;
    assert_int_equal(vt__shm_fit(256 * MIB, 4096 * MIB, 4000 * MIB, BLOCK, "/dev/shm", why,
                                 sizeof why), 256 * MIB);
    assert_string_equal(why, "256 MiB (/dev/shm has 4096 MiB, 4000 MiB free)");
}

static void test_half_of_the_file_system(void **state)
{
    char why[256];

    (void)state;
    assert_int_equal(vt__shm_fit(256 * MIB, 64 * MIB, 64 * MIB, BLOCK, "/dev/shm", why,
                                 sizeof why), 32 * MIB);
    assert_non_null(strstr(why, "fitted to 32 MiB (at most half of it)"));
}

static void test_nine_tenths_of_free_in_blocks(void **state)
{
    char why[256];
    uint64_t fit, avail = 100 * MIB + 12345; /* nine tenths: not whole blocks */

    (void)state;
    fit = vt__shm_fit(1024 * MIB, 4096 * MIB, avail, BLOCK, "/x", why, sizeof why);
    assert_int_equal(fit % BLOCK, 0);
    assert_true(fit <= avail / 10 * 9);
    assert_true(fit > avail / 10 * 9 - BLOCK);
    assert_non_null(strstr(why, "(nine tenths of what is free)"));
    assert_non_null(strstr(why, "/x has 4096 MiB (100 MiB free)"));
}

static void test_under_the_minimum(void **state)
{
    char why[256];

    (void)state;
    assert_int_equal(vt__shm_fit(64 * MIB, 8 * MIB, 8 * MIB, BLOCK, "/dev/shm", why,
                                 sizeof why), 0);
    assert_non_null(strstr(why, "under the 8 MiB minimum"));
    /* exactly the minimum is enough */
    assert_int_equal(vt__shm_fit(VT_SHM_MIN_SIZE, 64 * MIB, 64 * MIB, BLOCK, "/d", why,
                                 sizeof why), VT_SHM_MIN_SIZE);
    /* asked for less than the minimum: nothing shared */
    assert_int_equal(vt__shm_fit(4 * MIB, 4096 * MIB, 4096 * MIB, BLOCK, "/d", why,
                                 sizeof why), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fits_as_asked),
        cmocka_unit_test(test_half_of_the_file_system),
        cmocka_unit_test(test_nine_tenths_of_free_in_blocks),
        cmocka_unit_test(test_under_the_minimum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
