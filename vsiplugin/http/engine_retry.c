/* engine_retry.c: pure parsers and the backoff schedule of the engine.
 *
 * Everything here works on strings and numbers only (see engine_retry.h), so
 * that what the engine believes about a response (its range, its total size,
 * how long the server asks us to wait) is decided by code the unit tests
 * exercise with garbage as well as with well-formed values. */
#include "http/engine_retry.h"

#include <math.h>
#include <string.h>

static int lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

static const char *skip_blanks(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* Case-insensitive prefix match; returns the position after it or NULL. */
static const char *match_word(const char *p, const char *word)
{
    while (*word) {
        if (lower((unsigned char)*p) != *word)
            return NULL;
        p++;
        word++;
    }
    return p;
}

/* Decimal digits into *out; at least one digit, no sign, no overflow. */
static const char *parse_u64(const char *p, uint64_t *out)
{
    uint64_t v = 0;
    const char *start = p;

    while (*p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return NULL;
        v = v * 10 + d;
        p++;
    }
    if (p == start)
        return NULL;
    *out = v;
    return p;
}

vt_err vt__parse_content_range(const char *s, vt_content_range *out)
{
    vt_content_range cr = {0};
    const char *p;

    memset(out, 0, sizeof(*out));
    if (!s)
        return VT_EINVAL;
    p = match_word(skip_blanks(s), "bytes");
    if (!p || (*p != ' ' && *p != '\t'))
        return VT_EINVAL;
    p = skip_blanks(p);
    if (*p == '*') {
        p++;
    } else {
        p = parse_u64(p, &cr.first);
        if (!p || *p != '-')
            return VT_EINVAL;
        p = parse_u64(p + 1, &cr.last);
        if (!p || cr.first > cr.last)
            return VT_EINVAL;
        cr.has_range = 1;
    }
    if (*p != '/')
        return VT_EINVAL;
    p++;
    if (*p == '*') {
        p++;
        if (!cr.has_range)
            return VT_EINVAL; /* neither range nor total */
    } else {
        p = parse_u64(p, &cr.total);
        if (!p)
            return VT_EINVAL;
        cr.has_total = 1;
        if (cr.has_range && cr.last >= cr.total)
            return VT_EINVAL;
    }
    p = skip_blanks(p);
    if (*p != '\0' && *p != '\r' && *p != '\n')
        return VT_EINVAL;
    *out = cr;
    return VT_OK;
}

long vt__parse_status_line(const char *buf, size_t len)
{
    size_t i = 5;
    long code = 0;

    if (len < 5 || memcmp(buf, "HTTP/", 5) != 0)
        return 0;
    while (i < len && buf[i] != ' ' && buf[i] != '\t')
        i++; /* the version */
    while (i < len && (buf[i] == ' ' || buf[i] == '\t'))
        i++;
    for (int d = 0; d < 3; d++, i++) {
        if (i >= len || buf[i] < '0' || buf[i] > '9')
            return 0;
        code = code * 10 + (buf[i] - '0');
    }
    if (i < len && buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\r' &&
        buf[i] != '\n')
        return 0;
    return code >= 100 ? code : 0;
}

/* One decimal number of s[*i..len) after blanks, up to INT64_MAX. */
static vt_err length_item(const char *s, size_t len, size_t *i, uint64_t *out)
{
    uint64_t v = 0;
    size_t start;

    while (*i < len && (s[*i] == ' ' || s[*i] == '\t'))
        (*i)++;
    start = *i;
    while (*i < len && s[*i] >= '0' && s[*i] <= '9') {
        unsigned d = (unsigned)(s[*i] - '0');
        if (v > ((uint64_t)INT64_MAX - d) / 10)
            return VT_ERANGE;
        v = v * 10 + d;
        (*i)++;
    }
    if (*i == start)
        return VT_EINVAL;
    while (*i < len && (s[*i] == ' ' || s[*i] == '\t' || s[*i] == '\r' ||
                        s[*i] == '\n'))
        (*i)++;
    *out = v;
    return VT_OK;
}

vt_err vt__parse_content_length(const char *s, size_t len, uint64_t *out)
{
    size_t i = 0;
    uint64_t first, next;
    vt_err err;

    *out = 0;
    if (!s)
        return VT_EINVAL;
    err = length_item(s, len, &i, &first);
    while (err == VT_OK && i < len) {
        if (s[i] != ',')
            return VT_EINVAL;
        i++;
        err = length_item(s, len, &i, &next);
        if (err == VT_OK && next != first)
            return VT_EINVAL; /* two lengths: which body is this? */
    }
    if (err == VT_OK)
        *out = first;
    return err;
}

vt_err vt__parse_range_request(const char *s, uint64_t *first, uint64_t *last)
{
    const char *p;
    uint64_t a, b;

    *first = *last = 0;
    if (!s)
        return VT_EINVAL;
    p = match_word(skip_blanks(s), "bytes");
    if (!p)
        return VT_EINVAL;
    p = skip_blanks(p);
    if (*p != '=')
        return VT_EINVAL;
    p = parse_u64(skip_blanks(p + 1), &a);
    if (!p || *p != '-')
        return VT_EINVAL;
    p = parse_u64(p + 1, &b);
    if (!p || a > b)
        return VT_EINVAL;
    p = skip_blanks(p);
    if (*p != '\0' && *p != '\r' && *p != '\n')
        return VT_EINVAL;
    *first = a;
    *last = b;
    return VT_OK;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    int64_t era;
    unsigned yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned)(y - era * 400);
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* Exactly n digits into *out, then the character sep: what follows sep,
 * or NULL (and NULL when p is NULL, so that calls chain). */
static const char *digits_then(const char *p, int n, int *out, char sep)
{
    int v = 0;

    if (!p)
        return NULL;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return NULL;
        v = v * 10 + (p[i] - '0');
    }
    if (p[n] != sep)
        return NULL;
    *out = v;
    return p + n + 1;
}

