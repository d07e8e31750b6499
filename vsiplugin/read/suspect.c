/* suspect.c: drop the blocks GDAL failed to decode (see suspect.h).
 *
 * GDAL boundary: reads the calling thread's error state (counter, class,
 * text) and nothing else of GDAL; never raises or resets an error, so what
 * the user sees is untouched. The once-per-block memory is a ring of the
 * last ONCE_SLOTS drops under once_mu, a leaf lock (forksafe.h). */
#include "read/suspect.h"

#include <string.h>

#include <cpl_error.h>

#include "cache/cache.h"
#include "base/forksafe.h"
#include "base/hash.h"

#define ONCE_SLOTS 1024
/* Bytes of GDAL's error text read. The buffer CPLGetLastErrorMsg() returns
 * holds at least 500 bytes (cpl_error.cpp: DEFAULT_LAST_ERR_MSG_SIZE, 3.6 to
 * 3.13; bigger once a long message grew it), so reading up to TEXT_MAX + 1 of
 * them never leaves it, even past the byte CPLErrorReset cleared. */
#define TEXT_MAX 480

static pthread_mutex_t once_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once_init = PTHREAD_ONCE_INIT;
static struct {
    uint64_t id;
    time_t at;
    int used;
} once_ring[ONCE_SLOTS];
static unsigned once_next;

static uint64_t fnv(const char *s)
{
    return vt__fnv1a(s, strlen(s));
}

/* The calling thread's error text from its second byte on (what
 * CPLErrorReset leaves of it: it clears the first byte, the class and the
 * counter), into buf of TEXT_MAX + 1 bytes. */
static void error_tail(char *buf)
{
    const char *m = CPLGetLastErrorMsg();
    size_t i;

    for (i = 0; i < TEXT_MAX && m[i + 1] != '\0'; i++)
        buf[i] = m[i + 1];
    buf[i] = '\0';
}

/* c may stand before (left) or after (right) a file name in GDAL's words:
 * "/vsis3/b/k, band 1: ...", "`/vsis3/b/k' not ...", "'k' ...", "k, band". */
static int name_edge(char c, int right)
{
    if (c == '\0')
        return 1;
    return strchr(right ? ",:;'`\" )" : "/'`\" (", c) != NULL;
}

/* 1 when text names the object at path "bucket/key": the whole path, or its
 * last component as a name of its own (GDAL 3.10 on, and 3.6 for a long
 * name, start a band's error with the dataset's file name only:
 * GDALRasterBand::ReportError, "k, band 1: ..."). cut: the text lost its
 * first byte (CPLErrorReset), so a name at its very start is matched without
 * its own first byte. */
static int names_object(const char *text, const char *path, int cut)
{
    const char *base = strrchr(path, '/'), *p;
    size_t n;

    if (strstr(text, path))
        return 1;
    base = base ? base + 1 : path;
    n = strlen(base);
    if (n < 2)
        return 0; /* too short to tell from other words */
    if (cut && strncmp(text, base + 1, n - 1) == 0 && name_edge(text[n - 1], 1))
        return 1;
    for (p = strstr(text, base); p; p = strstr(p + 1, base))
        if ((p == text ? !cut : name_edge(p[-1], 0)) && name_edge(p[n], 1))
            return 1;
    return 0;
}

int vt__suspect_blames(const char *text, int failure, const char *path)
{
    if (!text || !path || !*path || failure == 0)
        return 0;
    if (strstr(text, "vsitune: ") || !names_object(text, path, failure == -1))
        return 0; /* vsitune's own error, or another file's */
    return failure == 1 || strstr(text, "failed") != NULL;
}

int vt__suspect_within(const vt_suspect *s, size_t n, const uint64_t *off,
                       const size_t *len)
{
    size_t i, j, nonempty = 0;

    for (i = 0; i < n; i++) {
        if (len[i] == 0)
            continue;
        nonempty++;
        for (j = 0; j < s->n; j++)
            if (s->multi[j] && s->read[j] == s->reads && off[i] >= s->off[j] && off[i] - s->off[j] <= s->len[j] &&
                len[i] <= s->len[j] - (off[i] - s->off[j]))
                break;
        if (j == s->n)
            return 0;
    }
    return nonempty > 0;
}

static void once_register(void)
{
    vt__forksafe_register(&once_mu);
}

int vt__suspect_once(const char *cache_key, uint64_t block, time_t now)
{
    uint64_t id = fnv(cache_key) ^ ((block + 1) * 0x9e3779b97f4a7c15ULL);
    int fresh = 1;
    size_t i;

    pthread_once(&once_init, once_register);
    pthread_mutex_lock(&once_mu);
    for (i = 0; i < ONCE_SLOTS; i++)
        if (once_ring[i].used && once_ring[i].id == id &&
            now - once_ring[i].at < VT_SUSPECT_MEMORY) {
            fresh = 0;
            break;
        }
    if (fresh) {
        once_ring[once_next].id = id;
        once_ring[once_next].at = now;
        once_ring[once_next].used = 1;
        once_next = (once_next + 1) % ONCE_SLOTS;
    }
    pthread_mutex_unlock(&once_mu);
    return fresh;
}

