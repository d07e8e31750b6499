/* test_forget.c: forget.h tells every module that remembers names, through
 * one call per kind: a name, a prefix, everything. Judged by what each
 * module then answers (a listing of GDAL's names no longer held, a cached
 * block gone) and by what a fake backend was asked to forget (the name, the
 * prefix, NULL for everything: only ClearCache forgets redirects and
 * credentials). No network: nothing here sends a request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "read/forget.h"
#include "read/listing.h"
#include "read/object.h"

/* What the fake backend was asked to forget, and how many times. */
static char forgot[256];
static int forgot_null, forgot_calls;

static char *fake_endpoint(const char *path)
{
    (void)path;
    return strdup("http://fake.invalid");
}

static void fake_forget(const char *prefix)
{
    forgot_calls++;
    forgot_null = prefix == NULL;
    snprintf(forgot, sizeof forgot, "%s", prefix ? prefix : "");
}

static const vt_backend fake = {
    .name = "fake",
    .gdal_prefix = "/vsifake/",
    .scheme = "fake://",
    .endpoint = fake_endpoint,
    .forget = fake_forget,
};

static void reset_fake(void)
{
    forgot[0] = '\0';
    forgot_null = 0;
    forgot_calls = 0;
}

/* GDAL's names of directory dir ("b/d"): a.tif and a.tif.ovr. */
static void remember_dir(const char *dir)
{
    char *names[] = { "a.tif", "a.tif.ovr", NULL };
    char path[256];

    vt__listing_remember_names(&fake, dir, names);
    snprintf(path, sizeof path, "%s/a.tif", dir);
    assert_int_equal(vt__listing_in_gdal_dir(&fake, path), 1);
}

/* A filled block of key, so that its loss can be seen. */
static void put_block(const char *key)
{
    vt_cache *c = vt__object_cache();
    vt_block_role role;
    vt_block *b = vt__cache_lookup(c, key, 0, &role);

    assert_non_null(b);
    if (role == VT_ROLE_FILL)
        vt__cache_fill(c, b, "x", 1);
    vt__cache_release(c, b);
}

/* 1 when key's block is cached (a hit), else 0 (the claim is given back). */
static int has_block(const char *key)
{
    vt_cache *c = vt__object_cache();
    vt_block_role role;
    vt_block *b = vt__cache_lookup(c, key, 0, &role);

    assert_non_null(b);
    if (role == VT_ROLE_FILL)
        vt__cache_fail(c, b, VT_ETRANSIENT, NULL);
    vt__cache_release(c, b);
    return role == VT_ROLE_HIT;
}

static void name_tells_listing_and_backend(void **state)
{
    (void)state;
    reset_fake();
    remember_dir("b/n");
    vt__forget_name(&fake, "b/n/a.tif");
    assert_int_equal(vt__listing_in_gdal_dir(&fake, "b/n/a.tif"), -1);
    assert_int_equal(forgot_calls, 1);
    assert_false(forgot_null);
    assert_string_equal(forgot, "b/n/a.tif");
}

static void prefix_tells_listing_and_backend(void **state)
{
    (void)state;
    reset_fake();
    remember_dir("b/p");
    remember_dir("c/p");
    vt__forget_prefix(&fake, "b/");
    assert_int_equal(vt__listing_in_gdal_dir(&fake, "b/p/a.tif"), -1);
    assert_int_equal(vt__listing_in_gdal_dir(&fake, "c/p/a.tif"), 1);
    assert_int_equal(forgot_calls, 1);
    assert_false(forgot_null);
    assert_string_equal(forgot, "b/");
}

/* An empty prefix forgets every name and every block, but is not
 * ClearCache: the backend keeps its redirects and credentials. */
static void empty_prefix_drops_blocks_not_credentials(void **state)
{
    (void)state;
    reset_fake();
    remember_dir("b/e");
    put_block("http://fake.invalid\nb/e/a.tif\n\"etag\"");
    assert_true(has_block("http://fake.invalid\nb/e/a.tif\n\"etag\""));
    vt__forget_prefix(&fake, "");
    assert_false(has_block("http://fake.invalid\nb/e/a.tif\n\"etag\""));
    assert_int_equal(vt__listing_in_gdal_dir(&fake, "b/e/a.tif"), -1);
    assert_int_equal(forgot_calls, 1);
    assert_false(forgot_null);
    assert_string_equal(forgot, "");
}

static void all_tells_everything(void **state)
{
    (void)state;
    reset_fake();
    remember_dir("b/a");
    put_block("http://fake.invalid\nb/a/a.tif\n\"etag\"");
    vt__forget_all(&fake);
    assert_false(has_block("http://fake.invalid\nb/a/a.tif\n\"etag\""));
    assert_int_equal(vt__listing_in_gdal_dir(&fake, "b/a/a.tif"), -1);
    assert_int_equal(forgot_calls, 1);
    assert_true(forgot_null); /* redirects, failures, credentials */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(name_tells_listing_and_backend),
        cmocka_unit_test(prefix_tells_listing_and_backend),
        cmocka_unit_test(empty_prefix_drops_blocks_not_credentials),
        cmocka_unit_test(all_tells_everything),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
