/* http_lab.h: a loopback HTTP/1.1 server inside a unit test's process, for
 * the tests of modules that send requests (test_engine.c, test_listing.c).
 * It listens on 127.0.0.1 on a port of the kernel's choosing, serves each
 * connection in a thread of its own (keep-alive: request after request),
 * hands every request head to the test's handler and keeps a log of the
 * heads, so that a test judges what the server received. The handler
 * answers on fd and returns -1 to close the connection (a cut answer).
 * Header-only; not a test itself. */
#ifndef VT_HTTP_LAB_H
#define VT_HTTP_LAB_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cpl_conv.h>

#define LOG_MAX 256

typedef int (*lab_handler)(int fd, const char *head);

static int listen_fd = -1;
static int port;
static lab_handler lab_handle;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char *req_log[LOG_MAX]; /* request line + headers, as received */
static int n_logged;

/* How many logged requests have a request line starting with line and,
 * when hdr is not NULL, contain hdr. */
static int seen(const char *line, const char *hdr)
{
    int n = 0;

    pthread_mutex_lock(&log_mu);
    for (int i = 0; i < n_logged; i++)
        if (strncmp(req_log[i], line, strlen(line)) == 0 && (!hdr || strstr(req_log[i], hdr)))
            n++;
    pthread_mutex_unlock(&log_mu);
    return n;
}

/* Log the request head; returns how many earlier requests' lines start
 * with line (the handler's "is this the first time"). */
static int log_request(const char *head, const char *line)
{
    int before = 0;

    pthread_mutex_lock(&log_mu); /* counted and logged at once */
    for (int i = 0; i < n_logged; i++)
        before += strncmp(req_log[i], line, strlen(line)) == 0;
    if (n_logged < LOG_MAX)
        req_log[n_logged++] = strdup(head);
    pthread_mutex_unlock(&log_mu);
    return before;
}

static int send_all(int fd, const void *p, size_t n)
{
    const char *c = (const char *)p;

    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The head and n bytes of body in one send(): a second small send() waits
 * (Nagle) for the ACK of the first, which the client delays (~40 ms). */
static int send_answer(int fd, const char *head, const void *body, size_t n)
{
    size_t hl = strlen(head);
    char *all = (char *)malloc(hl + n + 1);
    int r;

    if (!all)
        return -1;
    memcpy(all, head, hl);
    if (n)
        memcpy(all + hl, body, n);
    r = send_all(fd, all, hl + n);
    free(all);
    return r;
}

static int answer(int fd, const char *status, const char *extra, const char *body)
{
    char head[512];

    snprintf(head, sizeof head, "HTTP/1.1 %s\r\nContent-Length: %zu\r\n%s\r\n", status,
             strlen(body), extra);
    return send_answer(fd, head, body, strlen(body));
}

static void *serve_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[8192];
    size_t have = 0;

    for (;;) {
        char *end = NULL;
        ssize_t r;

        buf[have] = '\0';
        while (!(end = strstr(buf, "\r\n\r\n"))) {
            if (have + 1 >= sizeof buf)
                goto out;
            r = recv(fd, buf + have, sizeof buf - 1 - have, 0);
            if (r <= 0)
                goto out;
            have += (size_t)r;
            buf[have] = '\0';
        }
        end[2] = '\0'; /* the head keeps its last header's CRLF */
        if (lab_handle(fd, buf) < 0)
            goto out;
        have -= (size_t)(end + 4 - buf);
        memmove(buf, end + 4, have);
    }
out:
    close(fd);
    return NULL;
}

static void *serve(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_t t;
        int fd = accept(listen_fd, NULL, NULL);

        if (fd < 0)
            return NULL;
        if (pthread_create(&t, NULL, serve_conn, (void *)(intptr_t)fd) == 0)
            pthread_detach(t);
        else
            close(fd);
    }
}

/* Byte i of every object the lab serves. */
static inline unsigned char lab_byte(uint64_t i)
{
    return (unsigned char)((i * 2654435761u) >> 13);
}

