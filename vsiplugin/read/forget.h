/* forget.h: forgetting names, in every module that remembers them.
 *
 * GDAL's own handler writes, deletes and renames names, and GDAL's
 * VSICurlClearCache / VSICurlPartialClearCache clear what it remembers;
 * vsitune then forgets what it knows of those names, in one call: the
 * object table (sizes, ETags, remembered 404s) and the host-wide metadata,
 * the listings, the block cache, and what the backend learned (redirects,
 * failures in GDAL's words, credentials: be->forget). gdal/takeover.cpp
 * calls these; nothing else needs to know which modules remember. Open
 * handles keep their copy. Thread-safe; no lock held on return. */
#ifndef VT_FORGET_H
#define VT_FORGET_H

#include "backends/backend.h"

/* One name "bucket/key" of be: written, deleted or renamed. */
void vt__forget_name(const vt_backend *be, const char *path);

/* Every name of be starting with prefix ("bucket/dir"; "": every name, the
 * cached blocks of objects no longer known included, but not the
 * backend's redirects and credentials): VSICurlPartialClearCache, Sync,
 * RmdirRecursive. */
void vt__forget_prefix(const vt_backend *be, const char *prefix);

/* Everything (VSICurlClearCache): every name, every cached block, all
 * host-wide metadata, and the backend's redirects, failures and
 * credentials. */
void vt__forget_all(const vt_backend *be);

#endif
