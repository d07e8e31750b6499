/* test_options.c: docs/configuration.md against the table of every option
 * (options.c, vt__opts; issue 19). Every row is documented in one of the
 * doc's tables (the option's name in backquotes in a row's first cell) and
 * that row's default cell says the row's default; every VSITUNE_* name the
 * doc mentions is a row; a row's documented default is its real one (a
 * numeric row's parses to its value, a boolean's and an enum's name it).
 * And every option name the plugin's sources spell (a string literal
 * "VSITUNE_...", "GDAL_...", "CPL_...", "AWS_...", "OGR_...", "CURL_...",
 * "SSL_...", GCS's "GS_...", "GOOGLE_...", "GOA2_...", "GO2A_...", Azure's
 * "AZURE_...") is a row, but for the few that are not options it reads. A
 * backend reading options of another prefix adds it to prefixes[] (options.c
 * says what else a new option needs).
 * The doc reader is tested on its own so that a loose rule cannot pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_string.h>

#include "base/config.h"

static int name_char(char c)
{
    return isupper((unsigned char)c) || isdigit((unsigned char)c) || c == '_';
}

/* The default cell of the doc table row whose first cell names name in
 * backquotes, copied into cell; 0 when found. Rows are lines starting with
 * "| "; a cell ends at " |". */
static int doc_default(const char *doc, const char *name, char *cell,
                       size_t len)
{
    char want[160];

    snprintf(want, sizeof want, "`%s`", name);
    for (const char *ln = doc; *ln;) {
        const char *eol = strchr(ln, '\n'), *c1, *c2, *hit;
        if (!eol)
            eol = ln + strlen(ln);
        c1 = strstr(ln + 1, " |");
        c2 = c1 ? strstr(c1 + 2, " |") : NULL;
        hit = strstr(ln, want);
        if (strncmp(ln, "| ", 2) == 0 && c2 && c2 < eol && hit && hit < c1) {
            snprintf(cell, len, "%.*s", (int)(c2 - (c1 + 3)), c1 + 3);
            return 0;
        }
        ln = *eol ? eol + 1 : eol;
    }
    return -1;
}

static void test_reader(void **state)
{
    const char *doc = "text `VSITUNE_X` | `1` | no\n"
                      "| `A_B`, `C_D` | `64K` | two |\n"
                      "| `E` | unset | meaning with `F` | x |\n"
                      "| `G` | none |\n";
    char cell[64];

    (void)state;
    assert_int_equal(doc_default(doc, "VSITUNE_X", cell, sizeof cell), -1);
    assert_int_equal(doc_default(doc, "C_D", cell, sizeof cell), 0);
    assert_string_equal(cell, "`64K`");
    assert_int_equal(doc_default(doc, "A", cell, sizeof cell), -1);
    assert_int_equal(doc_default(doc, "E", cell, sizeof cell), 0);
    assert_string_equal(cell, "unset");
    assert_int_equal(doc_default(doc, "F", cell, sizeof cell), -1);
    assert_int_equal(doc_default(doc, "G", cell, sizeof cell), 0);
    assert_string_equal(cell, "none");
}


/* Literals of that form that are not options the plugin reads. */
static const char *const not_options[] = {
    "CPL_DEBUG",            /* notice.c sets it for one line, restores it */
    "VSITUNE_SHM_INJECT",   /* the debug-only fault injection (getenv) */
    "VSITUNE_VERSION", "VSITUNE_RUNNING_GDAL", "VSITUNE_PREFIX",
    "VSITUNE_BUILT_FOR_GDAL", /* the driver's metadata items */
};

static int known_name(const char *name)
{
    for (int i = 0; i < VT_OPT_COUNT; i++)
        if (strcmp(vt__opts[i].name, name) == 0)
            return 1;
    for (size_t i = 0; i < sizeof not_options / sizeof not_options[0]; i++)
        if (strcmp(not_options[i], name) == 0)
            return 1;
    return 0;
}

/* The option-like literals of text that are not known_name: counted and
 * said. */
static int unknown_literals(const char *text, const char *file)
{
    static const char *const prefixes[] = {
        "VSITUNE_", "GDAL_", "CPL_", "AWS_", "OGR_", "CURL_", "SSL_",
        "GS_", "GOOGLE_", "GOA2_", "GO2A_", /* GCS */
        "AZURE_"};
    int bad = 0;

    for (const char *q = strchr(text, '"'); q; q = strchr(q + 1, '"')) {
        char name[128];
        size_t n = 0;
        int opt = 0;
        while (name_char(q[1 + n]) && n + 1 < sizeof name) {
            name[n] = q[1 + n];
            n++;
        }
        name[n] = '\0';
        if (q[1 + n] != '"')
            continue;
        for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
            opt |= strncmp(name, prefixes[i], strlen(prefixes[i])) == 0 &&
                   n > strlen(prefixes[i]);
        if (opt && !known_name(name)) {
            print_error("%s reads %s, not in vt__opts\n", file, name);
            bad++;
        }
        q += n + 1; /* at its closing quote, which opens nothing */
    }
    return bad;
}