/* A 206 for bytes [first, last] (clipped at the end) of an object of total
 * bytes, ETag "e1"; with cut, the body stops halfway and the connection
 * closes. A range past the end is a 416. Returns -1 when the connection
 * ends. */
static inline int lab_answer_range(int fd, uint64_t first, uint64_t last, uint64_t total, int cut)
{
    char head[320];
    uint64_t len, send_len;
    unsigned char *body;
    int r;

    if (first >= total) {
        snprintf(head, sizeof head, "Content-Range: bytes */%llu\r\n",
                 (unsigned long long)total);
        return answer(fd, "416 Requested Range Not Satisfiable", head,
                      "<Error><Code>InvalidRange</Code></Error>");
    }
    if (last >= total)
        last = total - 1;
    len = last - first + 1;
    send_len = cut ? len / 2 : len;
    body = (unsigned char *)malloc(len);
    if (!body)
        return -1;
    for (uint64_t i = 0; i < len; i++)
        body[i] = lab_byte(first + i);
    snprintf(head, sizeof head,
             "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes %llu-%llu/%llu\r\n"
             "Content-Length: %llu\r\nETag: \"e1\"\r\n"
             "Last-Modified: Tue, 01 Dec 2026 10:00:00 GMT\r\n\r\n",
             (unsigned long long)first, (unsigned long long)last,
             (unsigned long long)total, (unsigned long long)len);
    r = send_answer(fd, head, body, send_len);
    free(body);
    return cut ? -1 : r;
}

/* The range a request head asks for, or [0, UINT64_MAX) when none. */
static inline void lab_range(const char *head, uint64_t *first, uint64_t *last)
{
    unsigned long long f = 0, l = UINT64_MAX;
    const char *range = strstr(head, "\r\nRange: bytes=");

    if (range)
        sscanf(range, "\r\nRange: bytes=%llu-%llu", &f, &l);
    *first = f;
    *last = l;
}

/* The start of a handler: line gets the request line, the request is
 * logged, *first and *last get its range (lab_range). */
static inline void lab_begin(const char *head, char *line, size_t len, uint64_t *first,
                             uint64_t *last)
{
    snprintf(line, len, "%.*s", (int)strcspn(head, "\r"), head);
    log_request(head, line);
    lab_range(head, first, last);
}

/* An empty ListObjects page. */
static inline int lab_answer_empty_list(int fd)
{
    return answer(fd, "200 OK", "",
                  "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult>"
                  "<IsTruncated>false</IsTruncated></ListBucketResult>");
}

/* S3's 404 for a key. */
static inline int lab_answer_no_such_key(int fd)
{
    return answer(fd, "404 Not Found", "",
                  "<Error><Code>NoSuchKey</Code><Message>The specified key does not "
                  "exist.</Message></Error>");
}

/* Start the server with its handler; 0, or -1 when it cannot listen. */
static int lab_start(lab_handler handle)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    pthread_t t;

    lab_handle = handle;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof a) ||
        listen(listen_fd, 64) || getsockname(listen_fd, (struct sockaddr *)&a, &alen))
        return -1;
    port = ntohs(a.sin_port);
    if (pthread_create(&t, NULL, serve, NULL))
        return -1;
    pthread_detach(t);
    return 0;
}

/* Point GDAL's S3 options at the started lab (path-style, plain HTTP, no
 * signing, no retries). */
static inline void lab_as_s3(void)
{
    char ep[64];

    snprintf(ep, sizeof ep, "127.0.0.1:%d", port);
    CPLSetConfigOption("AWS_S3_ENDPOINT", ep);
    CPLSetConfigOption("AWS_HTTPS", "NO");
    CPLSetConfigOption("AWS_VIRTUAL_HOSTING", "FALSE");
    CPLSetConfigOption("AWS_NO_SIGN_REQUEST", "YES");
    CPLSetConfigOption("GDAL_HTTP_MAX_RETRY", "0");
}

#endif
