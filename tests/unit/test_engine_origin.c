/* test_engine_origin.c: what the engine's I/O thread remembers about
 * servers and objects (http/engine_origin.c), on an engine state of its own
 * (no thread, no network: the functions are the I/O thread's, called as it
 * calls them) (issue 19 item 8).
 *
 * An origin ("scheme://host:port") learned as HTTP/2 is found again by any
 * URL of it and by no other origin; learning "not h2" adds nothing. A
 * request that ran out of retries marks its origin and its object failing
 * until a time: every URL of that origin is failing until then, the object
 * too (its query aside) even after its origin's slot was reused, and nothing
 * after the time or once forgotten. The tables are round-robin: the
 * seventeenth origin replaces the first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "http/engine_int.h"

#define ORIGINS 16 /* engine_int.h's origins[] */

static struct vt_engine *fresh(void)
{
    struct vt_engine *e = calloc(1, sizeof *e);

    assert_non_null(e);
    return e;
}

static void test_h2_learned_per_origin(void **state)
{
    struct vt_engine *e = fresh();
    struct vt_eng_origin *o;

    (void)state;
    vt__eng_origin_learn(e, "https://a.example:443/b/k?x=1", 0);
    assert_null(vt__eng_origin_find(e, "https://a.example:443/b/k"));
    vt__eng_origin_learn(e, "https://a.example:443/b/k?x=1", 1);
    o = vt__eng_origin_find(e, "https://a.example:443/other/key");
    assert_non_null(o);
    assert_int_equal(o->h2, 1);
    assert_null(vt__eng_origin_find(e, "https://a.example:8443/b/k"));
    assert_null(vt__eng_origin_find(e, "http://a.example:443/b/k"));
    assert_null(vt__eng_origin_find(e, "https://a.example.org:443/b/k"));
    /* learned back as HTTP/1.1 */
    vt__eng_origin_learn(e, "https://a.example:443/z", 0);
    assert_int_equal(vt__eng_origin_find(e, "https://a.example:443/b/k")->h2, 0);
    free(e);
}

static void test_failing_until(void **state)
{
    struct vt_engine *e = fresh();

    (void)state;
    assert_int_equal(vt__eng_origin_failing(e, "http://s:9000/b/k", 1.0), 0);
    vt__eng_set_failing(e, "http://s:9000/b/k?partNumber=1", 100.0);
    assert_int_equal(vt__eng_origin_failing(e, "http://s:9000/b/k", 50.0), 1);
    assert_int_equal(vt__eng_origin_failing(e, "http://s:9000/b/other", 50.0), 1);
    assert_int_equal(vt__eng_origin_failing(e, "http://t:9000/b/k", 50.0), 0);
    assert_int_equal(vt__eng_origin_failing(e, "http://s:9000/b/k", 100.5), 0);
    /* forgotten (a success) */
    vt__eng_set_failing(e, "http://s:9000/b/k", 0);
    assert_int_equal(vt__eng_origin_failing(e, "http://s:9000/b/k", 50.0), 0);
    assert_int_equal(vt__eng_origin_failing(e, "http://s:9000/b/other", 50.0), 0);
    free(e);
}

static void test_round_robin_and_object_apart(void **state)
{
    struct vt_engine *e = fresh();
    char url[64];

    (void)state;
    vt__eng_set_failing(e, "http://first:1/b/k", 100.0);
    for (int i = 0; i < ORIGINS; i++) {
        snprintf(url, sizeof url, "http://h%d:1/x", i);
        vt__eng_origin_learn(e, url, 1);
    }
    /* the first origin's slot was reused: its other objects are not failing,
     * the object that failed still is */
    assert_null(vt__eng_origin_find(e, "http://first:1/b/k"));
    assert_int_equal(vt__eng_origin_failing(e, "http://first:1/b/other", 50.0), 0);
    assert_int_equal(vt__eng_origin_failing(e, "http://first:1/b/k", 50.0), 1);
    /* the last sixteen are all known */
    for (int i = 0; i < ORIGINS; i++) {
        snprintf(url, sizeof url, "http://h%d:1/y", i);
        assert_non_null(vt__eng_origin_find(e, url));
    }
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h2_learned_per_origin),
        cmocka_unit_test(test_failing_until),
        cmocka_unit_test(test_round_robin_and_object_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
