/* streaming.c: the URLs GDAL's /vsis3_streaming/ handler asked about, and
 * the sizes vsitune's /vsis3/ learned of them since (see streaming.h for
 * why: GDAL's file-property cache is shared by both prefixes).
 *
 * One bounded table (VT_STREAM_CAP entries, the oldest replaced when full)
 * under stream_lock, a leaf lock held only to look up or change an entry,
 * never across a call into GDAL or a request. A replaced entry only means
 * that a size /vsis3/ learns later for that URL is not mirrored (the
 * streaming handler then answers what it knew itself). */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/forksafe.h"
#include "base/slots.h"
#include "gdal/streaming.h"

typedef struct stream_entry {
    char *url;    /* malloc'd; NULL: a free slot */
    char *path;   /* "bucket/key", malloc'd */
    int has_size; /* a size /vsis3/ learned after the streaming handler */
    uint64_t size;
} stream_entry;

static pthread_mutex_t stream_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t stream_once = PTHREAD_ONCE_INIT;
static stream_entry entries[VT_STREAM_CAP];
static size_t stream_next;          /* slot replaced next when full */
static atomic_size_t stream_count;  /* URLs held: 0 skips the lock */

static void stream_forksafe(void) { vt__forksafe_register(&stream_lock); }

static void lock(void)
{
    pthread_once(&stream_once, stream_forksafe);
    pthread_mutex_lock(&stream_lock);
}

static void entry_clear(stream_entry *e)
{
    free(e->url);
    free(e->path);
    memset(e, 0, sizeof(*e));
    atomic_fetch_sub(&stream_count, 1);
}

/* The entry of url, or NULL. Under stream_lock. */
static stream_entry *find(const char *url)
{
    for (size_t i = 0; i < VT_STREAM_CAP; i++)
        if (entries[i].url && strcmp(entries[i].url, url) == 0)
            return &entries[i];
    return NULL;
}

int vt__stream_any(void)
{
    return atomic_load(&stream_count) > 0;
}

void vt__stream_seen(const char *url, const char *path)
{
    stream_entry *e;
    char *u, *p;
    int evict;
    if (!url || !path)
        return;
    u = strdup(url);
    p = strdup(path);
    lock();
    if (find(url) || !u || !p)
        goto out;
    e = &entries[vt__slot_take(entries, sizeof entries[0], VT_STREAM_CAP,
                               offsetof(stream_entry, url), &stream_next, &evict)];
    if (evict)
        entry_clear(e);
    e->url = u;
    e->path = p;
    u = p = NULL; /* the entry owns them */
    atomic_fetch_add(&stream_count, 1);
out:
    pthread_mutex_unlock(&stream_lock);
    free(u);
    free(p);
}

void vt__stream_learned(const char *url, uint64_t size)
{
    stream_entry *e;
    if (!url || atomic_load(&stream_count) == 0)
        return;
    lock();
    if ((e = find(url)) != NULL) {
        e->has_size = 1;
        e->size = size;
    }
    pthread_mutex_unlock(&stream_lock);
}

/* vt__stream_answer and vt__stream_take: take drops the size it returns. */
static int answer(const char *url, uint64_t *size, int take)
{
    stream_entry *e;
    int found = 0;
    if (!url || atomic_load(&stream_count) == 0)
        return 0;
    lock();
    if ((e = find(url)) != NULL && e->has_size) {
        found = 1;
        if (size)
            *size = e->size;
        if (take)
            e->has_size = 0;
    }
    pthread_mutex_unlock(&stream_lock);
    return found;
}

int vt__stream_answer(const char *url, uint64_t *size)
{
    return answer(url, size, 0);
}

int vt__stream_take(const char *url)
{
    return answer(url, NULL, 1);
}

void vt__stream_forget(const char *path, int prefix)
{
    size_t n;
    if (!path || atomic_load(&stream_count) == 0)
        return;
    n = strlen(path);
    lock();
    for (size_t i = 0; i < VT_STREAM_CAP; i++)
        if (entries[i].url &&
            (prefix ? strncmp(entries[i].path, path, n) == 0
                    : strcmp(entries[i].path, path) == 0))
            entries[i].has_size = 0;
    pthread_mutex_unlock(&stream_lock);
}

void vt__stream_clear(void)
{
    if (atomic_load(&stream_count) == 0)
        return;
    lock();
    for (size_t i = 0; i < VT_STREAM_CAP; i++)
        if (entries[i].url)
            entry_clear(&entries[i]);
    stream_next = 0;
    pthread_mutex_unlock(&stream_lock);
}
