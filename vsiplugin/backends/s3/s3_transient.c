/* s3_transient.c: which of S3's error answers are worth sending the same
 * request again, in S3's words (its XML error Code), for the HTTP engine.
 *
 * Why here: the engine retries what HTTP itself calls transient (429, 5xx,
 * resets, timeouts, truncated bodies) and knows no service's vocabulary;
 * a service whose error answers say more sets its judge on each request it
 * builds (vt_http_req.answer_transient, engine.h), and the engine asks it
 * about every error answer. S3's is vt__s3_answer_transient, set by
 * s3.c's request builder on every S3 request. Pure: no state, no
 * allocation, any thread (the engine calls it on its I/O thread). */
#include <string.h>

#include "backends/s3/s3.h"

int vt__s3_answer_transient(long status, const unsigned char *body,
                            size_t len)
{
    static const char *const codes[] = {"<Code>RequestTimeout</Code>"};
    size_t scan = len < 4096 ? len : 4096;

    if (status != 400 || !body)
        return 0;
    for (size_t c = 0; c < sizeof(codes) / sizeof(codes[0]); c++) {
        size_t n = strlen(codes[c]);
        for (size_t i = 0; i + n <= scan; i++)
            if (body[i] == '<' && memcmp(body + i, codes[c], n) == 0)
                return 1;
    }
    return 0;
}
