/* test_listing.c: stem-scoped and directory listings (listing.h) against
 * S3 ListObjects answers from a loopback server in the test process
 * (http_lab.h), judged by the requests the server received: one LIST per
 * stem for all the names it covers, remembered (no second LIST), concurrent
 * askers coalesced into one LIST, stats answered from memory (present,
 * absent, not covered), a directory page of the asked size with its folder
 * and marker, a failed LIST not remembered, forgetting, GDAL's own names of
 * a directory and a COG's "no sidecars", and the table's bound: the
 * oldest listing nobody holds dropped first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>

#include "http_lab.h"
#include "read/listing.h"

#define BE (&vt__backend_s3) /* the service these listings are of */

#define LIST_HEAD "<?xml version=\"1.0\" encoding=\"UTF-8\"?>" \
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
#define KEY(k, n) "<Contents><Key>" k "</Key><LastModified>2026-12-01T10:00:00.000Z" \
    "</LastModified><ETag>&quot;e&quot;</ETag><Size>" #n "</Size></Contents>"

/* The answers, by bucket and query. Returns -1 to close the connection. */
static int serve_one(int fd, const char *head)
{
    char line[512];
    const char *body = NULL;

    snprintf(line, sizeof line, "%.*s", (int)strcspn(head, "\r"), head);
    log_request(head, line);
    if (strstr(line, "GET /lb/?") == line && strstr(line, "prefix=dir%2Fx "))
        body = LIST_HEAD "<IsTruncated>false</IsTruncated>" KEY("dir/x.tif", 5000000)
            KEY("dir/x.tif.ovr", 1234) KEY("dir/x.TFW", 90) KEY("dir/x_rpc.txt", 77)
            "</ListBucketResult>";
    else if (strstr(line, "GET /lb/?") == line && strstr(line, "prefix=dir%2Fz ")) {
        usleep(300000); /* a slow LIST: every asker arrives while it loads */
        body = LIST_HEAD "<IsTruncated>false</IsTruncated>" KEY("dir/z.tif", 10)
            "</ListBucketResult>";
    }
    else if (strstr(line, "GET /lb/?") == line && strstr(line, "prefix=d2%2F "))
        body = LIST_HEAD "<IsTruncated>true</IsTruncated>" KEY("d2/", 0) KEY("d2/a.tif", 1)
            KEY("d2/b.tif", 2) "<CommonPrefixes><Prefix>d2/sub/</Prefix></CommonPrefixes>"
            "</ListBucketResult>";
    else if (strstr(line, "GET /lb/?") == line)
        body = LIST_HEAD "<IsTruncated>false</IsTruncated></ListBucketResult>";
    if (body)
        return answer(fd, "200 OK", "Content-Type: application/xml\r\n", body);
    return answer(fd, "404 Not Found", "Content-Type: application/xml\r\n",
                  "<Error><Code>NoSuchBucket</Code><Message>The specified bucket "
                  "does not exist</Message></Error>");
}

static int setup(void **state)
{

    (void)state;
    if (lab_start(serve_one))
        return -1;
    lab_as_s3();
    return 0;
}

static void test_stem_len(void **state)
{
    (void)state;
    assert_int_equal(vt__listing_stem_len("x.tif.ovr"), 1);
    assert_int_equal(vt__listing_stem_len("x_rpc.txt"), 1);
    assert_int_equal(vt__listing_stem_len("scene.tif"), 5);
    assert_int_equal(vt__listing_stem_len(".hidden.tif"), 7); /* from the 2nd char */
    assert_int_equal(vt__listing_stem_len("README"), 6);
    assert_int_equal(vt__listing_stem_len(""), 0);
}

