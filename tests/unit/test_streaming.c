/* test_streaming.c: the URLs /vsis3_streaming/ asked about and the sizes
 * /vsis3/ learned of them since (streaming.c): a size is answered only for
 * a URL the streaming handler asked about first; writes and cache clears
 * drop it as GDAL's own code drops its cached properties; the table stays
 * bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>

#include "gdal/streaming.h"

#define URL "http://h:9000/b/dir/k.bin"

static int setup(void **state)
{
    (void)state;
    vt__stream_clear();
    return 0;
}

static void test_only_after_the_streaming_handler(void **state)
{
    uint64_t size = 0;
    (void)state;
    assert_int_equal(vt__stream_any(), 0);
    /* /vsis3/ learned it before streaming ever asked: GDAL's streaming
     * handler then asks the server itself */
    vt__stream_learned(URL, 3);
    assert_int_equal(vt__stream_answer(URL, &size), 0);
    vt__stream_seen(URL, "b/dir/k.bin");
    assert_int_equal(vt__stream_any(), 1);
    assert_int_equal(vt__stream_answer(URL, &size), 0);
    /* learned after it: the shared cache's size */
    vt__stream_learned(URL, 0);
    assert_int_equal(vt__stream_answer(URL, &size), 1);
    assert_int_equal(size, 0);
    vt__stream_learned(URL, 7);
    assert_int_equal(vt__stream_answer(URL, &size), 1);
    assert_int_equal(size, 7);
    /* seen again: the size stays (the streaming handler answered from it) */
    vt__stream_seen(URL, "b/dir/k.bin");
    assert_int_equal(vt__stream_answer(URL, &size), 1);
    assert_int_equal(vt__stream_answer("http://h:9000/b/other", &size), 0);
}

static void test_take_drops_the_size(void **state)
{
    uint64_t size;
    (void)state;
    vt__stream_seen(URL, "b/dir/k.bin");
    assert_int_equal(vt__stream_take(URL), 0);
    vt__stream_learned(URL, 5);
    assert_int_equal(vt__stream_take(URL), 1);
    assert_int_equal(vt__stream_answer(URL, &size), 0);
    /* still seen: a later learn is answered */
    vt__stream_learned(URL, 6);
    assert_int_equal(vt__stream_answer(URL, &size), 1);
    assert_int_equal(size, 6);
}

static void test_forget_and_clear(void **state)
{
    uint64_t size;
    (void)state;
    vt__stream_seen(URL, "b/dir/k.bin");
    vt__stream_seen("http://h:9000/b/dir/k.bin.aux.xml", "b/dir/k.bin.aux.xml");
    vt__stream_learned(URL, 5);
    vt__stream_learned("http://h:9000/b/dir/k.bin.aux.xml", 9);
    /* a write of one name: only its size goes */
    vt__stream_forget("b/dir/k.bin", 0);
    assert_int_equal(vt__stream_answer(URL, &size), 0);
    assert_int_equal(
        vt__stream_answer("http://h:9000/b/dir/k.bin.aux.xml", &size), 1);
    /* a prefix (PartialClearCache, Sync): every name under it; still seen */
    vt__stream_forget("b/dir/", 1);
    assert_int_equal(
        vt__stream_answer("http://h:9000/b/dir/k.bin.aux.xml", &size), 0);
    vt__stream_learned(URL, 8);
    assert_int_equal(vt__stream_answer(URL, &size), 1);
    /* ClearCache: GDAL's streaming handler forgot what it asked */
    vt__stream_clear();
    assert_int_equal(vt__stream_any(), 0);
    vt__stream_learned(URL, 8);
    assert_int_equal(vt__stream_answer(URL, &size), 0);
}

static void test_bounded(void **state)
{
    char url[64], path[32];
    uint64_t size;
    (void)state;
    vt__stream_seen("http://h/b/first", "b/first");
    for (int i = 0; i < 3 * VT_STREAM_CAP; i++) {
        snprintf(url, sizeof(url), "http://h/b/k%d", i);
        snprintf(path, sizeof(path), "b/k%d", i);
        vt__stream_seen(url, path);
    }
    /* the oldest was replaced: its later learn is not mirrored */
    vt__stream_learned("http://h/b/first", 1);
    assert_int_equal(vt__stream_answer("http://h/b/first", &size), 0);
    snprintf(url, sizeof(url), "http://h/b/k%d", 3 * VT_STREAM_CAP - 1);
    vt__stream_learned(url, 2);
    assert_int_equal(vt__stream_answer(url, &size), 1);
    assert_int_equal(size, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_only_after_the_streaming_handler, setup),
        cmocka_unit_test_setup(test_take_drops_the_size, setup),
        cmocka_unit_test_setup(test_forget_and_clear, setup),
        cmocka_unit_test_setup(test_bounded, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
