/* test_stock.c: the registered way down to GDAL's own /vsis3/ code
 * (stock.c). The calls land in the functions registered with
 * vt__stock_set_callbacks, with the caller's arguments, and hand back their
 * answers; the registration is a copy; with nothing registered, or a member
 * NULL, a stat fails with ENOENT, a listing is NULL, a cache clear does
 * nothing. (That handler.c's VSI callbacks ask through these calls is
 * test_handler.c's test_gdal_questions_go_to_registered; that
 * vt__takeover_install registers GDAL's own handler is test_takeover.cpp's
 * test_registered_stock_is_gdals.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include <cpl_string.h>
#include <cpl_vsi.h>

#include "gdal/stock.h"

static int n_stat, n_read_dir, n_clear;
static const char *last_path;
static int last_arg;

static int rec_stat(const char *path, VSIStatBufL *st, int flags)
{
    n_stat++;
    last_path = path;
    last_arg = flags;
    memset(st, 0, sizeof *st);
    st->st_mode = S_IFDIR;
    return 0;
}

static char **rec_read_dir(const char *path, int max_files)
{
    n_read_dir++;
    last_path = path;
    last_arg = max_files;
    return CSLAddString(NULL, "listed.tif");
}

static void rec_partial_clear(const char *path)
{
    n_clear++;
    last_path = path;
}

static void reset(void)
{
    n_stat = n_read_dir = n_clear = last_arg = 0;
    last_path = NULL;
}

static void test_registered_calls_land(void **state)
{
    static const vt_stock_callbacks rec = { rec_stat, rec_read_dir, rec_partial_clear };
    const char *path = "lb/dir/";
    VSIStatBufL st;
    char **names;

    (void)state;
    reset();
    vt__stock_set_callbacks(&rec);
    assert_int_equal(vt__stock_stat(NULL, path, &st, VSI_STAT_NATURE_FLAG), 0);
    assert_true(VSI_ISDIR(st.st_mode));
    assert_ptr_equal(last_path, path);
    assert_int_equal(last_arg, VSI_STAT_NATURE_FLAG);
    names = vt__stock_read_dir(NULL, "lb/dir", 7);
    assert_non_null(names);
    assert_string_equal(names[0], "listed.tif");
    CSLDestroy(names);
    assert_string_equal(last_path, "lb/dir");
    assert_int_equal(last_arg, 7);
    vt__stock_partial_clear(NULL, "lb");
    assert_string_equal(last_path, "lb");
    assert_int_equal(n_stat, 1);
    assert_int_equal(n_read_dir, 1);
    assert_int_equal(n_clear, 1);
    vt__stock_set_callbacks(NULL);
}

/* A stat fails with ENOENT and a cache clear does nothing: the answers
 * when nothing is registered for them. */
static void assert_stat_and_clear_fail_cleanly(void)
{
    VSIStatBufL st;

    errno = 0;
    assert_int_equal(vt__stock_stat(NULL, "lb/dir/", &st, 0), -1);
    assert_int_equal(errno, ENOENT);
    vt__stock_partial_clear(NULL, "lb");
}

static void test_nothing_registered_fails_cleanly(void **state)
{
    (void)state;
    reset();
    vt__stock_set_callbacks(NULL);
    assert_stat_and_clear_fail_cleanly();
    assert_null(vt__stock_read_dir(NULL, "lb/dir", 0));
    assert_int_equal(n_stat + n_read_dir + n_clear, 0);
}

static void test_null_members_fail_cleanly(void **state)
{
    static const vt_stock_callbacks only_read_dir = { NULL, rec_read_dir, NULL };
    char **names;

    (void)state;
    reset();
    vt__stock_set_callbacks(&only_read_dir);
    assert_stat_and_clear_fail_cleanly();
    names = vt__stock_read_dir(NULL, "lb/dir", 0);
    assert_non_null(names);
    CSLDestroy(names);
    assert_int_equal(n_stat + n_clear, 0);
    assert_int_equal(n_read_dir, 1);
    vt__stock_set_callbacks(NULL);
}

/* The caller's struct may go away once registered. */
static void test_registration_is_a_copy(void **state)
{
    vt_stock_callbacks cb = { rec_stat, rec_read_dir, rec_partial_clear };
    VSIStatBufL st;

    (void)state;
    reset();
    vt__stock_set_callbacks(&cb);
    memset(&cb, 0, sizeof cb);
    assert_int_equal(vt__stock_stat(NULL, "lb/dir/", &st, 0), 0);
    vt__stock_partial_clear(NULL, "lb");
    assert_int_equal(n_stat, 1);
    assert_int_equal(n_clear, 1);
    vt__stock_set_callbacks(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registered_calls_land),
        cmocka_unit_test(test_nothing_registered_fails_cleanly),
        cmocka_unit_test(test_null_members_fail_cleanly),
        cmocka_unit_test(test_registration_is_a_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