static void test_stem_listing_once(void **state)
{
    vt_listing *l = NULL, *again = NULL;
    vt_list_entry e;
    char err[256] = "";

    (void)state;
    assert_int_equal(vt__listing_get(BE, "lb/dir/x.tif", &l, err, sizeof err), VT_OK);
    assert_int_equal(seen("GET /lb/?", "prefix=dir%2Fx "), 1);
    assert_int_equal(seen("GET /lb/?delimiter=%2F&max-keys=1000&prefix=dir%2Fx ", NULL), 1);
    assert_int_equal(vt__listing_count(l), 4);
    assert_false(vt__listing_truncated(l));
    assert_true(vt__listing_find(l, "x.tif.ovr", &e));
    assert_int_equal(e.size, 1234);
    assert_int_equal(e.mtime, 1796119200LL);
    assert_false(e.is_dir);
    assert_false(vt__listing_find(l, "X.TIF.OVR", &e));
    assert_true(vt__listing_find_ci(l, "X.TIF.OVR"));
    assert_true(vt__listing_find_ci(l, "x.tfw"));
    assert_false(vt__listing_find(l, "x.aux.xml", &e));

    /* Another name of the same stem: the same listing, no request. */
    assert_int_equal(vt__listing_get(BE, "lb/dir/x.tif.ovr", &again, err, sizeof err), VT_OK);
    assert_int_equal(vt__listing_count(again), 4);
    assert_int_equal(seen("GET /lb/?", "prefix=dir%2Fx "), 1);
    vt__listing_release(again);
    vt__listing_release(l);

    /* Stats from memory: present, absent (covered by the stem), not covered. */
    assert_int_equal(vt__listing_lookup(BE, "lb/dir/x_rpc.txt", &e), 1);
    assert_int_equal(e.size, 77);
    assert_int_equal(vt__listing_lookup(BE, "lb/dir/x.aux.xml", &e), 0);
    assert_int_equal(vt__listing_lookup(BE, "lb/dir/y.tif", &e), -1);
    assert_int_equal(vt__listing_lookup(BE, "lb/other/x.tif", &e), -1);
    assert_true(vt__listing_dir_held(BE, "lb/dir/y.tif"));
    assert_false(vt__listing_dir_held(BE, "lb/other/y.tif"));
    assert_int_equal(seen("GET /lb/?", "prefix=dir%2Fx "), 1);

    /* Forgotten (the name was written): the next question lists again. */
    vt__listing_forget("lb/dir/x.tif");
    assert_int_equal(vt__listing_lookup(BE, "lb/dir/x_rpc.txt", &e), -1);
    assert_int_equal(vt__listing_get(BE, "lb/dir/x.tif", &l, err, sizeof err), VT_OK);
    vt__listing_release(l);
    assert_int_equal(seen("GET /lb/?", "prefix=dir%2Fx "), 2);
    vt__listing_forget_prefix("");
    assert_int_equal(vt__listing_lookup(BE, "lb/dir/x_rpc.txt", &e), -1);
}

static void *get_z(void *arg)
{
    vt_listing *l = NULL;
    char err[256];

    if (vt__listing_get(BE, "lb/dir/z.tif", &l, err, sizeof err) == VT_OK) {
        *(size_t *)arg = vt__listing_count(l);
        vt__listing_release(l);
    }
    return NULL;
}

static void test_concurrent_askers_one_list(void **state)
{
    enum { N = 8 };
    pthread_t t[N];
    size_t counts[N] = { 0 };

    (void)state;
    for (int i = 0; i < N; i++)
        assert_int_equal(pthread_create(&t[i], NULL, get_z, &counts[i]), 0);
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(counts[i], 1);
    }
    assert_int_equal(seen("GET /lb/?", "prefix=dir%2Fz "), 1);
}

static void test_directory_page(void **state)
{
    vt_listing *l = NULL;
    vt_list_entry e;
    char err[256] = "";

    (void)state;
    assert_int_equal(vt__listing_get_dir(BE, "lb/d2", 100, &l, err, sizeof err), VT_OK);
    assert_int_equal(seen("GET /lb/?delimiter=%2F&max-keys=100&prefix=d2%2F ", NULL), 1);
    assert_true(vt__listing_truncated(l));
    assert_true(vt__listing_has_marker(l));
    assert_int_equal(vt__listing_count(l), 3); /* a.tif, b.tif, sub; not the marker */
    assert_true(vt__listing_find(l, "sub", &e));
    assert_true(e.is_dir);
    assert_true(vt__listing_find(l, "b.tif", &e));
    assert_int_equal(e.size, 2);
    vt__listing_release(l);
}

static void test_failed_list_not_remembered(void **state)
{
    vt_listing *l = NULL;
    char err[256] = "";

    (void)state;
    assert_int_not_equal(vt__listing_get(BE, "nob/dir/x.tif", &l, err, sizeof err), VT_OK);
    assert_null(l);
    assert_true(err[0] != '\0');
    assert_int_not_equal(vt__listing_get(BE, "nob/dir/x.tif", &l, err, sizeof err), VT_OK);
    assert_int_equal(seen("GET /nob/?", NULL), 2);
    assert_int_equal(vt__listing_lookup(BE, "nob/dir/x.tif", NULL), -1);
}

/* A backend without a list operation (/vsicurl/: listings stay GDAL's)
 * is refused with words, never called through a NULL pointer. */
