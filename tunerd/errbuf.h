/* errbuf.h: tunerd's one way to fill a caller's error buffer.
 *
 * Errors travel as one line of text in a caller-owned buffer (printed once,
 * by cli.c, as "tunerd: <line>"), never as allocated strings. */
#ifndef VT_TUNERD_ERRBUF_H
#define VT_TUNERD_ERRBUF_H

#include <stddef.h>

/* printf into err (errlen bytes, always NUL-terminated, truncated if need
 * be). err may be NULL or errlen 0: then nothing is written. */
void vt__seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