int vt__suspect_evidence(const vt_suspect *s, const char *path)
{
    char tail[TEXT_MAX + 1];
    const char *m;

    if (s->n == 0 || !pthread_equal(s->tid, pthread_self()))
        return 0; /* another thread's errors are not visible here */
    error_tail(tail);
    if (CPLGetErrorCounter() == s->errors && fnv(tail) == s->text)
        return 0;
    m = CPLGetLastErrorMsg();
    if (m[0] != '\0')
        return vt__suspect_blames(m, CPLGetLastErrorType() == CE_Failure, path);
    return vt__suspect_blames(tail, -1, path);
}

/* Drop the blocks of s's reads (each at most once per VT_SUSPECT_MEMORY s)
 * and forget the reads. */
static void drop_kept(vt_suspect *s, const vt_object *o, const char *why)
{
    vt_cache *c = vt__object_cache();
    const char *key = vt__object_cache_key(o);
    size_t bs = vt__cache_block_size(c), dropped = 0, kept = 0, i, j, m = 0;
    uint64_t first[VT_SUSPECT_RANGES], last[VT_SUSPECT_RANGES], b, done = 0;
    time_t now = time(NULL);

    /* The block spans, sorted by first block, then each block visited once. */
    for (i = 0; i < s->n; i++) {
        uint64_t f, l;
        if (s->len[i] == 0)
            continue;
        f = s->off[i] / bs;
        l = (s->off[i] + s->len[i] - 1) / bs;
        for (j = m; j > 0 && first[j - 1] > f; j--) {
            first[j] = first[j - 1];
            last[j] = last[j - 1];
        }
        first[j] = f;
        last[j] = l;
        m++;
    }
    for (i = 0; i < m; i++) {
        b = i > 0 && done > first[i] ? done : first[i];
        for (; b <= last[i]; b++) {
            if (vt__suspect_once(key, b, now))
                dropped += vt__cache_drop(c, key, b, 1);
            else
                kept++;
        }
        if (last[i] + 1 > done)
            done = last[i] + 1;
    }
    CPLDebug("VSITUNE", "s3://%s: %s: %zu cache blocks of the last reads "
             "dropped (fetched again when read), %zu kept (fetched again "
             "already)", vt__object_path(o), why, dropped, kept);
    s->n = 0;
}

void vt__suspect_before_read(vt_suspect *s, vt_object *o, int multi, size_t n,
                             const uint64_t *off, const size_t *len)
{
    if (s->n == 0)
        return;
    if (vt__suspect_evidence(s, vt__object_path(o)))
        drop_kept(s, o, "GDAL reported a failure after the last read");
    else if (multi && vt__suspect_within(s, n, off, len))
        drop_kept(s, o, "the same bytes are read again");
}

/* Forget the ranges of reads before `first` (a reads counter value). */
static void forget_before(vt_suspect *s, unsigned first)
{
    size_t i, k = 0;

    for (i = 0; i < s->n; i++) {
        if ((int)(s->read[i] - first) < 0)
            continue;
        s->off[k] = s->off[i];
        s->len[k] = s->len[i];
        s->read[k] = s->read[i];
        s->multi[k] = s->multi[i];
        k++;
    }
    s->n = k;
}

void vt__suspect_after_read(vt_suspect *s, int ok, int multi, size_t n,
                            const uint64_t *off, const size_t *len)
{
    char tail[TEXT_MAX + 1];
    uint64_t lo = UINT64_MAX, hi = 0;
    size_t i, k = n;
    unsigned cur;

    if (!ok) {
        s->n = 0;
        return;
    }
    if (n == 0)
        return;
    if (n > VT_SUSPECT_RANGES) {
        /* Too many to keep: their span, for dropping only. */
        for (i = 0; i < n; i++) {
            if (len[i] == 0)
                continue;
            if (off[i] < lo)
                lo = off[i];
            if (off[i] + len[i] > hi)
                hi = off[i] + len[i];
        }
        if (hi == 0)
            return;
        k = 1;
        multi = 0;
    }
    cur = ++s->reads;
    forget_before(s, cur - (VT_SUSPECT_READS - 1));
    while (s->n + k > VT_SUSPECT_RANGES)
        forget_before(s, s->read[0] + 1);      /* the oldest read goes */
    for (i = 0; i < k; i++) {
        s->off[s->n] = k < n ? lo : off[i];
        s->len[s->n] = k < n ? hi - lo : len[i];
        s->read[s->n] = cur;
        s->multi[s->n] = (unsigned char)(multi != 0);
        s->n++;
    }
    s->tid = pthread_self();
    s->errors = CPLGetErrorCounter();
    error_tail(tail);
    s->text = fnv(tail);
}

void vt__suspect_close(vt_suspect *s, vt_object *o)
{
    if (vt__suspect_evidence(s, vt__object_path(o)))
        drop_kept(s, o, "GDAL reported a failure after the last read");
    s->n = 0;
}