static void test_backend_without_list(void **state)
{
    vt_backend nolist = *BE;
    vt_listing *l = NULL;
    char err[256] = "";

    (void)state;
    nolist.name = "nolist";
    nolist.list = NULL;
    assert_int_equal(vt__listing_get(&nolist, "h/dir/x.tif", &l, err, sizeof err),
                     VT_EINVAL);
    assert_null(l);
    assert_non_null(strstr(err, "does not list"));
}

static void test_gdal_names_and_no_sidecars(void **state)
{
    char *names[] = { "a.tif", "a.tif.aux.xml", NULL };
    char **copy;
    vt_list_entry e;

    (void)state;
    vt__listing_remember_names(BE, "lb/g", names);
    assert_int_equal(vt__listing_in_gdal_dir(BE, "lb/g/a.tif.aux.xml"), 1);
    assert_int_equal(vt__listing_in_gdal_dir(BE, "lb/g/b.tif"), 0);
    assert_int_equal(vt__listing_in_gdal_dir(BE, "lb/h/a.tif"), -1);
    copy = vt__listing_names_of_dir(BE, "lb/g/a.tif", 0);
    assert_non_null(copy);
    assert_string_equal(copy[0], "a.tif");
    assert_string_equal(copy[1], "a.tif.aux.xml");
    assert_null(copy[2]);
    for (int i = 0; copy[i]; i++)
        free(copy[i]);
    free(copy);
    assert_null(vt__listing_names_of_dir(BE, "lb/g/a.tif", 1)); /* more than 1 name */

    vt__listing_remember_no_sidecars(BE, "lb/c/cog.tif", 4242, 1796119200LL);
    assert_int_equal(vt__listing_lookup(BE, "lb/c/cog.tif", &e), 1);
    assert_int_equal(e.size, 4242);
    assert_int_equal(vt__listing_lookup(BE, "lb/c/cog.tif.aux.xml", &e), 0);
    assert_int_equal(vt__listing_lookup(BE, "lb/c/cog.tfw", &e), -1); /* not covered */
    assert_int_equal(seen("GET /lb/?", "prefix=c%2F"), 0);
}

/* The table holds 256 listings: past that the oldest one nobody holds
 * goes, one per listing added; a held listing stays, however old. Only the
 * COG memories fill it here, so no LIST of ours can answer dir_held. */
static void test_bound_drops_oldest_unheld(void **state)
{
    vt_listing *held = NULL;
    vt_list_entry e;
    char err[256] = "", path[64];

    (void)state;
    vt__listing_forget_prefix("");
    assert_int_equal(vt__listing_get(BE, "lb/dir/x.tif", &held, err, sizeof err), VT_OK);
    for (int i = 0; i < 300; i++) {
        snprintf(path, sizeof path, "lb/many/c%03d.tif", i);
        vt__listing_remember_no_sidecars(BE, path, (uint64_t)i + 1, 0);
    }
    /* 1 held + the newest 255: c045 .. c299 */
    assert_int_equal(vt__listing_lookup(BE, "lb/many/c044.tif", &e), -1);
    assert_int_equal(vt__listing_lookup(BE, "lb/many/c045.tif", &e), 1);
    assert_int_equal(e.size, 46);
    assert_int_equal(vt__listing_lookup(BE, "lb/many/c298.tif", &e), 1);
    assert_int_equal(vt__listing_lookup(BE, "lb/many/c299.tif", &e), 1);
    assert_int_equal(e.size, 300);
    assert_int_equal(vt__listing_lookup(BE, "lb/dir/x_rpc.txt", &e), 1);
    assert_true(vt__listing_dir_held(BE, "lb/dir/y.tif"));
    assert_false(vt__listing_dir_held(BE, "lb/many/y.tif"));
    vt__listing_release(held);
    vt__listing_remember_no_sidecars(BE, "lb/many/c300.tif", 301, 0);
    /* now unheld and the oldest: the next one added drops it */
    assert_int_equal(vt__listing_lookup(BE, "lb/dir/x_rpc.txt", &e), -1);
    assert_false(vt__listing_dir_held(BE, "lb/dir/y.tif"));
    assert_int_equal(vt__listing_lookup(BE, "lb/many/c045.tif", &e), 1);
    vt__listing_forget_prefix("");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stem_len),
        cmocka_unit_test(test_stem_listing_once),
        cmocka_unit_test(test_concurrent_askers_one_list),
        cmocka_unit_test(test_directory_page),
        cmocka_unit_test(test_failed_list_not_remembered),
        cmocka_unit_test(test_backend_without_list),
        cmocka_unit_test(test_gdal_names_and_no_sidecars),
        cmocka_unit_test(test_bound_drops_oldest_unheld),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
