/* test_error.c: the one error enum (error.c): every value has its own text
 * (none falls through to "unknown error"), values are never renumbered
 * (logs and stats carry them), and which errors a retry may cure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "base/error.h"

static void test_values_never_renumbered(void **state)
{
    (void)state;
    assert_int_equal(VT_OK, 0);
    assert_int_equal(VT_ENOTFOUND, 3);
    assert_int_equal(VT_ECHANGED, 5);
    assert_int_equal(VT_ETRANSIENT, 6);
    assert_int_equal(VT_ESHUTDOWN, 10);
    assert_int_equal(VT_ENETWORK, 13);
    assert_int_equal(VT_EAGAIN, 15);
}

static void test_every_value_has_its_text(void **state)
{
    (void)state;
    for (int a = VT_OK; a <= VT_EAGAIN; a++) {
        const char *ta = vt_strerror((vt_err)a);
        assert_non_null(ta);
        if (strcmp(ta, "unknown error") == 0)
            fail_msg("%d has no text", a);
        for (int b = VT_OK; b < a; b++)
            if (strcmp(ta, vt_strerror((vt_err)b)) == 0)
                fail_msg("%d and %d share \"%s\"", a, b, ta);
    }
    assert_string_equal(vt_strerror((vt_err)99), "unknown error");
    assert_string_equal(vt_strerror(VT_ECHANGED), "object changed while being read");
}

static void test_transient(void **state)
{
    static const vt_err transient[] = { VT_ETRANSIENT, VT_ETIMEDOUT, VT_ENETWORK,
                                        VT_EPROTO };

    (void)state;
    for (int e = VT_OK; e <= VT_EAGAIN; e++) {
        int want = 0;
        for (size_t i = 0; i < sizeof transient / sizeof transient[0]; i++)
            want |= transient[i] == (vt_err)e;
        if (vt__err_is_transient((vt_err)e) != want)
            fail_msg("%s: transient %d, want %d", vt_strerror((vt_err)e),
                     vt__err_is_transient((vt_err)e), want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_never_renumbered),
        cmocka_unit_test(test_every_value_has_its_text),
        cmocka_unit_test(test_transient),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
