/* test_tunerd_emit.c: each output format quotes a hostile value (quotes,
 * $, backslash, backtick, ${...} and %{...}) by its own grammar's rules, and
 * the format names parse. Real parsers (bash, python json/yaml, HCL and
 * Dockerfile grammars) check whole outputs in tests/integration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"

#define HOSTILE "it's \"$HOME\" \\ ${x} %{y} `id`"

static char *render_as(vt_format fmt, int plugin);

static char *render(vt_format fmt)
{
    return render_as(fmt, 1);
}

/* fmt's output of a 4 GiB host plan, with the plugin or without. */
static char *render_as(vt_format fmt, int plugin)
{
    static vt_platform p;
    static vt_sizing s;
    static vt_envblock e;
    static vt_sizing_in in;
    char err[256];
    char *buf = NULL;
    size_t len = 0;

    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "host");
    snprintf(p.title, sizeof p.title, "Bare host");
    snprintf(p.tmp_dir, sizeof p.tmp_dir, "/tmp");
    snprintf(p.start_method, sizeof p.start_method, "fork");
    snprintf(p.note, sizeof p.note, "a \"note\"");
    p.memory_min_mb = 64;
    p.memory_max_mb = 1 << 20;
    p.cpu_rule = VT_CPU_GIVEN;
    p.n_env = 1;
    snprintf(p.env[0].name, sizeof p.env[0].name, "HOSTILE");
    snprintf(p.env[0].value, sizeof p.env[0].value, "%s", HOSTILE);
    in = (vt_sizing_in){ &p, 4096, 2, 1, VT_WORKLOAD_BATCH, 0, plugin, 0 };
    assert_int_equal(vt_sizing_compute(&in, &s, err, sizeof err), VT_SIZE_OK);
    assert_int_equal(vt_envblock_build(&p, &s, VT_WORKLOAD_BATCH, plugin,
                                       "/usr/lib/gdalplugins", &e), 0);
    vt_emit_ctx c = { &p, &in, &s, &e, "--memory" };
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(vt_emit(f, fmt, &c), 0);
    fclose(f);
    return buf;
}

static void expect_line(vt_format fmt, const char *line)
{
    char *out = render(fmt);

    if (!strstr(out, line))
        fail_msg("format %d: no line\n%s\nin\n%s", (int)fmt, line, out);
    free(out);
}

static void test_quoting(void **state)
{
    (void)state;
    expect_line(VT_FMT_ENV, "\nHOSTILE=" HOSTILE "\n");
    expect_line(VT_FMT_SHELL, "\nexport HOSTILE='it'\\''s \"$HOME\" \\ ${x} %{y} `id`'\n");
    expect_line(VT_FMT_DOTENV, "\nHOSTILE=\"it's \\\"\\$HOME\\\" \\\\ \\${x} %{y} \\`id\\`\"\n");
    expect_line(VT_FMT_JSON, "\"HOSTILE\": \"it's \\\"$HOME\\\" \\\\ ${x} %{y} `id`\"");
    expect_line(VT_FMT_LAMBDA_JSON, "\"HOSTILE\": \"it's \\\"$HOME\\\" \\\\ ${x} %{y} `id`\"");
    expect_line(VT_FMT_TERRAFORM, "    HOSTILE = \"it's \\\"$HOME\\\" \\\\ $${x} %%{y} `id`\"\n");
    expect_line(VT_FMT_DOCKERFILE, "\nENV HOSTILE=\"it's \\\"\\$HOME\\\" \\\\ \\${x} %{y} `id`\"\n");
    expect_line(VT_FMT_K8S_YAML, "  - name: HOSTILE\n    value: \"it's \\\"$HOME\\\" \\\\ ${x} %{y} `id`\"\n");
}

