/* stock.c: the registered way to GDAL's own /vsis3/ handler (see stock.h).
 *
 * Three function pointers, process-wide, set once by takeover.cpp at
 * registration and read without a lock from GDAL's threads. */
#include "gdal/stock.h"

#include <errno.h>
#include <stdatomic.h>

typedef int (*vt_stock_stat_fn)(const char *, VSIStatBufL *, int);
typedef char **(*vt_stock_read_dir_fn)(const char *, int);
typedef void (*vt_stock_clear_fn)(const char *);

static _Atomic(vt_stock_stat_fn) cb_stat;
static _Atomic(vt_stock_read_dir_fn) cb_read_dir;
static _Atomic(vt_stock_clear_fn) cb_partial_clear;

void vt__stock_set_callbacks(const vt_stock_callbacks *cb)
{
    atomic_store(&cb_stat, cb ? cb->stat : NULL);
    atomic_store(&cb_read_dir, cb ? cb->read_dir : NULL);
    atomic_store(&cb_partial_clear, cb ? cb->partial_clear : NULL);
}

int vt__stock_stat(const char *path, VSIStatBufL *st, int flags)
{
    vt_stock_stat_fn fn = atomic_load(&cb_stat);

    if (fn == NULL) {
        errno = ENOENT;
        return -1;
    }
    return fn(path, st, flags);
}

char **vt__stock_read_dir(const char *path, int max_files)
{
    vt_stock_read_dir_fn fn = atomic_load(&cb_read_dir);

    return fn ? fn(path, max_files) : NULL;
}

void vt__stock_partial_clear(const char *path)
{
    vt_stock_clear_fn fn = atomic_load(&cb_partial_clear);

    if (fn)
        fn(path);
}
