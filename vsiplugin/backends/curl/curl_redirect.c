/* curl_redirect.c: where a /vsicurl/ URL's redirect to an S3-like signed
 * URL led, remembered while the target stays valid (curl_int.h).
 *
 * Why: a CDN or an API that answers 302/307 with a presigned S3 URL costs
 * a round trip to the redirecting server on every read. GDAL 3.6 goes
 * straight to the target while it is valid (CPL_VSIL_CURL_USE_S3_REDIRECT,
 * default on) and back to the original URL once it has expired; vsitune
 * does the same, by the same rules (cpl_vsil_curl.cpp: the target's expiry
 * from its query, measured against the server's Date and kept in local
 * time, as the two clocks may differ; nothing kept for a validity of 10 s
 * or less; 1 s of margin on use).
 *
 * One bounded process-wide table (REDIR_CAP URLs, the oldest replaced:
 * base/slots.h's rule) under redir_lock, a leaf lock held only to look up or change it. The
 * URLs it holds are credentials: never logged from here. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/curl/curl_int.h"
#include "base/forksafe.h"
#include "base/slots.h"

#define REDIR_CAP 128

typedef struct redir_entry {
    char *url;         /* the URL asked; NULL: a free slot */
    char *target;      /* where it led */
    time_t expires;    /* local time */
} redir_entry;

static pthread_mutex_t redir_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t redir_once = PTHREAD_ONCE_INIT;
static redir_entry redirs[REDIR_CAP];
static size_t redir_next; /* slot replaced next when full */

static void redir_forksafe(void) { vt__forksafe_register(&redir_lock); }

static void lock(void)
{
    pthread_once(&redir_once, redir_forksafe);
    pthread_mutex_lock(&redir_lock);
}

static void entry_clear(redir_entry *e)
{
    free(e->url);
    free(e->target);
    memset(e, 0, sizeof(*e));
}

/* The value of query parameter name in url ("?name=" or "&name="), or
 * NULL; points into url. */
static const char *param(const char *url, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strpbrk(url, "?&"); p; p = strpbrk(p + 1, "?&"))
        if (!strncmp(p + 1, name, n) && p[1 + n] == '=')
            return p + 2 + n;
    return NULL;
}

int vt__curl_is_s3_signed(const char *url)
{
    static const char *const hosts[] = {
        ".s3.amazonaws.com", ".storage.googleapis.com", ".cloudfront.net",
        NULL};
    int host = 0;

    if (param(url, "X-Amz-Signature"))
        return 1;
    for (size_t i = 0; hosts[i] && !host; i++) {
        const char *h = strstr(url, hosts[i]);
        size_t n = strlen(hosts[i]);
        host = h && (h[n] == '/' || h[n] == ':');
    }
    /* GDAL asks for "&Signature=" or "?Signature=" */
    return host && param(url, "Signature") != NULL;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). Pure. */
static long long days_from_civil(int y, int m, int d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* n decimal digits at s, or -1. */
static int digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

long long vt__curl_url_expires(const char *url)
{
    const char *v = param(url, "Expires"), *d;
    int Y, M, D, h, m, s;

    if (v)
        return atoll(v);
    v = param(url, "X-Amz-Expires");
    d = param(url, "X-Amz-Date");
    /* YYYYMMDDTHHMMSSZ */
    if (!v || !d || strcspn(d, "&#") < 16 || d[8] != 'T' || d[15] != 'Z')
        return 0;
    Y = digits(d, 4);
    M = digits(d + 4, 2);
    D = digits(d + 6, 2);
    h = digits(d + 9, 2);
    m = digits(d + 11, 2);
    s = digits(d + 13, 2);
    if (Y < 0 || M < 1 || M > 12 || D < 1 || D > 31 || h < 0 || m < 0 || s < 0)
        return 0;
    return days_from_civil(Y, M, D) * 86400 + h * 3600 + m * 60 + s + atoi(v);
}

int vt__curl_redirect_note(const char *url, const char *target,
                           long long server_date, time_t now, int use)
{
    long long exp;
    redir_entry *slot = NULL;
    char *u, *t;

    if (!use || !url || !target || server_date <= 0 ||
        !vt__curl_is_s3_signed(target) || vt__curl_is_s3_signed(url))
        return 0;
    exp = vt__curl_url_expires(target);
    if (exp <= server_date + 10)
        return 0;
    u = strdup(url);
    t = strdup(target);
    if (!u || !t) {
        free(u);
        free(t);
        return 0;
    }
    lock();
    for (size_t i = 0; i < REDIR_CAP && !slot; i++)
        if (redirs[i].url && !strcmp(redirs[i].url, url))
            slot = &redirs[i];
    if (!slot) {
        int evict; /* a free slot or the oldest: cleared below either way */
        slot = &redirs[vt__slot_take(redirs, sizeof redirs[0], REDIR_CAP,
                                     offsetof(redir_entry, url), &redir_next, &evict)];
    }
    entry_clear(slot);
    slot->url = u;
    slot->target = t;
    slot->expires = now + (time_t)(exp - server_date);
    pthread_mutex_unlock(&redir_lock);
    return 1;
}

char *vt__curl_redirect_lookup(const char *url, time_t now, int *expired)
{
    char *out = NULL;

    *expired = 0;
    lock();
    for (size_t i = 0; i < REDIR_CAP; i++) {
        if (!redirs[i].url || strcmp(redirs[i].url, url))
            continue;
        if (now + 1 < redirs[i].expires) {
            out = strdup(redirs[i].target);
        } else {
            *expired = 1;
            entry_clear(&redirs[i]);
        }
        break;
    }
    pthread_mutex_unlock(&redir_lock);
    return out;
}

void vt__curl_redirect_forget(const char *prefix)
{
    size_t n = prefix ? strlen(prefix) : 0;
    lock();
    for (size_t i = 0; i < REDIR_CAP; i++)
        if (redirs[i].url && (n == 0 || !strncmp(redirs[i].url, prefix, n)))
            entry_clear(&redirs[i]);
    pthread_mutex_unlock(&redir_lock);
}
