/* test_engine_retry.c: unit tests of the engine's pure decisions
 * (engine_retry.h): Content-Range and Range parsing, Retry-After in both
 * forms, HTTP dates, the backoff bounds and the transient-status table.
 * Garbage is fed as well as well-formed values: these parsers see whatever a
 * server or a broken proxy sends. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/engine_retry.h"

static void content_range_ok(void **state)
{
    vt_content_range cr;

    assert_int_equal(vt__parse_content_range("bytes 0-99/1000", &cr), VT_OK);
    assert_true(cr.has_range && cr.has_total);
    assert_int_equal(cr.first, 0);
    assert_int_equal(cr.last, 99);
    assert_int_equal(cr.total, 1000);

    assert_int_equal(vt__parse_content_range("  BYTES  5-5/6 \r\n", &cr), VT_OK);
    assert_int_equal(cr.first, 5);
    assert_int_equal(cr.last, 5);
    assert_int_equal(cr.total, 6);

    assert_int_equal(vt__parse_content_range("bytes 10-19/*", &cr), VT_OK);
    assert_true(cr.has_range);
    assert_false(cr.has_total);
    assert_int_equal(cr.last, 19);

    assert_int_equal(vt__parse_content_range("bytes */4096", &cr), VT_OK);
    assert_false(cr.has_range);
    assert_true(cr.has_total);
    assert_int_equal(cr.total, 4096);

    /* largest values that still fit */
    assert_int_equal(vt__parse_content_range(
                         "bytes 0-18446744073709551613/18446744073709551614",
                         &cr),
                     VT_OK);
    assert_int_equal(cr.last, UINT64_MAX - 2);
}

static void content_range_garbage(void **state)
{
    static const char *const bad[] = {
        "",
        "bytes",
        "bytes ",
        "bytes 0-99",
        "bytes 0-99/",
        "bytes 99-0/1000",          /* first > last */
        "bytes 0-1000/1000",        /* last beyond total */
        "bytes -5/100",
        "bytes 0--5/100",
        "bytes 0-5/100x",
        "bytes 0-5/100 6",
        "bytes=0-5/100",
        "items 0-5/100",
        "bytes0-5/100",
        "bytes */*",
        "bytes 0-18446744073709551616/18446744073709551617", /* overflow */
        "bytes 0x0-5/100",
        "bytes +1-5/100",
        "bytes 1 - 5/100",
    };
    vt_content_range cr;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&cr, 0x55, sizeof(cr));
        if (vt__parse_content_range(bad[i], &cr) != VT_EINVAL)
            fail_msg("accepted: \"%s\"", bad[i]);
        assert_false(cr.has_range); /* zeroed on failure */
        assert_false(cr.has_total);
    }
    assert_int_equal(vt__parse_content_range(NULL, &cr), VT_EINVAL);
}

static void range_request(void **state)
{
    uint64_t a, b;

    assert_int_equal(vt__parse_range_request(" bytes=10-19", &a, &b), VT_OK);
    assert_int_equal(a, 10);
    assert_int_equal(b, 19);
    assert_int_equal(vt__parse_range_request("bytes = 0-0\r\n", &a, &b), VT_OK);
    assert_int_equal(b, 0);
    assert_int_equal(vt__parse_range_request("bytes=10-", &a, &b), VT_EINVAL);
    assert_int_equal(vt__parse_range_request("bytes=-10", &a, &b), VT_EINVAL);
    assert_int_equal(vt__parse_range_request("bytes=0-1,5-6", &a, &b),
                     VT_EINVAL);
    assert_int_equal(vt__parse_range_request("bytes=9-1", &a, &b), VT_EINVAL);
    assert_int_equal(vt__parse_range_request("lines=0-1", &a, &b), VT_EINVAL);
    assert_int_equal(vt__parse_range_request(NULL, &a, &b), VT_EINVAL);
}

static void http_date(void **state)
{
    /* RFC 9110's example and the epoch */
    assert_int_equal(vt__parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
                     784111777);
    assert_int_equal(vt__parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), 0);
    assert_int_equal(vt__parse_http_date("Tue, 29 Feb 2028 23:59:59 GMT"),
                     1835481599);
    assert_int_equal(vt__parse_http_date("sun, 06 nov 1994 08:49:37 gmt"),
                     784111777);

    static const char *const bad[] = {
        "",
        "Sunday, 06-Nov-94 08:49:37 GMT", /* RFC 850: not accepted */
        "Sun Nov  6 08:49:37 1994",       /* asctime: not accepted */
        "Sun, 6 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 32 Nov 1994 08:49:37 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:61:00 GMT",
        "Xyz, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT junk",
        "Sun, 06 Nov 94 08:49:37 GMT",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (vt__parse_http_date(bad[i]) != -1)
            fail_msg("accepted: \"%s\"", bad[i]);
    }
    assert_int_equal(vt__parse_http_date(NULL), -1);
}

