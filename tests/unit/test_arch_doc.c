/* test_arch_doc.c: docs/architecture.md names every source file (issue 19,
 * item 9). Every .c, .cpp and .h under vsiplugin/, common/ and tunerd/ (subfolders
 * too) must be named in the module tables, the section "## Modules" up to
 * the next "## " heading: a source file added without its row fails here.
 *
 * A file is named when its name stands as a word of the section (not inside
 * a longer name: cache.c is not named by shmcache.c); a header is named too
 * by its source's short form, `name.c/.h` or `name.cpp/.h`, as the table
 * writes them. The matcher is tested on its own so that a loose rule cannot
 * pass every file.
 *
 * And the tests mirror the modules (issue 19, item 8): every .c of read/,
 * gdal/handler* and http/ has a tests/unit/test_<basename>.c of its own,
 * unless the exemption list below names it and says which test exercises
 * it instead. */
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
#include <sys/stat.h>

#include <cpl_vsi.h>

static int name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-';
}

/* 1 when word occurs in text bounded by non-name characters on both sides. */
static int has_word(const char *text, const char *word)
{
    size_t n = strlen(word);

    for (const char *p = strstr(text, word); p; p = strstr(p + 1, word)) {
        int left = p == text || !name_char(p[-1]);
        int right = !name_char(p[n]) && !(p[n] == '.' && name_char(p[n + 1]));
        if (left && right)
            return 1;
    }
    return 0;
}

/* 1 when the file called base is named by section. */
static int names_file(const char *section, const char *base)
{
    static const char *const short_forms[] = { ".c/.h", ".cpp/.h" };
    char form[300];
    size_t len = strlen(base);

    if (has_word(section, base))
        return 1;
    if (len < 3 || strcmp(base + len - 2, ".h") != 0 || len >= 256)
        return 0;
    for (size_t i = 0; i < sizeof short_forms / sizeof short_forms[0]; i++) {
        snprintf(form, sizeof form, "%.*s%s", (int)(len - 2), base, short_forms[i]);
        if (has_word(section, form))
            return 1;
    }
    return 0;
}

static void test_matcher(void **state)
{
    static const struct { const char *text, *file; int named; } cases[] = {
        { "| cache.c/.h | x |", "cache.c", 1 },
        { "| cache.c/.h | x |", "cache.h", 1 },
        { "| takeover.cpp/.h | x |", "takeover.h", 1 },
        { "`main.c` -> `cli.c`", "cli.c", 1 },
        { "| engine.c, engine_int.h |", "engine_int.h", 1 },
        { "shmwatch/vsitune-shmwatch.c", "vsitune-shmwatch.c", 1 },
        { "| shmcache.c/.h | x |", "cache.c", 0 },
        { "| shmcache.c/.h | x |", "cache.h", 0 },
        { "| cache_int.h | x |", "cache.h", 0 },
        { "| s3list.c | x |", "s3.c", 0 },
        { "| s3.cfg | x |", "s3.c", 0 },
        { "| cli.c | x |", "cli.h", 0 },
        { "| engine.c, engine_int.h |", "engine.h", 0 },
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (names_file(cases[i].text, cases[i].file) != cases[i].named)
            fail_msg("\"%s\" %s %s", cases[i].text,
                     cases[i].named ? "should name" : "should not name", cases[i].file);
}

/* The text from "## Modules" to the next second-level heading, or NULL. */
static char *modules_section(const char *doc)
{
    const char *start = strstr(doc, "\n## Modules");
    const char *end;

    if (!start)
        return NULL;
    end = strstr(start + 1, "\n## ");
    if (!end)
        end = start + strlen(start);
    return strndup(start, (size_t)(end - start));
}

static int source_name(const char *base)
{
    const char *dot = strrchr(base, '.');

    return dot && (!strcmp(dot, ".c") || !strcmp(dot, ".cpp") || !strcmp(dot, ".h"));
}

/* Checks every source file under dir (recursively); returns how many the
 * section misses, each printed. *seen counts the files checked. */
static int check_dir(const char *section, const char *dir, const char *rel, int *seen)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int missing = 0;

    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        char path[1024], sub[512];
        struct stat st;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        snprintf(sub, sizeof sub, "%s/%s", rel, e->d_name);
        if (stat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            missing += check_dir(section, path, sub, seen);
        } else if (S_ISREG(st.st_mode) && source_name(e->d_name)) {
            (*seen)++;
            if (!names_file(section, e->d_name)) {
                print_error("docs/architecture.md's module tables do not name %s\n", sub);
                missing++;
            }
        }
    }
    closedir(d);
    return missing;
}

