/* test_hdrsize.c: the first GET's size learned per prefix (read/hdrsize.c):
 * the option's size until a prefix has a sample, then the largest of its
 * last VT_HDRSIZE_SAMPLES needs with a margin, never above the option; an
 * unknown need brings the option's size back until it leaves the window;
 * prefixes apart; the margin's arithmetic; a directory never seen asks its
 * family (the same name in the bucket's other directories); prefixes whose
 * hashes meet in the table all kept (a directory and its family are two
 * prefixes: CI saw a family note evict its own directory's samples). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "read/hdrsize.h"

#define MAX 65536u
#define P "http://lab:9000\nlab/many"

static int reset(void **state)
{
    (void)state;
    vt__hdrsize_reset();
    return 0;
}

static void test_round(void **state)
{
    (void)state;
    /* 6,556 + 819 + 1,024 = 8,399, up to 1 KiB: 9,216 */
    assert_int_equal(vt__hdrsize_round(6556, MAX), 9216);
    assert_int_equal(vt__hdrsize_round(1, MAX), 2048);
    assert_true(vt__hdrsize_round(21522, MAX) >= 21522);
    assert_int_equal(vt__hdrsize_round(60000, MAX), MAX);
    assert_int_equal(vt__hdrsize_round(MAX, MAX), MAX);
    assert_int_equal(vt__hdrsize_round(UINT64_MAX, MAX), MAX);
    assert_int_equal(vt__hdrsize_round(3000, 4096), 4096);
}

static void test_first_open_asks_the_option(void **state)
{
    (void)state;
    assert_int_equal(vt__hdrsize_get(P, strlen(P), MAX), MAX);
    vt__hdrsize_note(P, strlen(P), 6556);
    assert_int_equal(vt__hdrsize_get(P, strlen(P), MAX), 9216);
    /* bounded by the option as set now */
    assert_int_equal(vt__hdrsize_get(P, strlen(P), 8192), 8192);
    /* only the prefix's length counts */
    assert_int_equal(vt__hdrsize_get(P "/obj1.tif", strlen(P), MAX), 9216);
    /* another prefix knows nothing */
    assert_int_equal(vt__hdrsize_get(P "2", strlen(P) + 1, MAX), MAX);
}

static void test_largest_of_the_window(void **state)
{
    int i;
    (void)state;
    vt__hdrsize_note(P, strlen(P), 21522);
    for (i = 0; i < VT_HDRSIZE_SAMPLES - 1; i++) {
        vt__hdrsize_note(P, strlen(P), 6556);
        assert_int_equal(vt__hdrsize_get(P, strlen(P), MAX),
                         vt__hdrsize_round(21522, MAX));
    }
    vt__hdrsize_note(P, strlen(P), 6556); /* the large one leaves */
    assert_int_equal(vt__hdrsize_get(P, strlen(P), MAX), 9216);
}

static void test_unknown_brings_the_option_back(void **state)
{
    int i;
    (void)state;
    vt__hdrsize_note(P, strlen(P), 6556);
    vt__hdrsize_note(P, strlen(P), VT_HDRSIZE_UNKNOWN);
    for (i = 0; i < VT_HDRSIZE_SAMPLES; i++) { /* the unknown one leaves */
        assert_int_equal(vt__hdrsize_get(P, strlen(P), MAX), MAX);
        vt__hdrsize_note(P, strlen(P), 6556);
    }
    assert_int_equal(vt__hdrsize_get(P, strlen(P), MAX), 9216);
}

#define EP "https://127.0.0.1:1\n"

static void test_family_key(void **state)
{
    char out[256];
    size_t n;
    (void)state;
    n = vt__hdrsize_family(EP "cogs/items/S2A_1/B04.tif", out, sizeof(out));
    assert_int_equal(n, strlen(EP "cogs/") + 1 + strlen("B04.tif"));
    assert_memory_equal(out, EP "cogs/\001B04.tif", n);
    /* every depth of directory, one family */
    n = vt__hdrsize_family(EP "cogs/B04.tif/x/B04.tif", out, sizeof(out));
    assert_memory_equal(out, EP "cogs/\001B04.tif", n);
    /* at the bucket's top: none (the directory is the bucket) */
    assert_int_equal(vt__hdrsize_family(EP "cogs/B04.tif", out, sizeof(out)), 0);
    assert_int_equal(vt__hdrsize_family(EP "cogs", out, sizeof(out)), 0);
    /* no room: none */
    assert_int_equal(vt__hdrsize_family(EP "cogs/i/B04.tif", out, 8), 0);
    /* a name led by its directory's name (Landsat, HLS): the rest */
    n = vt__hdrsize_family(EP "usgs/c2/042/034/LC08_L2SP_042034_20200101_02_T1/"
                              "LC08_L2SP_042034_20200101_02_T1_SR_B4.TIF",
                           out, sizeof(out));
    assert_int_equal(n, strlen(EP "usgs/") + 1 + strlen("_SR_B4.TIF"));
    assert_memory_equal(out, EP "usgs/\002_SR_B4.TIF", n);
    n = vt__hdrsize_family(EP "lp/HLS.S30.T10SEG.2021001T190111.v2.0/"
                              "HLS.S30.T10SEG.2021001T190111.v2.0.B04.tif",
                           out, sizeof(out));
    assert_memory_equal(out, EP "lp/\002.B04.tif", n);
    /* a name equal to its directory's, or not led by it: the whole name */
    n = vt__hdrsize_family(EP "cogs/a/B04.tif/B04.tif", out, sizeof(out));
    assert_memory_equal(out, EP "cogs/\001B04.tif", n);
    n = vt__hdrsize_family(EP "cogs/S2_1/B04_S2_1.tif", out, sizeof(out));
    assert_memory_equal(out, EP "cogs/\001B04_S2_1.tif", n);
    /* an empty directory name ("//"): the whole name */
    n = vt__hdrsize_family(EP "cogs/a//B04.tif", out, sizeof(out));
    assert_memory_equal(out, EP "cogs/\001B04.tif", n);
}