static void retry_after(void **state)
{
    const time_t now = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT */

    assert_true(vt__parse_retry_after("0", now, 30) == 0);
    assert_true(vt__parse_retry_after(" 7 ", now, 30) == 7);
    assert_true(vt__parse_retry_after("120", now, 30) == 30);  /* capped */
    assert_true(vt__parse_retry_after("99999999999999999999999", now, 30) ==
                30);                                           /* overflow */
    assert_true(vt__parse_retry_after("Sun, 06 Nov 1994 08:49:42 GMT", now,
                                      30) == 5);
    assert_true(vt__parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now,
                                      30) == 0);               /* past */
    assert_true(vt__parse_retry_after("Mon, 07 Nov 1994 08:49:37 GMT", now,
                                      30) == 30);              /* far */
    assert_true(vt__parse_retry_after("", now, 30) < 0);
    assert_true(vt__parse_retry_after("-5", now, 30) < 0);
    assert_true(vt__parse_retry_after("5s", now, 30) < 0);
    assert_true(vt__parse_retry_after("1.5", now, 30) < 0);
    assert_true(vt__parse_retry_after("soon", now, 30) < 0);
    assert_true(vt__parse_retry_after(NULL, now, 30) < 0);
}

static void backoff_bounds(void **state)
{
    uint64_t rng = 12345;
    double seen_max[8] = {0};

    /* Each delay lies in [0, min(cap, base * 2^(attempt-1))]. */
    for (int attempt = 1; attempt <= 8; attempt++) {
        double ceiling = 0.5 * (double)(1u << (attempt - 1));
        if (ceiling > 5)
            ceiling = 5;
        for (int i = 0; i < 2000; i++) {
            double d = vt__backoff_delay(0.5, attempt, 5, vt__rand01(&rng));
            assert_true(d >= 0);
            assert_true(d < ceiling);
            if (d > seen_max[attempt - 1])
                seen_max[attempt - 1] = d;
        }
        /* full jitter spreads over the whole interval */
        assert_true(seen_max[attempt - 1] > ceiling * 0.9);
    }
    /* edges */
    assert_true(vt__backoff_delay(0, 3, 5, 0.5) == 0);
    assert_true(vt__backoff_delay(-1, 3, 5, 0.5) == 0);
    assert_true(vt__backoff_delay(0.5, 0, 5, 0.5) == 0);
    assert_true(vt__backoff_delay(0.5, 1000, 5, 0.999) < 5);
    assert_true(vt__backoff_delay(0.5, 1000, 5, 0.999) > 4.9);
    assert_true(vt__backoff_delay(0.5, 2, 5, 7.0) < 1.0); /* u01 clamped */
    assert_true(vt__backoff_delay(0.5, 2, 5, -1.0) == 0);
}

static void rand01_range(void **state)
{
    uint64_t rng = 1;
    double lo = 1, hi = 0;

    for (int i = 0; i < 100000; i++) {
        double u = vt__rand01(&rng);
        assert_true(u >= 0 && u < 1);
        if (u < lo)
            lo = u;
        if (u > hi)
            hi = u;
    }
    assert_true(lo < 0.01);
    assert_true(hi > 0.99);
    assert_true(rng != 0);
}

static void transient_statuses(void **state)
{
    static const long yes[] = {429, 500, 502, 503, 504};
    static const long no[] = {0, 200, 206, 301, 400, 403, 404, 412, 416, 501,
                              505};

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        assert_true(vt__status_is_transient(yes[i]));
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        assert_false(vt__status_is_transient(no[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(content_range_ok),
        cmocka_unit_test(content_range_garbage),
        cmocka_unit_test(range_request),
        cmocka_unit_test(http_date),
        cmocka_unit_test(retry_after),
        cmocka_unit_test(backoff_bounds),
        cmocka_unit_test(rand01_range),
        cmocka_unit_test(transient_statuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
