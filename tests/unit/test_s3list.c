/* test_s3list.c: ListObjects answers (backends/listxml.c), the stem rule and the
 * bounded element scan they rest on (listing.c, xmlscan.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fuzz_bytes.h"
#include "read/listing.h"
#include "backends/listxml.h"
#include "base/xmlscan.h"

static const char page[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<Name>lab</Name><Prefix>sc/plain</Prefix><Marker></Marker>"
    "<MaxKeys>1000</MaxKeys><Delimiter>/</Delimiter>"
    "<IsTruncated>false</IsTruncated>"
    "<Contents><Key>sc/plain.tif</Key>"
    "<LastModified>2026-11-30T22:26:01.000Z</LastModified>"
    "<ETag>&quot;0a1b&quot;</ETag><Size>2097664</Size>"
    "<StorageClass>STANDARD</StorageClass></Contents>"
    "<Contents><Key>sc/plain.tif.ovr</Key>"
    "<LastModified>2026-11-30T22:26:02.000Z</LastModified>"
    "<ETag>\"ff\"</ETag><Size>655748</Size></Contents>"
    "<Contents><Key>sc/plain_b/deep.tif</Key><Size>1</Size></Contents>"
    "<CommonPrefixes><Prefix>sc/plain.zarr/</Prefix></CommonPrefixes>"
    "</ListBucketResult>";

static void test_parse_page(void **state)
{
    vt_list_page p;
    (void)state;
    assert_int_equal(vt__listxml_parse(page, strlen(page), "sc/", &p), VT_OK);
    assert_int_equal(p.n, 3); /* the deeper key is not in sc/ */
    assert_false(p.truncated);
    assert_string_equal(p.e[0].name, "plain.tif");
    assert_int_equal(p.e[0].size, 2097664);
    assert_int_equal(p.e[0].mtime, 1796077561LL);
    assert_string_equal(p.e[0].etag, "\"0a1b\"");
    assert_false(p.e[0].is_dir);
    assert_string_equal(p.e[1].name, "plain.tif.ovr");
    assert_string_equal(p.e[2].name, "plain.zarr");
    assert_true(p.e[2].is_dir);
    vt__list_page_clear(&p);
    assert_null(p.e);
}

static void test_truncated_and_root(void **state)
{
    static const char t[] =
        "<ListBucketResult><IsTruncated>true</IsTruncated>"
        "<Contents><Key>top.tif</Key><Size>5</Size></Contents>"
        "<Contents><Key>d/</Key><Size>0</Size></Contents>"
        "</ListBucketResult>";
    vt_list_page p;
    (void)state;
    assert_int_equal(vt__listxml_parse(t, strlen(t), "", &p), VT_OK);
    assert_true(p.truncated);
    assert_int_equal(p.n, 1); /* "d/" is a folder marker, not a file */
    assert_string_equal(p.e[0].name, "top.tif");
    assert_int_equal(p.e[0].mtime, 0);
    vt__list_page_clear(&p);
    /* a folder marker of the listed directory itself is skipped */
    static const char m[] = "<ListBucketResult><Contents><Key>sc/</Key>"
                            "</Contents></ListBucketResult>";
    assert_int_equal(vt__listxml_parse(m, strlen(m), "sc/", &p), VT_OK);
    assert_int_equal(p.n, 0);
    vt__list_page_clear(&p);
}

static void test_not_a_listing(void **state)
{
    static const char err[] = "<Error><Code>AccessDenied</Code></Error>";
    vt_list_page p;
    (void)state;
    assert_int_equal(vt__listxml_parse(err, strlen(err), "", &p), VT_EPROTO);
    assert_int_equal(vt__listxml_parse(NULL, 0, "", &p), VT_EPROTO);
    /* cut in the middle of an element: what is whole is kept */
    assert_int_equal(vt__listxml_parse(page, 420, "sc/", &p), VT_OK);
    assert_true(p.n <= 1);
    vt__list_page_clear(&p);
}

static void test_stem(void **state)
{
    (void)state;
    assert_int_equal(vt__listing_stem_len("x.tif"), 1);
    assert_int_equal(vt__listing_stem_len("B04.tif.aux.xml"), 3);
    assert_int_equal(vt__listing_stem_len("LC08_L1TP_B4.TIF"), 4);
    assert_int_equal(vt__listing_stem_len("noext"), 5);
    assert_int_equal(vt__listing_stem_len(".hidden"), 7);
    assert_int_equal(vt__listing_stem_len("_x.tif"), 2);
    assert_int_equal(vt__listing_stem_len(""), 0);
}

static void test_xml_next(void **state)
{
    static const char b[] = "<a><C>1</C><C>22</C><C>3";
    const char *p = b, *next, *in;
    size_t len, seen = 0;
    (void)state;
    while ((in = vt__xml_next(p, strlen(p), "C", &len, &next))) {
        seen++;
        p = next;
    }
    assert_int_equal(seen, 2); /* the unclosed third is not an element */
    assert_null(vt__xml_next(b, strlen(b), "", &len, &next));
}

/* Any bytes: never a crash, entries always named (ASan sees exact-size
 * buffers). */
static void test_fuzz(void **state)
{
    static const char *const frags[] = {
        "<ListBucketResult>", "</ListBucketResult>", "<Contents>", "</Contents>",
        "<Key>sc/", "</Key>", "<Size>12</Size>", "<CommonPrefixes><Prefix>sc/d/",
        "</Prefix></CommonPrefixes>", "<IsTruncated>true</IsTruncated>",
        "<LastModified>2026-11-30T22:26:01.000Z</LastModified>", "&amp;", "/"};
    uint32_t seed = 12345;
    (void)state;
    for (int i = 0; i < 20000; i++) {
        vt_list_page p;
        size_t n;
        char *buf = fuzz_bytes(&seed, 600, frags,
                               sizeof(frags) / sizeof(frags[0]), &n);
        if (vt__listxml_parse(buf, n, "sc/", &p) == VT_OK) {
            for (size_t j = 0; j < p.n; j++)
                assert_non_null(p.e[j].name);
            vt__list_page_clear(&p);
        }
        free(buf);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_page),
        cmocka_unit_test(test_truncated_and_root),
        cmocka_unit_test(test_not_a_listing),
        cmocka_unit_test(test_stem),
        cmocka_unit_test(test_xml_next),
        cmocka_unit_test(test_fuzz),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
