/* s3_route.c: where a request for bucket/key goes (s3_int.h).
 *
 * Why: GDAL users configure /vsis3/ with AWS_S3_ENDPOINT, AWS_HTTPS,
 * AWS_VIRTUAL_HOSTING and the region options, globally or per path
 * (VSISetPathSpecificOption); S3 itself answers some requests with a
 * redirect (another region, another endpoint). This file reads the options
 * for the request's path and overlays what redirects taught, which lives in
 * one process-wide table (memo_lock, a leaf lock: nothing else is locked or
 * called while it is held). Entries are keyed by the endpoint option as well
 * as the bucket, so what one server said never steers requests meant for
 * another. */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/config.h"
#include "auth/creds.h"
#include "base/forksafe.h"
#include "backends/s3/s3.h"
#include "backends/s3/s3_int.h"

#define MEMO_CAP 256        /* entries; the oldest replaced first */
#define TEMP_REDIRECT_TTL 300 /* s a TemporaryRedirect applies to its object */

struct memo {
    char *key;        /* malloc'd: memo_key \x1f bucket [\x1f key] */
    char region[64];  /* "" when not learnt */
    char endpoint[VT_S3_HOST_CAP]; /* "" when not learnt */
    int virt;         /* -1 when not learnt */
    time_t expires;   /* 0: permanent */
};

static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct memo memo[MEMO_CAP];
static size_t memo_next; /* slot replaced next once the table is full */
static pthread_once_t memo_once = PTHREAD_ONCE_INIT;

static void memo_forksafe(void)
{
    vt__forksafe_register(&memo_lock);
}

/* 1 when s[0..n) holds only lowercase letters, digits and '-'. */
static int lower_digit_dash(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) &&
            s[i] != '-')
            return 0;
    return 1;
}

/* path "bucket/key" (leading slashes skipped) into malloc'd bucket and key
 * (s3.h). Here, below s3.c, so that the route and s3.c both reach it. */
vt_err vt__s3_split(const char *path, char **bucket, char **key)
{
    *bucket = NULL;
    *key = NULL;
    if (!path)
        return VT_EINVAL;
    while (*path == '/')
        path++;
    const char *slash = strchr(path, '/');
    size_t blen = slash ? (size_t)(slash - path) : strlen(path);
    if (blen == 0)
        return VT_EINVAL;
    *bucket = strndup(path, blen);
    *key = strdup(slash ? slash + 1 : "");
    if (!*bucket || !*key) {
        free(*bucket);
        free(*key);
        *bucket = *key = NULL;
        return VT_ENOMEM;
    }
    return VT_OK;
}

int vt__s3_valid_region(const char *r)
{
    size_t n = r ? strlen(r) : 0;
    return n > 0 && n <= 63 && lower_digit_dash(r, n);
}

/* memo key into buf: "<memo_key>\x1f<bucket>[\x1f<key>]". */
static void memo_name(char *buf, size_t len, const char *memo_key,
                      const char *bucket, const char *key)
{
    snprintf(buf, len, "%s\x1f%s%s%s", memo_key, bucket, key ? "\x1f" : "",
             key ? key : "");
}

/* Copy the live entry called name into *out. 1 found, 0 not. Takes
 * memo_lock. */
