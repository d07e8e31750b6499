/* test_sizeparse.c: the size syntax of the options (sizeparse.c), the one
 * parser the plugin and tunerd share: whole numbers with blanks around, K/M/G
 * (powers of 1024, optional B, any case), and nothing else: no sign,
 * fraction, exponent, hex, other suffix, trailing text or 64-bit overflow;
 * a refused value leaves 0 in *out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sizeparse.h"

static void test_accepted(void **state)
{
    static const struct { const char *s; uint64_t v; } ok[] = {
        { "0", 0 },
        { "64", 64 },
        { "  64  ", 64 },
        { "64K", 65536 },
        { "64k", 65536 },
        { "64KB", 65536 },
        { "64 kb", 65536 },
        { "1M", 1048576 },
        { "1mb", 1048576 },
        { "2G", 2147483648ULL },
        { "\t2GB", 2147483648ULL },
        { "18446744073709551615", UINT64_MAX },
        { "17179869183G", 17179869183ULL << 30 }, /* the largest G that fits */
    };
    uint64_t v;

    (void)state;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        if (vt__parse_size(ok[i].s, &v) != 0)
            fail_msg("\"%s\" refused", ok[i].s);
        if (v != ok[i].v)
            fail_msg("\"%s\" -> %llu, want %llu", ok[i].s, (unsigned long long)v,
                     (unsigned long long)ok[i].v);
    }
}

static void test_refused(void **state)
{
    static const char *const bad[] = {
        "", " ", "K", "-1", "+1", "1.5M", "1e3", "0x10", "64KiB", "64T", "64B",
        "64 K B", "64K x", "nan", "inf", "18446744073709551616", "17179869184G",
        "1 2",
    };
    uint64_t v;

    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 12345;
        if (vt__parse_size(bad[i], &v) != -1)
            fail_msg("\"%s\" accepted", bad[i]);
        if (v != 0)
            fail_msg("\"%s\" left %llu", bad[i], (unsigned long long)v);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepted),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
