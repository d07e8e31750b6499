/* test_near.c: what near.c learns per directory and what a first GET then
 * asks for. The request shape through GDAL and the lab is tested in
 * tests/integration/test_mosaic_near.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>

#include "read/near.h"

#define KIB 1024u
#define HDR (64 * KIB)
#define MAX (256 * KIB)
#define BS ((size_t)64 * KIB)

/* Table ids as the object table writes them: endpoint "\n" bucket/key. */
#define ID(dir, name) "https://127.0.0.1:1\nlab/" dir "/" name

static void test_unknown_dir_asks_header(void **state)
{
    (void)state;
    assert_int_equal(vt__near_first_read(ID("fresh", "a.tif"), HDR, MAX), HDR);
}

static void test_near_read_grows_first_read(void **state)
{
    (void)state;
    /* an overview block at 87,575 past a 64 KiB header: 128 KiB next time */
    vt__near_note(ID("m", "a.tif"), 20189, 87568, MAX, BS);
    assert_int_equal(vt__near_first_read(ID("m", "b.tif"), HDR, MAX),
                     128 * KIB);
    /* another directory learned nothing */
    assert_int_equal(vt__near_first_read(ID("other", "b.tif"), HDR, MAX),
                     HDR);
    /* a subdirectory is another directory */
    assert_int_equal(vt__near_first_read(ID("m/sub", "b.tif"), HDR, MAX),
                     HDR);
}

static void test_bounded_by_max_and_never_below_header(void **state)
{
    (void)state;
    vt__near_note(ID("cap", "a.tif"), 70000, 200000, MAX, BS);
    assert_int_equal(vt__near_first_read(ID("cap", "b.tif"), HDR, MAX),
                     256 * KIB);
    /* the option lowered later: its value bounds what was learned */
    assert_int_equal(vt__near_first_read(ID("cap", "b.tif"), HDR, 128 * KIB),
                     128 * KIB);
    /* at or below the header size: learning is off */
    assert_int_equal(vt__near_first_read(ID("cap", "b.tif"), HDR, HDR), HDR);
    assert_int_equal(vt__near_first_read(ID("cap", "b.tif"), HDR, 0), HDR);
    /* a header size above what was learned wins */
    assert_int_equal(vt__near_first_read(ID("cap", "b.tif"), 512 * KIB,
                                         1024 * KIB), 512 * KIB);
}

static void test_far_reads_teach_nothing_then_undo(void **state)
{
    int i;

    (void)state;
    /* a read ending past the bound, or starting past it: far */
    vt__near_note(ID("far", "a.tif"), 70000, MAX + 1, MAX, BS);
    vt__near_note(ID("far", "b.tif"), 3u * 1024 * 1024, 3u * 1024 * 1024 + 9,
                  MAX, BS);
    assert_int_equal(vt__near_first_read(ID("far", "c.tif"), HDR, MAX), HDR);
    /* one near object is remembered over the next 7 far ones, not the 8th */
    vt__near_note(ID("far", "d.tif"), 65536, 100000, MAX, BS);
    for (i = 0; i < 7; i++) {
        vt__near_note(ID("far", "e.tif"), 5000000, 5000100, MAX, BS);
        assert_int_equal(vt__near_first_read(ID("far", "x.tif"), HDR, MAX),
                         128 * KIB);
    }
    vt__near_note(ID("far", "e.tif"), 5000000, 5000100, MAX, BS);
    assert_int_equal(vt__near_first_read(ID("far", "x.tif"), HDR, MAX), HDR);
}

static void test_bounded_directories(void **state)
{
    char id[64];
    int i;

    (void)state;
    vt__near_note(ID("keep", "a.tif"), 65536, 70000, MAX, BS);
    /* 200 other directories push the least recently used ones out */
    for (i = 0; i < 200; i++) {
        snprintf(id, sizeof(id), "e\nlab/d%d/a.tif", i);
        vt__near_note(id, 65536, 70000, MAX, BS);
    }
    assert_int_equal(vt__near_first_read(ID("keep", "b.tif"), HDR, MAX), HDR);
    assert_int_equal(vt__near_first_read("e\nlab/d199/b.tif", HDR, MAX),
                     128 * KIB);
}

static void test_family_of_a_new_directory(void **state)
{
    (void)state;
    /* a STAC catalog: each item a directory, its assets named alike */
    vt__near_note(ID("items/i1", "ov.tif"), 65536, 100000, MAX, BS);
    assert_int_equal(vt__near_first_read(ID("items/i2", "ov.tif"), HDR, MAX),
                     128 * KIB);
    assert_int_equal(vt__near_first_read(ID("elsewhere/i9", "ov.tif"), HDR,
                                         MAX), 128 * KIB);
    /* another name in a new directory: nothing learned */
    assert_int_equal(vt__near_first_read(ID("items/i2", "B01.tif"), HDR, MAX),
                     HDR);
    /* a directory noted goes by its own notes, not its family's */
    vt__near_note(ID("items/i3", "B01.tif"), 70000, 200000, MAX, BS);
    assert_int_equal(vt__near_first_read(ID("items/i3", "ov.tif"), HDR, MAX),
                     256 * KIB);
    assert_int_equal(vt__near_first_read(ID("items/i6", "ov.tif"), HDR, MAX),
                     128 * KIB);
    /* a far note teaches the family too: the family's next first GET
     * asks the largest of its last 8 (one near, one far): still 128 KiB */
    vt__near_note(ID("items/i4", "ov.tif"), 70000, MAX + 1, MAX, BS);
    assert_int_equal(vt__near_first_read(ID("items/i5", "ov.tif"), HDR, MAX),
                     128 * KIB);
    /* items naming their files after themselves (Landsat, HLS): the asset
     * part of the name is the family */
    vt__near_note(ID("c2/LC08_042034_T1", "LC08_042034_T1_SR_B4.TIF"), 65536,
                  100000, MAX, BS);
    assert_int_equal(vt__near_first_read(ID("c2/LC09_043034_T1",
                                            "LC09_043034_T1_SR_B4.TIF"),
                                         HDR, MAX), 128 * KIB);
    assert_int_equal(vt__near_first_read(ID("c2/LC09_043034_T1",
                                            "LC09_043034_T1_SR_B5.TIF"),
                                         HDR, MAX), HDR);
}

static void test_once(void **state)
{
    int flag = 0;

    (void)state;
    assert_true(vt__near_once(&flag));
    assert_false(vt__near_once(&flag));
    assert_false(vt__near_once(&flag));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_dir_asks_header),
        cmocka_unit_test(test_near_read_grows_first_read),
        cmocka_unit_test(test_bounded_by_max_and_never_below_header),
        cmocka_unit_test(test_far_reads_teach_nothing_then_undo),
        cmocka_unit_test(test_bounded_directories),
        cmocka_unit_test(test_family_of_a_new_directory),
        cmocka_unit_test(test_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
