/* test_xmlscan.c: the bounded scanner of S3/STS XML answers (xmlscan.c):
 * the first element's text (attributes allowed, a longer tag name is not the
 * tag, an empty element is ""), the five entities and numeric references
 * decoded (to UTF-8), unknown or invalid ones kept as they are; NULL when
 * absent, unclosed or over VT_XML_MAX_VALUE; input not NUL-terminated; and
 * repeated elements walked one after another. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/xmlscan.h"

/* The text of tag in body, compared with want (NULL: no element). */
static void expect_tag(const char *body, const char *tag, const char *want)
{
    char *got = vt__xml_tag(body, strlen(body), tag);

    if (!want) {
        if (got)
            fail_msg("<%s> in %s: \"%s\", want none", tag, body, got);
        return;
    }
    if (!got || strcmp(got, want) != 0)
        fail_msg("<%s> in %s: \"%s\", want \"%s\"", tag, body, got ? got : "(none)", want);
    free(got);
}

static void test_first_element_text(void **state)
{
    static const struct { const char *body, *tag, *want; } cases[] = {
        { "<Error><Code>NoSuchKey</Code><Code>Other</Code></Error>", "Code", "NoSuchKey" },
        { "<Error><CodeX>a</CodeX><Code>b</Code></Error>", "Code", "b" },
        { "<R><Region xmlns=\"x\">eu-west-1</Region></R>", "Region", "eu-west-1" },
        { "<R><Region/></R>", "Region", "" },
        { "<R><Region a=\"1\"/></R>", "Region", "" },
        { "<R><Region></Region></R>", "Region", "" },
        { "<R><Code>open", "Code", NULL }, /* unclosed */
        { "<R><Other>x</Other></R>", "Code", NULL },
        { "<R><Code>x</Code></R>", "", NULL },
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_tag(cases[i].body, cases[i].tag, cases[i].want);
}

static void test_entities(void **state)
{
    (void)state;
    expect_tag("<M>a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos;</M>", "M",
               "a & b <c> \"d\" 'e'");
    expect_tag("<M>&#65;&#x42;&#xe9;&#x20AC;&#x1F600;</M>", "M",
               "AB\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    expect_tag("<M>&nbsp; &#0; &#x110000; &#xZZ; &amp</M>", "M",
               "&nbsp; &#0; &#x110000; &#xZZ; &amp");
}

static void test_bounds(void **state)
{
    size_t n = VT_XML_MAX_VALUE + 1;
    char *big = malloc(n + 16), *got;
    const char body[] = "<K>abc</K>";

    (void)state;
    assert_non_null(big);
    memcpy(big, "<K>", 3);
    memset(big + 3, 'x', n);
    memcpy(big + 3 + n, "</K>", 4);
    assert_null(vt__xml_tag(big, 3 + n + 4, "K")); /* one byte over the cap */
    got = vt__xml_tag(big + 1, 2 + n + 4, "K");    /* no start tag in range */
    assert_null(got);
    free(big);
    /* the length bounds the scan: the end tag just past it is not seen */
    assert_null(vt__xml_tag(body, sizeof body - 2, "K"));
    got = vt__xml_tag(body, sizeof body - 1, "K");
    assert_string_equal(got, "abc");
    free(got);
}

static void test_next_walks_list(void **state)
{
    const char body[] = "<L><Contents><Key>a</Key></Contents><Contents><Key>b</Key>"
                        "</Contents><Contents><Key>c</Key></L>";
    const char *p = body, *next, *inner;
    size_t len, n = 0;
    char keys[4] = "";

    (void)state;
    while ((inner = vt__xml_next(p, (size_t)(body + sizeof body - 1 - p), "Contents", &len,
                                 &next)) != NULL) {
        char *k = vt__xml_tag(inner, len, "Key");
        assert_non_null(k);
        keys[n++] = k[0];
        free(k);
        p = next;
    }
    assert_int_equal(n, 2); /* the third is unclosed */
    assert_string_equal(keys, "ab");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_element_text),
        cmocka_unit_test(test_entities),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_next_walks_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
