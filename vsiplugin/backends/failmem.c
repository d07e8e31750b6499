/* failmem.c: the last failure each name met in this process (failmem.h),
 * for wording only. Moved up from backends/s3/ so that every backend of
 * GDAL's curl family words a failure met again as GDAL does.
 *
 * One bounded process-wide table (FAIL_CAP names, the oldest replaced),
 * under fail_lock, a leaf lock held only to look up or change it. A name is
 * "bucket/key" and the endpoint identity the backend gives: the same key of
 * another server is another name, as in GDAL's cache (by URL). */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/failmem.h"
#include "base/forksafe.h"
#include "base/slots.h"

#define FAIL_CAP 256

typedef struct fail_entry {
    char *path;     /* "bucket/key", malloc'd; NULL: a free slot */
    char *endpoint; /* the backend's endpoint identity, malloc'd (or NULL) */
    long status;    /* 0: no HTTP answer */
    vt_err err;
    char code[64];  /* the service's error code, or "" */
} fail_entry;

static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fail_once = PTHREAD_ONCE_INIT;
static fail_entry fails[FAIL_CAP];
static size_t fail_next;          /* slot replaced next when full */
static atomic_size_t fail_count;  /* names held: 0 skips the lock */

static void fail_forksafe(void) { vt__forksafe_register(&fail_lock); }

static void entry_clear(fail_entry *e)
{
    free(e->path);
    free(e->endpoint);
    memset(e, 0, sizeof(*e));
    atomic_fetch_sub(&fail_count, 1);
}

static int same_endpoint(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int vt__failmem_note(const char *name, const char *endpoint, long status,
                     vt_err err, const char *code)
{
    const char *path = name ? name : "";
    char *ep = endpoint ? strdup(endpoint) : NULL;
    fail_entry *slot = NULL;
    int again = 0;

    if (endpoint && !ep)
        return 0; /* nothing remembered: the next one is a first */
    pthread_once(&fail_once, fail_forksafe);
    pthread_mutex_lock(&fail_lock);
    for (size_t i = 0; i < FAIL_CAP && !slot; i++)
        if (fails[i].path && !strcmp(fails[i].path, path) &&
            same_endpoint(fails[i].endpoint, ep))
            slot = &fails[i];
    if (slot) {
        again = slot->status == status && slot->err == err &&
                !strcmp(slot->code, code ? code : "");
        free(ep); /* the slot keeps its own copy */
        ep = NULL;
    } else {
        int evict;
        slot = &fails[vt__slot_take(fails, sizeof fails[0], FAIL_CAP,
                                    offsetof(fail_entry, path), &fail_next, &evict)];
        if (evict)
            entry_clear(slot);
        slot->path = strdup(path);
        if (!slot->path) { /* nothing remembered: the next one is a first */
            free(ep);
            pthread_mutex_unlock(&fail_lock);
            return 0;
        }
        slot->endpoint = ep; /* handed over */
        atomic_fetch_add(&fail_count, 1);
    }
    slot->status = status;
    slot->err = err;
    snprintf(slot->code, sizeof(slot->code), "%s", code ? code : "");
    pthread_mutex_unlock(&fail_lock);
    return again;
}

/* Forget the names matching arg: equal to it (as_prefix 0) or starting with
 * it (1); arg NULL or "": every name. */
static void forget_where(const char *arg, int as_prefix)
{
    size_t n = arg ? strlen(arg) : 0;
    if (atomic_load(&fail_count) == 0)
        return;
    pthread_once(&fail_once, fail_forksafe);
    pthread_mutex_lock(&fail_lock);
    for (size_t i = 0; i < FAIL_CAP; i++) {
        const char *p = fails[i].path;
        if (p && (n == 0 || (as_prefix ? !strncmp(p, arg, n) : !strcmp(p, arg))))
            entry_clear(&fails[i]);
    }
    pthread_mutex_unlock(&fail_lock);
}

void vt__failmem_ok(const char *name)
{
    if (atomic_load(&fail_count) == 0 || !name || !*name)
        return;
    forget_where(name, 0); /* every endpoint's: a success is news enough */
}

void vt__failmem_forget(const char *prefix)
{
    while (prefix && *prefix == '/')
        prefix++;
    forget_where(prefix, 1);
}
