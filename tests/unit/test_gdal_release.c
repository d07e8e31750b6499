/* test_gdal_release.c: the table of GDAL releases' rules (gdal_release.c):
 * which row each GDAL version gets, what each row says, and that the
 * running GDAL's row is chosen from GDALVersionInfo and can be set by a
 * test and set back. The rules' effects are tested where they are used
 * (test_gdal_error.c, test_config.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <gdal.h>

#include "compat/gdal_release.h"

static int teardown(void **state)
{
    (void)state;
    vt__gdal_release_set(0);
    return 0;
}

/* Each version gets the row of the last release at or below it that
 * changed a rule; one below 3.6 gets 3.6's. */
static void test_row_for_version(void **state)
{
    static const struct {
        int version;
        const char *row;
    } cases[] = {
        {3050000, "3.6"},  {3060000, "3.6"},  {3060200, "3.6"},
        {3069999, "3.6"},  {3070000, "3.7"},  {3090300, "3.7"},
        {3100000, "3.10"}, {3100300, "3.10"}, {3110000, "3.11"},
        {3120200, "3.11"}, {3130000, "3.13"}, {3130300, "3.13"},
        {3990000, "3.13"}, {4000000, "3.13"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        const vt_gdal_release *r = vt__gdal_release_for(cases[i].version);
        if (strcmp(r->name, cases[i].row) != 0)
            fail_msg("%d: row %s, want %s", cases[i].version, r->name,
                     cases[i].row);
        assert_true(cases[i].version < 3060000 || r->from <= cases[i].version);
    }
}

/* The rules of the three releases this project runs on, each written out:
 * a row that loses or gains a rule by mistake fails here. */
static void test_rules_per_release(void **state)
{
    static const struct {
        int version;
        int ca, known, one_page, asked_again, read_says, words_313;
    } cases[] = {
        /* version   ca known page again read  words */
        {3060200,    0, 0,    0,   0,    0,    0},
        {3070000,    1, 0,    0,   0,    0,    0},
        {3100300,    1, 1,    0,   0,    0,    0},
        {3110000,    1, 1,    1,   0,    0,    0},
        {3120000,    1, 1,    1,   0,    0,    0},
        {3130300,    1, 1,    1,   1,    1,    1},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        const vt_gdal_release *r = vt__gdal_release_for(cases[i].version);
        print_message("GDAL %d: row %s\n", cases[i].version, r->name);
        assert_int_equal(r->ca_first_wins_by_path, cases[i].ca);
        assert_int_equal(r->http_opts_by_path, cases[i].ca); /* one PR */
        assert_int_equal(r->known_failure_says_status, cases[i].known);
        assert_int_equal(r->open_listing_one_page, cases[i].one_page);
        assert_int_equal(r->network_failure_asked_again, cases[i].asked_again);
        assert_int_equal(r->read_of_missing_says, cases[i].read_says);
        assert_int_equal(strncmp(r->no_creds_before, "No valid AWS", 12) == 0,
                         cases[i].words_313);
        assert_non_null(r->no_creds_after);
    }
}

/* The running GDAL's row, from GDALVersionInfo; a test's choice replaces
 * it in every later call and 0 gives it back. */
static void test_running_and_set(void **state)
{
    int running = atoi(GDALVersionInfo("VERSION_NUM"));
    const vt_gdal_release *own = vt__gdal_release_for(running);
    (void)state;
    assert_int_equal(vt__gdal_release_running(), running);
    assert_ptr_equal(vt__gdal_release(), own);
    vt__gdal_release_set(3130300);
    assert_string_equal(vt__gdal_release()->name, "3.13");
    assert_int_equal(vt__gdal_release_running(), running);
    vt__gdal_release_set(3060200);
    assert_string_equal(vt__gdal_release()->name, "3.6");
    vt__gdal_release_set(0);
    assert_ptr_equal(vt__gdal_release(), own);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_for_version),
        cmocka_unit_test(test_rules_per_release),
        cmocka_unit_test_teardown(test_running_and_set, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
