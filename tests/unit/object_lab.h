/* object_lab.h: what the unit tests of the object module's files
 * (test_object_read.c, test_object_header.c, test_object_missing.c, ...)
 * share on top of http_lab.h: the lab started as S3, an object opened, one
 * range read, the bytes read checked against the lab's. Header-only; not a
 * test itself. Include after http_lab.h and cmocka.h. */
#ifndef VT_OBJECT_LAB_H
#define VT_OBJECT_LAB_H

#include "read/object.h"

/* Start the lab with handle and point GDAL's S3 options at it: a cmocka
 * group setup's body. */
static inline int lab_setup_s3(lab_handler handle)
{
    if (lab_start(handle))
        return -1;
    lab_as_s3();
    return 0;
}

/* The lab's usual answer to a request line: for "GET /lb/<name>.bin ", total
 * bytes (lab_answer_range); for anything else, S3's 404. */
static inline int lab_answer_object(int fd, const char *line, uint64_t first, uint64_t last,
                                    uint64_t total)
{
    if (strncmp(line, "GET /lb/", 8) == 0 && strstr(line, ".bin "))
        return lab_answer_range(fd, first, last, total, 0);
    return lab_answer_no_such_key(fd);
}

/* A lab handler (lab_start) serving every /lb/<name>.bin as 12 MB
 * (LAB_BIG: larger than the header, a block and a max request), anything
 * else as S3's 404. */
#define LAB_BIG 12000000ULL

static inline int lab_serve_objects(int fd, const char *head)
{
    char line[256];
    uint64_t first, last;

    lab_begin(head, line, sizeof line, &first, &last);
    return lab_answer_object(fd, line, first, last, LAB_BIG);
}

/* A HEAD's answer for an object of total bytes (ETag "e1", as
 * lab_answer_range's): its Content-Length, no body. */
static inline int lab_answer_head(int fd, uint64_t total)
{
    char head[256];

    snprintf(head, sizeof head,
             "HTTP/1.1 200 OK\r\nContent-Length: %llu\r\nETag: \"e1\"\r\n"
             "Last-Modified: Tue, 01 Dec 2026 10:00:00 GMT\r\n\r\n",
             (unsigned long long)total);
    return send_all(fd, head, strlen(head));
}

/* Open path of S3 into *o: the open's result; errbuf gets 512 bytes. */
static inline vt_err lab_open(const char *path, vt_object **o, long *status, char *errbuf)
{
    return vt__object_open(&vt__backend_s3, path, o, status, errbuf, 512);
}

/* Read len bytes at off of o into dst (opts NULL: the object's own);
 * errbuf gets 512 bytes. */
static inline vt_err lab_read1(vt_object *o, const vt_read_opts *opts, void *dst,
                               uint64_t off, size_t len, char *errbuf)
{
    void *dsts[1] = { dst };
    return vt__object_read(o, opts, 1, dsts, &off, &len, NULL, errbuf, 512);
}

/* Fails the test unless buf holds the lab's n bytes at off. */
static inline void lab_check_bytes(const unsigned char *buf, uint64_t off, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (buf[i] != lab_byte(off + i))
            fail_msg("byte %llu differs", (unsigned long long)(off + i));
}

#endif