static void test_shapes(void **state)
{
    char *out;

    (void)state;
    out = render(VT_FMT_ENV);
    assert_true(strncmp(out, "GDAL_DRIVER_PATH=/usr/lib/gdalplugins\n", 38) == 0);
    assert_null(strchr(out, '#')); /* env is comment-free (xargs, --env-file) */
    free(out);
    out = render(VT_FMT_LAMBDA_JSON);
    assert_true(strncmp(out, "{\n  \"Variables\": {\n", 19) == 0);
    free(out);
    out = render(VT_FMT_TERRAFORM);
    assert_non_null(strstr(out, "locals {\n  vsitune_env = {\n"));
    free(out);
    out = render(VT_FMT_JSON);
    assert_non_null(strstr(out, "\"ledger\": {"));
    assert_non_null(strstr(out, "\"note\": \"a \\\"note\\\"\""));
    free(out);
}

/* The backends the plan tunes: named in every form with comments, and in
 * json; which prefixes are taken over by default and the knobs; nothing of
 * vsitune's without the plugin. env and lambda-json stay data only. */
static void test_backends_named(void **state)
{
    static const char line[] =
        " vsitune's cache and connection pool apply to the reads it serves: "
        "/vsis3/ (on by default; VSITUNE_TAKEOVER=NO: off), "
        "/vsigs/ (on by default; VSITUNE_TAKEOVER_GS=NO: off), "
        "/vsiaz/ (on by default; VSITUNE_TAKEOVER_AZ=NO: off), "
        "/vsicurl/ (on by default; VSITUNE_TAKEOVER_CURL=NO: off); "
        "GDAL_CACHEMAX applies to every read\n";
    static const vt_format commented[] = { VT_FMT_SHELL, VT_FMT_DOTENV, VT_FMT_TERRAFORM,
                                           VT_FMT_DOCKERFILE, VT_FMT_K8S_YAML };
    char want[512], *out;

    (void)state;
    snprintf(want, sizeof want, "\n#%s", line);
    for (size_t i = 0; i < sizeof commented / sizeof commented[0]; i++)
        expect_line(commented[i], want);
    expect_line(VT_FMT_JSON, "\"backends\": [\n"
                "    {\"prefix\": \"/vsis3/\", \"backend\": \"s3\", \"knob\": "
                "\"VSITUNE_TAKEOVER\", \"on_by_default\": true},\n"
                "    {\"prefix\": \"/vsigs/\", \"backend\": \"gs\", \"knob\": "
                "\"VSITUNE_TAKEOVER_GS\", \"on_by_default\": true},\n"
                "    {\"prefix\": \"/vsiaz/\", \"backend\": \"az\", \"knob\": "
                "\"VSITUNE_TAKEOVER_AZ\", \"on_by_default\": true},\n"
                "    {\"prefix\": \"/vsicurl/\", \"backend\": \"curl\", \"knob\": "
                "\"VSITUNE_TAKEOVER_CURL\", \"on_by_default\": true}\n  ],\n");
    out = render_as(VT_FMT_DOCKERFILE, 0);
    assert_null(strstr(out, "vsitune's cache"));
    assert_non_null(strstr(out, "\n# no vsitune: GDAL's own handlers read /vsis3/, /vsigs/, "
                                "/vsiaz/, /vsicurl/; GDAL_CACHEMAX applies to every read\n"));
    free(out);
    out = render_as(VT_FMT_JSON, 0);
    assert_non_null(strstr(out, "\"backends\": [],\n"));
    free(out);
    out = render(VT_FMT_LAMBDA_JSON);
    assert_null(strstr(out, "/vsis3/"));
    free(out);
}

static void test_format_names(void **state)
{
    vt_format f;

    (void)state;
    const char *names[] = { "env", "shell", "dotenv", "json", "lambda-json", "terraform",
                            "dockerfile", "k8s-yaml" };
    for (int i = 0; i < 8; i++) {
        assert_int_equal(vt_format_parse(names[i], &f), 0);
        assert_int_equal((int)f, i);
        assert_non_null(strstr(vt_format_list(), names[i]));
    }
    assert_int_equal(vt_format_parse("yaml", &f), -1);
    assert_int_equal(vt_format_parse("", &f), -1);
    assert_int_equal(vt_format_parse("JSON", &f), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quoting),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_backends_named),
        cmocka_unit_test(test_format_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
