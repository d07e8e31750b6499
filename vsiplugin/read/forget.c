/* forget.c: one call per kind of forgetting (forget.h) that tells every
 * module remembering names: the object table (object.h), the listings
 * (listing.h), the block cache (cache.h) and the backend (be->forget). Why
 * apart: the callers (gdal/takeover.cpp's write, delete, rename and clear
 * hooks) should not have to know which modules remember, nor miss one when
 * a module is added. */
#include "read/forget.h"

#include "cache/cache.h"
#include "read/listing.h"
#include "read/object.h"

void vt__forget_name(const vt_backend *be, const char *path)
{
    vt__object_forget(be, path);
    vt__listing_forget(path);
    be->forget(path);
}

void vt__forget_prefix(const vt_backend *be, const char *prefix)
{
    vt__object_forget_prefix(prefix);
    vt__listing_forget_prefix(prefix);
    if (*prefix == '\0') /* every name: blocks of objects no longer known too */
        vt__cache_drop_prefix(vt__object_cache(), "");
    be->forget(prefix);
}

void vt__forget_all(const vt_backend *be)
{
    vt__object_clear_all();
    vt__listing_forget_prefix("");
    vt__cache_drop_prefix(vt__object_cache(), "");
    be->forget(NULL);
}
