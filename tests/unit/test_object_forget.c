/* test_object_forget.c: forgetting objects (read/object_forget.c) through
 * object.h's vt__object_forget, vt__object_forget_prefix and
 * vt__object_clear_all, against a loopback S3 (http_lab.h); what the server
 * received is the judge (issue 19 item 8).
 *
 * A forgotten object's next open asks the server again (its header GET) and
 * its blocks are gone from the cache (reading them again asks); objects not
 * named stay known (no request). A prefix forgets only the names under it;
 * clearing forgets all. A handle opened before keeps its copy and still
 * reads the object's bytes. The objects (12 MB) are larger than the header
 * and a block; the blocks read lie past the header. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_lab.h"
#include "object_lab.h"

#define BIG LAB_BIG
#define FAR 5000000ULL /* an offset well past the header */

static int setup(void **state)
{
    (void)state;
    /* the ranges below are drawn for 64 KiB blocks (the default is 16 KiB):
     * set before the first open creates the cache */
    CPLSetConfigOption("VSITUNE_BLOCK_SIZE", "65536");
    return lab_setup_s3(lab_serve_objects);
}

/* How many header GETs and how many GETs far into the object the server
 * saw for "/lb/<name>". */
static int headers_of(const char *name)
{
    char line[128];

    snprintf(line, sizeof line, "GET /lb/%s ", name);
    return seen(line, "Range: bytes=0-");
}

static int far_reads_of(const char *name)
{
    char line[128];

    snprintf(line, sizeof line, "GET /lb/%s ", name);
    return seen(line, "Range: bytes=4980736-"); /* FAR's block */
}

/* Open lb/<name>, read 1000 bytes at FAR, check them; returns the object
 * (a reference) when keep, else releases it. */
static vt_object *open_read(const char *name, int keep)
{
    unsigned char buf[1000];
    char path[128], err[512];
    vt_object *o = NULL;
    long status;

    snprintf(path, sizeof path, "lb/%s", name);
    assert_int_equal(lab_open(path, &o, &status, err), VT_OK);
    assert_int_equal(lab_read1(o, NULL, buf, FAR, sizeof buf, err), VT_OK);
    lab_check_bytes(buf, FAR, sizeof buf);
    if (keep)
        return o;
    vt__object_release(o);
    return NULL;
}

static void test_forget_one(void **state)
{
    vt_object *held;

    (void)state;
    held = open_read("a.bin", 1);
    (void)open_read("a2.bin", 0);
    assert_int_equal(headers_of("a.bin"), 1);
    assert_int_equal(far_reads_of("a.bin"), 1);
    /* known: no request */
    (void)open_read("a.bin", 0);
    assert_int_equal(headers_of("a.bin"), 1);
    assert_int_equal(far_reads_of("a.bin"), 1);

    vt__object_forget(&vt__backend_s3, "lb/a.bin");
    /* the held handle keeps its copy, and its blocks are gone */
    {
        unsigned char buf[1000];
        char err[512];
        assert_int_equal(vt__object_size(held), BIG);
        assert_int_equal(lab_read1(held, NULL, buf, FAR, sizeof buf, err), VT_OK);
        lab_check_bytes(buf, FAR, sizeof buf);
        assert_int_equal(far_reads_of("a.bin"), 2);
        vt__object_release(held);
    }
    (void)open_read("a.bin", 0);
    assert_int_equal(headers_of("a.bin"), 2);
    /* the other object: untouched */
    (void)open_read("a2.bin", 0);
    assert_int_equal(headers_of("a2.bin"), 1);
    assert_int_equal(far_reads_of("a2.bin"), 1);
}

static void test_forget_prefix(void **state)
{
    (void)state;
    (void)open_read("d/x.bin", 0);
    (void)open_read("d/y.bin", 0);
    (void)open_read("dz.bin", 0);
    vt__object_forget_prefix("lb/d/");
    (void)open_read("d/x.bin", 0);
    (void)open_read("d/y.bin", 0);
    (void)open_read("dz.bin", 0);
    assert_int_equal(headers_of("d/x.bin"), 2);
    assert_int_equal(far_reads_of("d/x.bin"), 2);
    assert_int_equal(headers_of("d/y.bin"), 2);
    assert_int_equal(headers_of("dz.bin"), 1); /* not under "lb/d/" */
    assert_int_equal(far_reads_of("dz.bin"), 1);
}

static void test_clear_all(void **state)
{
    (void)state;
    (void)open_read("e1.bin", 0);
    (void)open_read("f/e2.bin", 0);
    vt__object_clear_all();
    (void)open_read("e1.bin", 0);
    (void)open_read("f/e2.bin", 0);
    assert_int_equal(headers_of("e1.bin"), 2);
    assert_int_equal(far_reads_of("e1.bin"), 2);
    assert_int_equal(headers_of("f/e2.bin"), 2);
    assert_int_equal(far_reads_of("f/e2.bin"), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forget_one),
        cmocka_unit_test(test_forget_prefix),
        cmocka_unit_test(test_clear_all),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
