/* stock.c: the registered way to GDAL's own handler of each prefix vsitune
 * serves (see stock.h).
 *
 * Three function pointers per backend (and a default set for any backend
 * without its own), set by takeover_install.cpp at registration and read without a
 * lock from GDAL's threads. */
#include "gdal/stock.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

typedef int (*vt_stock_stat_fn)(const char *, VSIStatBufL *, int);
typedef char **(*vt_stock_read_dir_fn)(const char *, int);
typedef void (*vt_stock_clear_fn)(const char *);

/* One backend's calls; slot 0 is the default (be NULL). */
typedef struct stock_slot {
    _Atomic(const void *) be;
    _Atomic(vt_stock_stat_fn) stat;
    _Atomic(vt_stock_read_dir_fn) read_dir;
    _Atomic(vt_stock_clear_fn) partial_clear;
} stock_slot;

#define STOCK_SLOTS 8

static stock_slot g_slots[STOCK_SLOTS];

/* be's slot (created when make), else the default one. */
static stock_slot *slot_for(const void *be, int make)
{
    size_t i;
    if (be == NULL)
        return &g_slots[0];
    for (i = 1; i < STOCK_SLOTS; i++) {
        const void *cur = atomic_load(&g_slots[i].be);
        if (cur == be)
            return &g_slots[i];
        if (cur == NULL && make) {
            const void *expect = NULL;
            if (atomic_compare_exchange_strong(&g_slots[i].be, &expect, be) ||
                expect == be)
                return &g_slots[i];
        }
    }
    return &g_slots[0];
}

void vt__stock_set_callbacks_for(const struct vt_backend *be,
                                 const vt_stock_callbacks *cb)
{
    stock_slot *s = slot_for(be, 1);
    atomic_store(&s->stat, cb ? cb->stat : NULL);
    atomic_store(&s->read_dir, cb ? cb->read_dir : NULL);
    atomic_store(&s->partial_clear, cb ? cb->partial_clear : NULL);
}

void vt__stock_set_callbacks(const vt_stock_callbacks *cb)
{
    vt__stock_set_callbacks_for(NULL, cb);
}

int vt__stock_stat(const struct vt_backend *be, const char *path,
                   VSIStatBufL *st, int flags)
{
    vt_stock_stat_fn fn = atomic_load(&slot_for(be, 0)->stat);

    if (fn == NULL) {
        errno = ENOENT;
        return -1;
    }
    return fn(path, st, flags);
}

char **vt__stock_read_dir(const struct vt_backend *be, const char *path,
                          int max_files)
{
    vt_stock_read_dir_fn fn = atomic_load(&slot_for(be, 0)->read_dir);

    return fn ? fn(path, max_files) : NULL;
}

void vt__stock_partial_clear(const struct vt_backend *be, const char *path)
{
    vt_stock_clear_fn fn = atomic_load(&slot_for(be, 0)->partial_clear);

    if (fn)
        fn(path);
}
