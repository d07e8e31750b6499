// takeover_int.h: what takeover.cpp and takeover_stream.cpp share: the
// C++ ABI of Open's result, and the two questions both kinds of hook ask of
// a name (its URL in GDAL's cache, whether an access mode reads).
#ifndef VT_TAKEOVER_INT_H
#define VT_TAKEOVER_INT_H

#include <cstring>
#include <string>

#include <cpl_vsi_virtual.h>
#include <gdal_version.h>

// ABI: 3.13's Open (and CreateOnlyVisibleAtCloseTime) return a unique_ptr.
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 13, 0)
#define VT_OPEN_RESULT VSIVirtualHandleUniquePtr
#else
#define VT_OPEN_RESULT VSIVirtualHandle *
#endif

namespace vt__takeover {

// GDAL's URL of name (its handler's own GetActualURL, never redirected): the
// key of GDAL's cache, the same through /vsis3/ and /vsis3_streaming/.
inline std::string actual_url(VSIFilesystemHandler *fs, const char *name)
{
    const char *url = fs->GetActualURL(name);
    return url ? std::string(url) : std::string();
}

inline bool is_read_access(const char *access)
{
    return access == nullptr || std::strpbrk(access, "wa+") == nullptr;
}

// Redirect GDAL's /vsis3_streaming/ handler's Stat and read Open
// (takeover_stream.cpp); from vt__takeover_install, once. A read open
// calls stock_partial_clear("bucket/key"): GDAL's /vsis3/ PartialClearCache,
// which takeover.cpp owns (vt__stock_partial_clear); never NULL.
void install_streaming(void (*stock_partial_clear)(const char *path));

}  // namespace vt__takeover

#endif