static int memo_get(const char *name, struct memo *out)
{
    int found = 0;
    time_t now = time(NULL);
    pthread_once(&memo_once, memo_forksafe);
    pthread_mutex_lock(&memo_lock);
    for (size_t i = 0; i < MEMO_CAP; i++) {
        struct memo *m = &memo[i];
        if (m->key && !strcmp(m->key, name) &&
            (m->expires == 0 || now < m->expires)) {
            *out = *m;
            out->key = NULL;
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&memo_lock);
    return found;
}

static void memo_put(const char *name, const struct vt_s3_route *r,
                     time_t expires)
{
    char *k = strdup(name);
    if (!k)
        return;
    pthread_once(&memo_once, memo_forksafe);
    pthread_mutex_lock(&memo_lock);
    size_t slot = MEMO_CAP;
    for (size_t i = 0; i < MEMO_CAP && slot == MEMO_CAP; i++)
        if (memo[i].key && !strcmp(memo[i].key, name))
            slot = i;
    for (size_t i = 0; i < MEMO_CAP && slot == MEMO_CAP; i++)
        if (!memo[i].key)
            slot = i;
    if (slot == MEMO_CAP) {
        slot = memo_next;
        memo_next = (memo_next + 1) % MEMO_CAP;
    }
    free(memo[slot].key);
    memo[slot].key = k;
    snprintf(memo[slot].region, sizeof(memo[slot].region), "%s", r->region);
    snprintf(memo[slot].endpoint, sizeof(memo[slot].endpoint), "%s",
             r->endpoint);
    memo[slot].virt = r->virt;
    memo[slot].expires = expires;
    pthread_mutex_unlock(&memo_lock);
}

void vt__s3_forget_routes(void)
{
    pthread_once(&memo_once, memo_forksafe);
    pthread_mutex_lock(&memo_lock);
    for (size_t i = 0; i < MEMO_CAP; i++) {
        free(memo[i].key);
        memset(&memo[i], 0, sizeof(memo[i]));
    }
    memo_next = 0;
    pthread_mutex_unlock(&memo_lock);
}

void vt__s3_route_remember(const char *bucket, const char *key,
                           const struct vt_s3_route *r, int temporary)
{
    char name[VT_S3_HOST_CAP + 2048];
    memo_name(name, sizeof(name), r->memo_key, bucket, temporary ? key : NULL);
    memo_put(name, r, temporary ? time(NULL) + TEMP_REDIRECT_TTL : 0);
}

/* ---- options ------------------------------------------------------------ */

static char *path_of(const char *bucket, const char *key)
{
    size_t n = strlen(bucket) + (key ? strlen(key) : 0) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", bucket, key ? key : "");
    return p;
}

/* The region the options give for path, GDAL's order (measured on 3.6.2):
 * AWS_DEFAULT_REGION, else the profile's region when credentials come from
 * the shared files, else AWS_REGION, else us-east-1. malloc'd. */
static char *options_region(const char *path)
{
    char *r = vt__cfg_dup(path, "AWS_DEFAULT_REGION");
    if (!r)
        r = vt__creds_profile_region(path);
    if (!r)
        r = vt__cfg_dup(path, "AWS_REGION");
    return r ? r : strdup("us-east-1");
}

char *vt__s3_options_region(const char *path)
{
    return options_region(path);
}

char *vt__s3_region_for(const char *path)
{
    struct vt_s3_route r;
    char *bucket = NULL, *key = NULL, err[256];
    if (vt__s3_split(path, &bucket, &key) != VT_OK)
        return options_region(path);
    vt_err e = vt__s3_route(bucket, key, &r, err, sizeof(err));
    free(bucket);
    free(key);
    return e == VT_OK ? strdup(r.region) : options_region(path);
}

/* DNS-compatible for virtual hosting (and no dots: they break the TLS
 * wildcard certificate, which is why GDAL goes path style for them). */
static int dns_compatible(const char *b)
{
    size_t n = strlen(b);
    return n >= 3 && n <= 63 && isalnum((unsigned char)b[0]) &&
           isalnum((unsigned char)b[n - 1]) && lower_digit_dash(b, n);
}

/* An IP literal endpoint ("127.0.0.1:9000", "[::1]:9000") cannot take a
 * bucket as a subdomain: such endpoints are always addressed path style. */
static int ip_literal(const char *host)
{
    if (host[0] == '[')
        return 1;
    for (; *host && *host != ':' && *host != '/'; host++)
        if (!isdigit((unsigned char)*host) && *host != '.')
            return 0;
    return 1;
}

/* The route from the options, overlaid with the redirect memory when
 * use_memo. */
static vt_err route(const char *bucket, const char *key, int use_memo,
                    struct vt_s3_route *r, char *errbuf, size_t errlen)
{
    vt_err err = VT_OK;
    char *path = path_of(bucket, key);
    char *given = NULL, *region = NULL, name[VT_S3_HOST_CAP + 2048];
    struct memo m;
    const char *ep;
    int have_memo;

    memset(r, 0, sizeof(*r));
    if (!path)
        return VT_ENOMEM;
    given = vt__cfg_dup(path, "AWS_S3_ENDPOINT");
    r->https = vt__cfg_bool(path, "AWS_HTTPS", 1);
    ep = given ? given : "";
    r->endpoint_given = given != NULL;
    if (!strncmp(ep, "http://", 7)) {
        ep += 7;
        r->https = 0;
    } else if (!strncmp(ep, "https://", 8)) {
        ep += 8;
        r->https = 1;
    }
    snprintf(r->memo_key, sizeof(r->memo_key), "%s\x1f%d", given ? given : "",
             r->https);

    /* What redirects taught: this object's temporary redirect first, then
     * the bucket's permanent one. */
    memo_name(name, sizeof(name), r->memo_key, bucket, key);
    have_memo = use_memo && memo_get(name, &m);
    if (use_memo && !have_memo) {
        memo_name(name, sizeof(name), r->memo_key, bucket, NULL);
        have_memo = memo_get(name, &m);
    }

    region = (have_memo && m.region[0]) ? strdup(m.region)
                                        : options_region(path);
    if (!region) {
        err = VT_ENOMEM;
        goto out;
    }
    if (!vt__s3_valid_region(region)) {
        snprintf(errbuf, errlen, "AWS_REGION '%s' is not a region name "
                 "(lowercase letters, digits and '-')", region);
        err = VT_EINVAL;
        goto out;
    }
    snprintf(r->region, sizeof(r->region), "%s", region);

    if (have_memo && m.endpoint[0])
        snprintf(r->endpoint, sizeof(r->endpoint), "%s", m.endpoint);
    else if (*ep)
        snprintf(r->endpoint, sizeof(r->endpoint), "%s", ep);
    else if (strcmp(region, "us-east-1") != 0)
        snprintf(r->endpoint, sizeof(r->endpoint), "s3.%s.amazonaws.com",
                 region);
    else
        snprintf(r->endpoint, sizeof(r->endpoint), "s3.amazonaws.com");
    size_t el = strlen(r->endpoint);
    while (el > 0 && r->endpoint[el - 1] == '/')
        r->endpoint[--el] = '\0';
    if (el == 0 || strpbrk(r->endpoint, "/?# \t\r\n")) {
        snprintf(errbuf, errlen, "AWS_S3_ENDPOINT '%s' is not a host[:port]",
                 given ? given : "");
        err = VT_EINVAL;
        goto out;
    }
    if (have_memo && m.virt >= 0)
        r->virt = m.virt;
    else
        r->virt = vt__cfg_bool(path, "AWS_VIRTUAL_HOSTING", 1) &&
                  dns_compatible(bucket) && !ip_literal(r->endpoint);
out:
    free(region);
    free(given);
    free(path);
    return err;
}

vt_err vt__s3_route(const char *bucket, const char *key,
                    struct vt_s3_route *r, char *errbuf, size_t errlen)
{
    return route(bucket, key, 1, r, errbuf, errlen);
}

char *vt__s3_endpoint_base(const char *path)
{
    char *bucket = NULL, *key = NULL, *out = NULL, err[256];
    struct vt_s3_route r;
    size_t n;

    if (vt__s3_split(path, &bucket, &key) != VT_OK)
        return NULL;
    /* From the options only: a redirect points at the same bucket, and an
     * identity that changed after the first request would cost a refetch. */
    if (route(bucket, key, 0, &r, err, sizeof(err)) != VT_OK)
        goto done;
    n = strlen(r.endpoint) + strlen(bucket) + 16;
    out = malloc(n);
    if (!out)
        goto done;
    if (r.virt)
        snprintf(out, n, "%s://%s.%s", r.https ? "https" : "http", bucket,
                 r.endpoint);
    else
        snprintf(out, n, "%s://%s/%s", r.https ? "https" : "http", r.endpoint,
                 bucket);
done:
    free(bucket);
    free(key);
    return out;
}