int64_t vt__parse_http_date(const char *s)
{
    static const char *const days[] = {"sun", "mon", "tue", "wed",
                                       "thu", "fri", "sat"};
    static const char *const months[] = {"jan", "feb", "mar", "apr",
                                         "may", "jun", "jul", "aug",
                                         "sep", "oct", "nov", "dec"};
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const char *p, *q = NULL;
    int day, mon = -1, year, hh, mm, ss;

    if (!s)
        return -1;
    p = skip_blanks(s);
    for (int i = 0; i < 7 && !q; i++)
        q = match_word(p, days[i]);
    if (!q || q[0] != ',' || q[1] != ' ')
        return -1;
    p = digits_then(q + 2, 2, &day, ' ');
    if (!p)
        return -1;
    for (int i = 0; i < 12; i++) {
        q = match_word(p, months[i]);
        if (q) {
            mon = i;
            break;
        }
    }
    if (mon < 0 || *q != ' ')
        return -1;
    p = digits_then(q + 1, 4, &year, ' ');
    p = digits_then(p, 2, &hh, ':');
    p = digits_then(p, 2, &mm, ':');
    p = digits_then(p, 2, &ss, ' ');
    if (!p)
        return -1;
    p = match_word(p, "gmt");
    if (!p)
        return -1;
    p = skip_blanks(p);
    if (*p != '\0' && *p != '\r' && *p != '\n')
        return -1;
    if (day < 1 || day > mdays[mon] || hh > 23 || mm > 59 || ss > 60)
        return -1;
    return days_from_civil(year, (unsigned)mon + 1, (unsigned)day) * 86400 +
           hh * 3600 + mm * 60 + ss;
}

double vt__parse_retry_after(const char *s, time_t now, double cap)
{
    const char *p;
    uint64_t secs;
    double d;

    if (!s)
        return -1;
    p = skip_blanks(s);
    if (*p >= '0' && *p <= '9') {
        p = parse_u64(p, &secs);
        if (!p)
            secs = UINT64_MAX; /* absurdly large: clamp below */
        else {
            p = skip_blanks(p);
            if (*p != '\0' && *p != '\r' && *p != '\n')
                return -1;
        }
        d = (double)secs;
    } else {
        int64_t when = vt__parse_http_date(p);
        if (when < 0)
            return -1;
        d = (double)(when - (int64_t)now);
    }
    if (d < 0)
        d = 0;
    if (d > cap)
        d = cap;
    return d;
}

double vt__backoff_delay(double base, int attempt, double cap, double u01)
{
    double ceiling;

    if (!(base > 0) || attempt < 1)
        return 0;
    if (u01 < 0)
        u01 = 0;
    if (u01 >= 1)
        u01 = 0.999999;
    /* 2^(attempt-1) overflows nothing: cap it before it grows. */
    ceiling = attempt > 60 ? cap : base * ldexp(1.0, attempt - 1);
    if (ceiling > cap)
        ceiling = cap;
    return ceiling * u01;
}

int vt__status_is_transient(long status)
{
    return status == 429 || status == 500 || status == 502 || status == 503 ||
           status == 504;
}

int vt__net_words_transient(const char *words)
{
    static const char *const blips[] = {"timed out", "Timeout was reached",
                                        "timeout", "reset by peer",
                                        "Connection was reset"};

    if (!words)
        return 0;
    for (size_t i = 0; i < sizeof(blips) / sizeof(blips[0]); i++)
        if (strstr(words, blips[i]))
            return 1;
    return 0;
}

double vt__rand01(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return (double)((x * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}
