/* engine_lab.h: what test_engine.c, test_engine_io.c and test_engine_easy.c
 * share on top of http_lab.h: a GET of the loopback server as the engine
 * takes it, the check of a body against the lab's bytes, and the group
 * teardown that stops the engine. Header-only; not a test itself.
 * Include after http_lab.h and cmocka.h. */
#ifndef VT_ENGINE_LAB_H
#define VT_ENGINE_LAB_H

#include "http/engine.h"

/* *req: a GET of path on the lab (url, url_len: its storage, which lives as
 * long as the request), with headers (NULL-terminated, or NULL), two
 * retries 10 ms apart and a 60 s bound (a failure bound, not a measured
 * speed). */
static inline void lab_request(vt_http_req *req, char *url, size_t url_len, const char *path,
                               const char *const *headers)
{
    memset(req, 0, sizeof *req);
    snprintf(url, url_len, "http://127.0.0.1:%d%s", port, path);
    req->method = "GET";
    req->url = url;
    req->headers = headers;
    req->max_retries = 2;
    req->retry_delay = 0.01;
    req->timeout_ms = 60000;
}

/* Fail unless body's len bytes are the lab object's bytes from first on. */
static inline void lab_check_body(const unsigned char *body, uint64_t first, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++)
        if (body[i] != lab_byte(first + i))
            fail_msg("byte %llu differs", (unsigned long long)(first + i));
}

/* The group teardown: the engine's I/O thread stopped. */
static int lab_engine_teardown(void **state)
{
    (void)state;
    vt__engine_shutdown();
    return 0;
}

#endif
