/* fuzz_curl_headers.c: libFuzzer target for what the engine reads from
 * curl's buffers (engine_xfer.c): header lines and body bytes, each in an
 * allocation of exactly its length and never NUL-terminated, as curl passes
 * them, so ASan sees any read past the end (the status line was once parsed
 * with strtol over such a buffer). Input: lines split at '\n' (a line keeps
 * its '\n' when it had one, as curl's do); a line starting with '#' is fed
 * to the write callback as body bytes. Then the finished attempt is judged.
 * Never a crash; a verdict of success on a 206 means the body is exactly
 * the range its Content-Range states, or without one the range asked. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/engine_int.h"
#include "http/engine_retry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const hdrs[] = {"Range: bytes=100-199", NULL};
    vt_http_req req = {.method = "GET", .url = "https://example.invalid/b/k",
                       .headers = hdrs, .expect_len = 100, .max_body = 4096};
    struct vt_eng_xfer x;
    struct vt_eng_verdict v;
    size_t at = 0;

    memset(&x, 0, sizeof(x));
    x.req = &req;
    x.has_req_range = 1;
    x.req_first = 100;
    x.req_last = 199;
    x.content_length = -1;
    while (at < size) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        size_t n = nl ? (size_t)(nl - (data + at)) + 1 : size - at;
        char *line = malloc(n);

        if (!line)
            break;
        memcpy(line, data + at, n);
        if (line[0] == '#')
            vt__eng_on_write(line, 1, n, &x);
        else
            vt__eng_on_header(line, 1, n, &x);
        free(line);
        at += n;
    }
    memset(&v, 0, sizeof(v));
    vt__eng_judge_status(&x, &v);
    if (v.err == VT_OK && x.hdr_status == 206) {
        vt_content_range cr;
        if (x.content_range &&
            vt__parse_content_range(x.content_range, &cr) == VT_OK &&
            cr.has_range && cr.last - cr.first + 1 != (uint64_t)x.len)
            abort();
        if (x.range_assumed && x.len != 100) /* taken as the range asked */
            abort();
    }
    vt__eng_reset_attempt(&x);
    vt__eng_body_free(x.buf, x.cap);
    return 0;
}