static void test_literals(void **state)
{
    (void)state;
    assert_int_equal(unknown_literals("x(\"VSITUNE_CACHE_SIZE\", \"AWS_FOO\")", "t"), 1);
    assert_int_equal(unknown_literals("\"CPL_DEBUG\" \"GDAL_\" \"AWS_X y\"", "t"), 0);
    assert_int_equal(unknown_literals("\"a\" \"GDAL_NOPE\"", "t"), 1);
    /* the cloud backends' prefixes are scanned too */
    assert_int_equal(unknown_literals("\"GS_NOPE\" \"GOOGLE_NOPE\" "
                                      "\"GOA2_NOPE\" \"GO2A_NOPE\" "
                                      "\"AZURE_NOPE\"", "t"), 5);
    assert_int_equal(unknown_literals("\"GS_USER_PROJECT\" \"GO2A_AUD\"",
                                      "t"), 0);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int scan_dir(const char *dir, int *files)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int bad = 0;

    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        char path[4096];
        size_t n = strlen(e->d_name);
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_type == DT_DIR) {
            bad += scan_dir(path, files);
        } else if ((n > 2 && strcmp(e->d_name + n - 2, ".c") == 0) ||
                   (n > 4 && strcmp(e->d_name + n - 4, ".cpp") == 0)) {
            char *text = read_file(path);
            if (strcmp(e->d_name, "options.c") != 0)
                bad += unknown_literals(text, path);
            free(text);
            (*files)++;
        }
    }
    closedir(d);
    return bad;
}

/* Every option the sources read is a row. */
static void test_sources_read_rows(void **state)
{
    const char *src = getenv("VT_SOURCE_DIR");
    char dir[4096];
    int files = 0;

    (void)state;
    assert_non_null(src);
    snprintf(dir, sizeof dir, "%s/vsiplugin", src);
    assert_int_equal(scan_dir(dir, &files), 0);
    assert_true(files > 50);
}

static char *read_doc(void)
{
    const char *src = getenv("VT_SOURCE_DIR");
    char path[4096];

    assert_non_null(src);
    snprintf(path, sizeof path, "%s/docs/configuration.md", src);
    return read_file(path);
}

/* Every row documented, with its default. */
static void test_rows_documented(void **state)
{
    char *doc = read_doc();
    char cell[1024];
    int bad = 0;

    (void)state;
    for (int i = 0; i < VT_OPT_COUNT; i++) {
        const struct vt_opt_def *d = &vt__opts[i];
        assert_non_null(d->name);
        assert_non_null(d->def_doc);
        assert_non_null(d->doc);
        if (doc_default(doc, d->name, cell, sizeof cell) != 0) {
            print_error("docs/configuration.md has no row for %s\n", d->name);
            bad++;
        } else if (!strstr(cell, d->def_doc)) {
            print_error("%s: docs/configuration.md says \"%s\", the table %s\n",
                        d->name, cell, d->def_doc);
            bad++;
        }
    }
    free(doc);
    assert_int_equal(bad, 0);
}

/* Every VSITUNE_* name in the doc is a row. */
static void test_documented_are_rows(void **state)
{
    char *doc = read_doc();
    int bad = 0;

    (void)state;
    for (const char *p = strstr(doc, "VSITUNE_"); p; p = strstr(p + 1, "VSITUNE_")) {
        char name[128];
        size_t n = 0;
        int found = 0;
        if (p > doc && name_char(p[-1]))
            continue;
        while (name_char(p[n]) && n + 1 < sizeof name) {
            name[n] = p[n];
            n++;
        }
        name[n] = '\0';
        for (int i = 0; i < VT_OPT_COUNT && !found; i++)
            found = strcmp(vt__opts[i].name, name) == 0;
        if (!found) {
            print_error("docs/configuration.md names %s, not in vt__opts\n", name);
            bad++;
        }
    }
    free(doc);
    assert_int_equal(bad, 0);
}

/* The documented default is the row's value. */
static void test_defaults_agree(void **state)
{
    (void)state;
    for (int i = 0; i < VT_OPT_COUNT; i++) {
        const struct vt_opt_def *d = &vt__opts[i];
        char bare[128];
        size_t n = strlen(d->def_doc);
        int quoted = n >= 2 && d->def_doc[0] == '`' && d->def_doc[n - 1] == '`';

        snprintf(bare, sizeof bare, "%.*s", quoted ? (int)n - 2 : (int)n,
                 d->def_doc + quoted);
        for (int j = i + 1; j < VT_OPT_COUNT; j++)
            assert_string_not_equal(d->name, vt__opts[j].name);
        switch (d->kind) {
        case VT_OPT_SIZE: {
            uint64_t v;
            assert_true(quoted);
            assert_int_equal(vt__parse_size(bare, &v), 0);
            assert_true((double)v == d->def);
            assert_true(d->def >= d->min && d->def <= d->max);
            break;
        }
        case VT_OPT_NUMBER: {
            double v;
            assert_true(quoted);
            assert_int_equal(vt__parse_num(bare, &v), 0);
            assert_true(v == d->def);
            assert_true(d->def >= d->min && d->def <= d->max);
            break;
        }
        case VT_OPT_BOOL:
            assert_true(d->def == 0 || d->def == 1);
            if (quoted)
                assert_int_equal(CPLTestBool(bare) ? 1 : 0, (int)d->def);
            else
                assert_string_equal(d->def_doc, "unset"); /* unset: no */
            if (!quoted)
                assert_true(d->def == 0);
            break;
        case VT_OPT_ENUM: {
            int count = 0;
            assert_non_null(d->values);
            while (d->values[count])
                count++;
            assert_true(d->def >= 0 && d->def < count);
            assert_true(quoted);
            assert_string_equal(bare, d->values[(int)d->def]);
            break;
        }
        case VT_OPT_STRING:
            break;
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reader),
        cmocka_unit_test(test_rows_documented),
        cmocka_unit_test(test_documented_are_rows),
        cmocka_unit_test(test_defaults_agree),
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_sources_read_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