static void test_every_source_file_named(void **state)
{
    const char *src = getenv("VT_SOURCE_DIR");
    char path[1024];
    char *doc, *section;
    int seen = 0, missing = 0;

    (void)state;
    assert_non_null(src);
    snprintf(path, sizeof path, "%s/docs/architecture.md", src);
    assert_true(VSIIngestFile(NULL, path, (GByte **)&doc, NULL, -1)); /* NUL-terminated */
    section = modules_section(doc);
    assert_non_null(section);

    snprintf(path, sizeof path, "%s/vsiplugin", src);
    missing += check_dir(section, path, "vsiplugin", &seen);
    snprintf(path, sizeof path, "%s/tunerd", src);
    missing += check_dir(section, path, "tunerd", &seen);
    snprintf(path, sizeof path, "%s/common", src);
    missing += check_dir(section, path, "common", &seen);

    /* The walk found the tree (not an empty or wrong folder). */
    assert_true(seen > 50);
    assert_int_equal(missing, 0);
    free(section);
    VSIFree(doc);
}

/* The .c files of the read path, the handler and the engine that have no
 * tests/unit/test_<basename>.c of their own, each with the test that
 * exercises it instead. The list only shrinks: an entry whose file is gone,
 * or that has its own test now, fails here. */
static const struct { const char *file, *tested_by; } no_own_test[] = {
    /* the sockets the I/O thread opens: every request of test_engine_io.c
     * and test_engine.c goes through them (owed: a stalled connection shut
     * down by its port) */
    { "http/engine_sock.c", "test_engine_io.c" },
    /* no behaviour of its own: the engine's lock, condition variables and
     * counters, defined apart to break a circle */
    { "http/engine_state.c", "test_engine.c" },
};

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The exemption of rel ("folder/name.c"), or -1. */
static int exemption(const char *rel)
{
    for (size_t i = 0; i < sizeof no_own_test / sizeof no_own_test[0]; i++)
        if (strcmp(no_own_test[i].file, rel) == 0)
            return (int)i;
    return -1;
}

/* Checks the .c files of src/vsiplugin/<folder> whose name starts with
 * prefix; returns how many break the rule, each printed. *seen counts them. */
static int check_tests_of(const char *src, const char *folder, const char *prefix, int *seen)
{
    char dir[1024];
    DIR *d;
    struct dirent *e;
    int bad = 0;

    snprintf(dir, sizeof dir, "%s/vsiplugin/%s", src, folder);
    d = opendir(dir);
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        char rel[512], test[1024], by[1024];
        int ex, own;

        if (n < 3 || strcmp(e->d_name + n - 2, ".c") != 0 ||
            strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        (*seen)++;
        snprintf(rel, sizeof rel, "%s/%s", folder, e->d_name);
        snprintf(test, sizeof test, "%s/tests/unit/test_%.*s.c", src, (int)(n - 2), e->d_name);
        own = file_exists(test);
        ex = exemption(rel);
        if (!own && ex < 0) {
            print_error("vsiplugin/%s has no tests/unit/test_%.*s.c (write one, or "
                        "exempt it in test_arch_doc.c saying which test covers it)\n",
                        rel, (int)(n - 2), e->d_name);
            bad++;
        } else if (own && ex >= 0) {
            print_error("vsiplugin/%s has its own test now: drop its exemption\n", rel);
            bad++;
        } else if (ex >= 0) {
            snprintf(by, sizeof by, "%s/tests/unit/%s", src, no_own_test[ex].tested_by);
            if (!file_exists(by)) {
                print_error("vsiplugin/%s: exempted as tested by %s, which is gone\n", rel,
                            no_own_test[ex].tested_by);
                bad++;
            }
        }
    }
    closedir(d);
    return bad;
}

static void test_every_module_has_tests(void **state)
{
    const char *src = getenv("VT_SOURCE_DIR");
    char path[1024];
    int seen = 0, bad = 0;

    (void)state;
    assert_non_null(src);
    bad += check_tests_of(src, "read", "", &seen);
    bad += check_tests_of(src, "gdal", "handler", &seen);
    bad += check_tests_of(src, "http", "", &seen);
    /* the walk found the folders (not an empty or wrong tree) */
    assert_true(seen >= 20);
    /* every exemption names a file that exists */
    for (size_t i = 0; i < sizeof no_own_test / sizeof no_own_test[0]; i++) {
        snprintf(path, sizeof path, "%s/vsiplugin/%s", src, no_own_test[i].file);
        if (!file_exists(path)) {
            print_error("exemption for vsiplugin/%s: no such file\n", no_own_test[i].file);
            bad++;
        }
    }
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matcher),
        cmocka_unit_test(test_every_source_file_named),
        cmocka_unit_test(test_every_module_has_tests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