static void test_new_directory_asks_its_family(void **state)
{
    (void)state;
    assert_int_equal(vt__hdrsize_for(EP "cogs/item1/B04.tif", MAX), MAX);
    vt__hdrsize_note_for(EP "cogs/item1/B04.tif", 6556);
    /* its directory */
    assert_int_equal(vt__hdrsize_for(EP "cogs/item1/B03.tif", MAX), 9216);
    /* the same name in another item's directory */
    assert_int_equal(vt__hdrsize_for(EP "cogs/item2/B04.tif", MAX), 9216);
    assert_int_equal(vt__hdrsize_for(EP "cogs/a/b/c/B04.tif", MAX), 9216);
    /* another name there, another bucket, another endpoint: nothing */
    assert_int_equal(vt__hdrsize_for(EP "cogs/item2/B03.tif", MAX), MAX);
    assert_int_equal(vt__hdrsize_for(EP "other/item2/B04.tif", MAX), MAX);
    assert_int_equal(vt__hdrsize_for("https://h:2\ncogs/item2/B04.tif", MAX),
                     MAX);
    /* items naming their files after themselves: the asset's part */
    vt__hdrsize_note_for(EP "cogs/LC08_1/LC08_1_SR_B4.TIF", 6556);
    assert_int_equal(vt__hdrsize_for(EP "cogs/LC09_2/LC09_2_SR_B4.TIF", MAX),
                     9216);
    assert_int_equal(vt__hdrsize_for(EP "cogs/LC09_2/LC09_2_SR_B5.TIF", MAX),
                     MAX);
    /* ... and not the family of a file named as that part alone */
    assert_int_equal(vt__hdrsize_for(EP "cogs/x/_SR_B4.TIF", MAX), MAX);
    /* a directory with samples of its own goes by them, not the family */
    vt__hdrsize_note_for(EP "cogs/item3/B08.tif", 21522);
    assert_int_equal(vt__hdrsize_for(EP "cogs/item3/B04.tif", MAX),
                     vt__hdrsize_round(21522, MAX));
}

/* n prefixes "EP lab/d<i>" whose hashes agree modulo 256 (the table's old
 * slot count, a multiple of any set count it may use), written to out. */
static void same_slot(char out[][64], int n)
{
    unsigned want = 0;
    int found = 0;

    for (unsigned i = 0; found < n && i < 1000000; i++) {
        char s[64];
        int len = snprintf(s, sizeof s, EP "lab/d%u", i);
        unsigned at = (unsigned)(vt__fnv1a(s, (size_t)len) % 256);

        if (found == 0)
            want = at;
        if (at == want)
            memcpy(out[found++], s, (size_t)len + 1);
    }
    assert_int_equal(found, n);
}

static void test_prefixes_meeting_in_the_table_are_kept(void **state)
{
    char p[4][64];

    (void)state;
    same_slot(p, 4);
    for (int i = 0; i < 4; i++)
        vt__hdrsize_note(p[i], strlen(p[i]), 6556);
    for (int i = 0; i < 4; i++)
        assert_int_equal(vt__hdrsize_get(p[i], strlen(p[i]), MAX), 9216);
}

static void test_the_least_recent_of_a_full_set_goes(void **state)
{
    char p[VT_HDRSIZE_WAYS + 1][64];
    int n = VT_HDRSIZE_WAYS;

    (void)state;
    same_slot(p, n + 1);
    for (int i = 0; i < n; i++)
        vt__hdrsize_note(p[i], strlen(p[i]), 6556);
    /* p[0] asked again: now the most recent; p[1] the least */
    assert_int_equal(vt__hdrsize_get(p[0], strlen(p[0]), MAX), 9216);
    vt__hdrsize_note(p[n], strlen(p[n]), 6556);
    assert_int_equal(vt__hdrsize_get(p[1], strlen(p[1]), MAX), MAX);
    assert_int_equal(vt__hdrsize_get(p[0], strlen(p[0]), MAX), 9216);
    for (int i = 2; i <= n; i++)
        assert_int_equal(vt__hdrsize_get(p[i], strlen(p[i]), MAX), 9216);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round),
        cmocka_unit_test_setup(test_first_open_asks_the_option, reset),
        cmocka_unit_test_setup(test_largest_of_the_window, reset),
        cmocka_unit_test_setup(test_unknown_brings_the_option_back, reset),
        cmocka_unit_test(test_family_key),
        cmocka_unit_test_setup(test_new_directory_asks_its_family, reset),
        cmocka_unit_test_setup(test_prefixes_meeting_in_the_table_are_kept, reset),
        cmocka_unit_test_setup(test_the_least_recent_of_a_full_set_goes, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
