// takeover_stream.cpp: GDAL's /vsis3_streaming/ handler, two slots
// redirected (see takeover.h).
//
// Its object gets the treatment takeover.cpp gives GDAL's /vsis3/ one (a
// vtable copy, vtable.h), for Stat and read Open only, so that what
// vsitune's /vsis3/ learned reaches it as GDAL's file-property cache, shared
// by both prefixes, would carry it (streaming.h). A file of its own: it is
// the other handler, with hooks of its own, and shares nothing with
// takeover.cpp's hooks but takeover_int.h.
//
// Thread: install_streaming runs once, from vt__takeover_install; the hooks
// run on GDAL's threads.
#include "gdal/takeover_int.h"

#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <string>

#include <cpl_error.h>
#include <cpl_vsi_virtual.h>

extern "C" {
#include "gdal/streaming.h"
}
#include "gdal/vtable.h"

using namespace vt__abi;

namespace {

using vt__takeover::actual_url;
using vt__takeover::is_read_access;

const char *const kStreamPrefix = "/vsis3_streaming/";
const size_t kStreamPrefixLen = 17;

// GDAL's /vsis3_streaming/ handler stays GDAL's; only its Stat and read
// Open are redirected the same way (a vtable copy), so that what vsitune's
// /vsis3/ learned reaches it as GDAL's shared cache would carry it
// (streaming.h). Its other methods, and every request it makes, are GDAL's.
void **g_stream_orig = nullptr;  // the streaming object's own vtable
void (*g_stock_partial_clear)(const char *path) = nullptr;  // the install's
size_t g_stream_slot_open = SIZE_MAX, g_stream_slot_stat = SIZE_MAX;

bool is_stream(const char *name)
{
    return name != nullptr &&
           std::strncmp(name, kStreamPrefix, kStreamPrefixLen) == 0;
}

// Never instantiated: `this` is GDAL's streaming handler object.
class StreamHooks
{
    VSIFilesystemHandler *self()
    {
        return reinterpret_cast<VSIFilesystemHandler *>(this);
    }
    template <typename Pmf> Pmf orig(size_t slot)
    {
        return pmf_at<Pmf>(g_stream_orig[slot]);
    }

  public:
    VT_OPEN_RESULT Open(const char *name, const char *access, bool set_error,
                        CSLConstList options)
    {
        typedef VT_OPEN_RESULT (StreamHooks::*OpenFn)(
            const char *, const char *, bool, CSLConstList);
        OpenFn fn = orig<OpenFn>(g_stream_slot_open);
        if (!is_read_access(access) || !is_stream(name))
            return (this->*fn)(name, access, set_error, options);
        // A handle takes its size from GDAL's cache, which vsitune cannot
        // set: when /vsis3/ learned a newer one, GDAL's entry is dropped and
        // the handle asks (one HEAD stock GDAL does not make).
        std::string url = actual_url(self(), name);
        if (vt__stream_take(url.c_str()))
            g_stock_partial_clear(name + kStreamPrefixLen);
        VT_OPEN_RESULT h = (this->*fn)(name, access, set_error, options);
        vt__stream_seen(url.c_str(), name + kStreamPrefixLen);
        return h;
    }
    int Stat(const char *name, VSIStatBufL *st, int flags)
    {
        typedef int (StreamHooks::*StatFn)(const char *, VSIStatBufL *, int);
        StatFn fn = orig<StatFn>(g_stream_slot_stat);
        if ((flags & VSI_STAT_CACHE_ONLY) || !is_stream(name))
            return (this->*fn)(name, st, flags);
        std::string url = actual_url(self(), name);
        uint64_t size;
        if (vt__stream_answer(url.c_str(), &size)) {
            // GDAL's streaming Stat from its cache: size and S_IFREG only
            CPLDebug("VSITUNE", "stat %s: the size /vsis3/ learned, as "
                     "GDAL's shared cache gives it", name);
            std::memset(st, 0, sizeof(*st));
            st->st_mode = S_IFREG;
            st->st_size = static_cast<vsi_l_offset>(size);
            return 0;
        }
        int ret = (this->*fn)(name, st, flags);
        vt__stream_seen(url.c_str(), name + kStreamPrefixLen);
        return ret;
    }
};

}  // namespace

namespace vt__takeover {

// Redirect the streaming handler's Stat and Open; nothing when GDAL has no
// such handler or its layout is not the one expected (then only a process
// mixing both prefixes on an object overwritten through /vsis3/ differs).
void install_streaming(void (*stock_partial_clear)(const char *path))
{
    VSIFilesystemHandler *fs = VSIFileManager::GetHandler(kStreamPrefix);
    if (fs == nullptr ||
        fs == VSIFileManager::GetHandler("/vsitune-no-such-prefix/") ||
        dynamic_cast<void *>(fs) != static_cast<void *>(fs)) {
        CPLDebug("VSITUNE", "%s not redirected (no such handler, or another "
                 "C++ layout)", kStreamPrefix);
        return;
    }
    void **orig = *reinterpret_cast<void ***>(fs);
    size_t n = readable_slots(orig);
    Redirect open = redirect<StreamHooks, VT_OPEN_RESULT, const char *,
                             const char *, bool, CSLConstList>(
        &VSIFilesystemHandler::Open, &StreamHooks::Open);
    Redirect stat = redirect(&VSIFilesystemHandler::Stat, &StreamHooks::Stat);
    if (open.slot >= n || stat.slot >= n) {
        CPLDebug("VSITUNE", "%s not redirected (%zu slots)", kStreamPrefix,
                 n);
        return;
    }
    void **table = new void *[kPrefixWords + n];  // never freed, as g_table
    std::memcpy(table, orig - kPrefixWords,
                (kPrefixWords + n) * sizeof(void *));
    table[kPrefixWords + open.slot] = open.code;
    table[kPrefixWords + stat.slot] = stat.code;
    g_stream_orig = orig;
    g_stock_partial_clear = stock_partial_clear;
    g_stream_slot_open = open.slot;
    g_stream_slot_stat = stat.slot;
    *reinterpret_cast<void ***>(fs) = table + kPrefixWords;
}

}  // namespace vt__takeover
