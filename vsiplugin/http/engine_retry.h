/* engine_retry.h: the engine's pure decisions, kept apart from libcurl so the
 * unit tests can drive them without a network.
 *
 * Parsers of response headers the engine trusts only after checking
 * (Content-Range, Retry-After, a request's own Range header), the backoff
 * schedule, and the table of which outcomes are worth a retry. No I/O, no
 * global state, no allocation: every function here is reentrant. */
#ifndef VT_ENGINE_RETRY_H
#define VT_ENGINE_RETRY_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/error.h"

/* Retry-After values above this are clamped (seconds). */
#define VT_RETRY_AFTER_CAP 30.0
/* Exponential backoff never waits longer than this (seconds). */
#define VT_BACKOFF_CAP 20.0
/* The process's retry budget, a token bucket as in the AWS SDKs' standard
 * retry mode: a retry takes VT_RETRY_COST tokens (a timeout
 * VT_RETRY_COST_TIMEOUT); a success gives back what its request took, or 1;
 * with too few tokens left nothing is retried (first attempts always go). */
#define VT_RETRY_TOKENS 500.0
#define VT_RETRY_COST 5.0
#define VT_RETRY_COST_TIMEOUT 10.0
/* After a request to a server ran out of retries, every request to it gets
 * one attempt for this long (seconds), or until one succeeds. */
#define VT_HOST_FAILING_S 10.0

typedef struct vt_content_range {
    int has_range;      /* "bytes first-last/..." (0 when only the total is given) */
    uint64_t first;
    uint64_t last;      /* inclusive */
    int has_total;      /* total known (not "*") */
    uint64_t total;
} vt_content_range;

/* Parse a Content-Range value ("bytes 0-99/1000", "bytes 0-99/" "*",
 * "bytes *" "/1000"); unit name case-insensitive, surrounding blanks allowed.
 * Rejects first > last, last >= total, numbers that overflow 64 bits and
 * trailing garbage. Returns VT_OK or VT_EINVAL; *out zeroed on failure. */
vt_err vt__parse_content_range(const char *s, vt_content_range *out);

/* The status code of an HTTP status line of exactly len bytes, as curl's
 * header callback passes it (not NUL-terminated): "HTTP/<version>" then
 * blanks then three digits, then a blank, CR, LF or the end. Returns the code
 * (100-999), or 0 when the line is not one. Reads no byte past len. */
long vt__parse_status_line(const char *buf, size_t len);

/* Parse a Content-Length value of exactly len bytes (not NUL-terminated):
 * decimal digits with blanks around them, or a comma-separated list of the
 * same value ("65536, 65536": a header repeated by a proxy, RFC 9110 8.6).
 * Returns VT_OK with *out set, VT_ERANGE when the number does not fit in
 * 63 bits, VT_EINVAL for anything else; *out is 0 unless VT_OK. */
vt_err vt__parse_content_length(const char *s, size_t len, uint64_t *out);

/* Parse a request Range value of one closed range ("bytes=10-19").
 * Open-ended and multi-range forms are VT_EINVAL (the engine does not check
 * those). */
vt_err vt__parse_range_request(const char *s, uint64_t *first, uint64_t *last);

/* Parse Retry-After: delta-seconds or an IMF-fixdate HTTP date
 * ("Sun, 06 Nov 1994 08:49:37 GMT"), relative to now (UTC seconds). Returns
 * the delay in seconds clamped to [0, cap], or -1 when s is unparsable. */
double vt__parse_retry_after(const char *s, time_t now, double cap);

/* Parse an IMF-fixdate into UTC seconds since the epoch; -1 on garbage. */
int64_t vt__parse_http_date(const char *s);

/* Full-jitter exponential backoff: a delay uniformly spread over
 * [0, min(cap, base * 2^(attempt-1))], where attempt is 1 for the first
 * retry and u01 a uniform random number in [0, 1). base <= 0 gives 0. */
double vt__backoff_delay(double base, int attempt, double cap, double u01);

/* 1 when an HTTP status is transient (429, 500, 502, 503, 504). */
int vt__status_is_transient(long status);

/* 1 when curl's words for a failed connect or TLS handshake (its error
 * buffer) say it timed out or was reset: a blip worth another attempt, as
 * stock GDAL judges them. A refused or unreachable connection, or a TLS
 * handshake the server answered wrongly, is not. */
int vt__net_words_transient(const char *words);

/* One xorshift64* step: a cheap PRNG for jitter (not for secrets). *state
 * must be non-zero; returns a uniform number in [0, 1). */
double vt__rand01(uint64_t *state);

#endif
