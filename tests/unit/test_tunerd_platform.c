/* test_tunerd_platform.c: the profiles/NAME.profile parser: every shipped file
 * parses; each kind of mistake is reported as "file:line: message" naming
 * the valid choices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform.h"

static const char good[] =
    "# a comment\n"
    "name = lambda\n"
    "title = AWS Lambda\n"
    "\n"
    "detect_env = AWS_LAMBDA_FUNCTION_NAME, OTHER_VAR\n"
    "memory_env = AWS_LAMBDA_FUNCTION_MEMORY_SIZE\n"
    "memory_min_mb = 128\n"
    "memory_max_mb = 10240\n"
    "cpu_rule = per_memory\n"
    "mb_per_vcpu = 1769\n"
    "  tmp_dir = /tmp  \n"
    "start_method = fork\n"
    "env.EXTRA_VAR = a value with = and spaces\n";

static void test_parse_good(void **state)
{
    vt_platform p;
    char err[256];

    (void)state;
    int rc = vt_platform_parse("profiles/lambda.profile", good, strlen(good), &p, err,
                               sizeof err);
    if (rc)
        fail_msg("%s", err);
    assert_string_equal(p.name, "lambda");
    assert_int_equal(p.n_detect_env, 2);
    assert_string_equal(p.detect_env[1], "OTHER_VAR");
    assert_int_equal(p.memory_max_mb, 10240);
    assert_int_equal(p.cpu_rule, VT_CPU_PER_MEMORY);
    assert_int_equal(p.mb_per_vcpu, 1769);
    assert_string_equal(p.tmp_dir, "/tmp");
    assert_int_equal(p.n_env, 1);
    assert_string_equal(p.env[0].value, "a value with = and spaces");
}

/* Replaces line `line` (1-based) of `good` with `repl` (NULL = delete it). */
static void with_line(int line, const char *repl, char *out, size_t cap)
{
    const char *s = good;
    size_t n = 0;

    for (int l = 1; *s; l++) {
        const char *e = strchr(s, '\n');
        size_t len = (size_t)(e - s) + 1;
        if (l == line) {
            if (repl)
                n += (size_t)snprintf(out + n, cap - n, "%s\n", repl);
        } else {
            memcpy(out + n, s, len);
            n += len;
        }
        s += len;
    }
    out[n] = '\0';
}

static void expect_error(int line, const char *repl, const char *want)
{
    char text[2048], err[512];
    vt_platform p;

    with_line(line, repl, text, sizeof text);
    if (vt_platform_parse("profiles/lambda.profile", text, strlen(text), &p, err,
                          sizeof err) != -1)
        fail_msg("line %d '%s' was accepted", line, repl ? repl : "(deleted)");
    if (!strstr(err, want))
        fail_msg("line %d '%s': got '%s', want '%s'", line, repl ? repl : "(deleted)", err,
                 want);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error(7, "memory_min_mb = lots", "profiles/lambda.profile:7: 'memory_min_mb' "
                 "must be a whole number");
    expect_error(9, "cpu_rule = magic", "profiles/lambda.profile:9: unknown cpu_rule 'magic' "
                 "(valid: per_memory, fixed, given)");
    expect_error(3, "titel = x", "profiles/lambda.profile:3: unknown key 'titel' (valid: name");
    expect_error(4, "just words", "profiles/lambda.profile:4: expected 'key = value'");
    expect_error(4, "name = lambda", "profiles/lambda.profile:4: duplicate key 'name'");
    expect_error(2, "name = openstack", "name 'openstack' does not match the file name 'lambda'");
    expect_error(2, "name = Open Stack", ":2: bad platform name 'Open Stack' (1..31 lower-case");
    expect_error(2, "name = host", "name 'host' does not match the file name 'lambda'");
    expect_error(11, "tmp_dir = tmp", ":11: 'tmp_dir' must be an absolute path");
    expect_error(12, "start_method = thread", ":12: unknown start_method 'thread' "
                 "(valid: fork, forkserver, spawn)");
    expect_error(10, NULL, "cpu_rule per_memory needs mb_per_vcpu");
    expect_error(3, NULL, "missing required key 'title'");
    expect_error(8, "memory_max_mb = 64", "memory range 128..64 MiB is empty");
    expect_error(13, "env.1BAD = x", ":13: bad variable name '1BAD'");
    expect_error(5, "detect_env = A,,B", ":5: detect_env must be a comma list");
    expect_error(6, "memory_env =", ":6: missing value for 'memory_env'");
    expect_error(6, "= 5", ":6: missing key before '='");
}

static void test_shipped_profiles(void **state)
{
    char dir[4096], err[512];
    const char *src = getenv("VT_SOURCE_DIR");

    (void)state;
    assert_non_null(src);
    snprintf(dir, sizeof dir, "%s/profiles", src);
    for (int i = 0; vt_platform_names[i]; i++) {
        vt_platform p;
        if (vt_platform_load(dir, vt_platform_names[i], &p, err, sizeof err))
            fail_msg("%s", err);
        assert_string_equal(p.name, vt_platform_names[i]);
        assert_true(p.memory_min_mb >= 1);
    }
    vt_platform p;
    assert_int_equal(vt_platform_load(dir, "nonexistent", &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "nonexistent.profile: cannot open platform profile"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_shipped_profiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
