// takeover_install.cpp: vt__takeover_install: GDAL's own handler of a prefix
// found, its vtable copied and the copy's slots pointed at the hooks
// (takeover.cpp), and GDAL's own code of the prefix registered for handler.c
// (stock.h). See takeover.h for what is redirected and why.
//
// The mechanism, in one place. GDAL's handler of a prefix is one C++ object
// whose first word points into its class's vtable. We copy that vtable (with
// the two words before it: offset-to-top and the type_info, so dynamic_cast
// and typeid still see GDAL's class) into memory of our own, change a few
// slots, and point the object at the copy. Nothing else about the object
// changes, and GDAL keeps owning it.
//
// Which slot is which comes from the Itanium C++ ABI (GCC and Clang on every
// platform GDAL's plugin loader supports): a pointer to a virtual member
// function holds 1 + the slot's byte offset (on ARM: the offset, with adj's low
// bit set; see vtable.h's vslot), so the slots of the public
// VSIFilesystemHandler methods are read from the headers we are built with.
// ClearCache and PartialClearCache belong to GDAL's internal curl class, so
// their slots are found at install time by a probe: every slot of the copy
// is briefly pointed at a thunk that records its own index, GDAL's
// VSICurlPartialClearCache / VSICurlClearCache are called (they
// dynamic_cast our object and call exactly that method), and the copy is
// restored. Which hook each slot then leads to is takeover.cpp's
// (add_hooks); the ABI's part (slots, the copy's size, the probe) is
// vtable.cpp's; /vsis3_streaming/'s two redirected slots are
// takeover_stream.cpp's.
//
// Thread: vt__takeover_install runs once per prefix, from
// GDALRegister_vsitune (inside GDALAllRegister, before any I/O); the
// registered stock calls run on GDAL's threads.
#include "gdal/takeover.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include <cpl_error.h>
#include <cpl_vsi_virtual.h>

extern "C" {
#include "backends/backend.h"
#include "gdal/stock.h"
}
#include "gdal/takeover_int.h"
#include "gdal/vtable.h"

using namespace vt__abi;
using namespace vt__takeover;

namespace {

// Never instantiated: `this` is GDAL's handler object, whose own code (at a
// slot of its own vtable) is called through it, not the hook in the copy.
class StockCode
{
};

/* ---- GDAL's own code of each prefix, registered for handler.c (stock.h) - */

// The calls for target I: stock.h's callbacks take no context, so each
// target gets its own instances.
template <size_t I> int stock_stat(const char *path, VSIStatBufL *st, int flags)
{
    Target &t = g_targets[I];
    if (t.stock == nullptr) {
        errno = ENOENT;
        return -1;
    }
    std::string name = std::string(t.prefix) + path;
    typedef int (VSIFilesystemHandler::*StatFn)(const char *, VSIStatBufL *,
                                                int);
    size_t slot = vslot(static_cast<StatFn>(&VSIFilesystemHandler::Stat));
    // GDAL's own Stat, not the hook (the object may be redirected).
    typedef int (StockCode::*OwnStat)(const char *, VSIStatBufL *, int);
    return (reinterpret_cast<StockCode *>(t.stock)->*pmf_at<OwnStat>(
               t.orig[slot]))(name.c_str(), st, flags);
}

template <size_t I> void stock_partial_clear(const char *path)
{
    Target &t = g_targets[I];
    if (t.stock == nullptr || t.slot_partial == SIZE_MAX)
        return;
    std::string name = std::string(t.prefix) + path;
    typedef void (StockCode::*PartialFn)(const char *);
    (reinterpret_cast<StockCode *>(t.stock)->*pmf_at<PartialFn>(
         t.orig[t.slot_partial]))(name.c_str());
}

template <size_t I> char **stock_read_dir(const char *path, int max_files)
{
    Target &t = g_targets[I];
    if (t.stock == nullptr)
        return nullptr;
    std::string name = std::string(t.prefix) + path;
    return t.stock->ReadDirEx(name.c_str(), max_files);
}

template <size_t I> constexpr vt_stock_callbacks stock_calls()
{
    return {stock_stat<I>, stock_read_dir<I>, stock_partial_clear<I>};
}

const vt_stock_callbacks kStockCalls[kMaxTargets] = {
    stock_calls<0>(), stock_calls<1>(), stock_calls<2>(), stock_calls<3>()};
void (*const kPartialClear[kMaxTargets])(const char *) = {
    stock_partial_clear<0>, stock_partial_clear<1>, stock_partial_clear<2>,
    stock_partial_clear<3>};

// The prefix the probe's calls name (a capture-less lambda cannot hold it).
const char *g_probe_prefix = nullptr;

// Point t's object at a copy of its vtable with the hooks in it (see the
// top). 0, or -1 with a CPLError when its C++ layout is not the expected one.
int redirect_target(Target &t)
{
    // The object's most derived part must start at the VSIFilesystemHandler
    // part (single inheritance), or slot calls would need a this-adjustment.
    if (dynamic_cast<void *>(t.stock) != static_cast<void *>(t.stock) ||
        (t.nslots = readable_slots(t.orig)) < 8) {
        CPLError(CE_Warning, CPLE_NotSupported,
                 "vsitune: GDAL's %s handler does not have the expected "
                 "C++ layout; vsitune is not active on %s (read through "
                 "%s instead)",
                 t.prefix, t.prefix, t.reader_prefix);
        return -1;
    }
    t.table = new void *[kPrefixWords + t.nslots];
    std::memcpy(t.table, t.orig - kPrefixWords,
                (kPrefixWords + t.nslots) * sizeof(void *));
    *reinterpret_cast<void ***>(t.stock) = t.table_slots();

    g_probe_prefix = t.prefix;
    g_probing = true;
    t.slot_partial = probe(t.table_slots(), t.orig, t.nslots,
                           [] { VSICurlPartialClearCache(g_probe_prefix); });
    t.slot_clear =
        probe(t.table_slots(), t.orig, t.nslots, [] { VSICurlClearCache(); });
    g_probing = false;

    add_hooks(t);
    for (size_t i = 0; i < t.nredirects; i++)
        t.table_slots()[t.redirects[i].slot] = t.redirects[i].code;
    return 0;
}

}  // namespace

extern "C" int vt__takeover_install(const char *prefix,
                                    const char *reader_prefix,
                                    const struct vt_backend *be,
                                    const VSIFilesystemPluginCallbacksStruct *cb,
                                    int takeover)
{
    for (size_t i = 0; i < g_ntargets; i++)
        if (std::strcmp(g_targets[i].prefix, prefix) == 0)
            return 0;  // idempotent
    if (g_ntargets == kMaxTargets)
        return -1;
    VSIInstallPluginHandler(reader_prefix, cb);
    VSIFilesystemHandler *stock = VSIFileManager::GetHandler(prefix);
    // GetHandler falls back to the local-file handler for an unknown prefix.
    if (stock == nullptr ||
        stock == VSIFileManager::GetHandler("/vsitune-no-such-prefix/")) {
        CPLError(CE_Failure, CPLE_AppDefined,
                 "vsitune: GDAL's own %s handler is not available "
                 "(GDAL built without curl?); vsitune stays out of the way",
                 prefix);
        return -1;
    }
    size_t idx = g_ntargets++;
    Target &t = g_targets[idx];
    t.prefix = prefix;
    t.prefix_len = std::strlen(prefix);
    t.reader_prefix = reader_prefix;
    t.be = be;
    t.reader = VSIFileManager::GetHandler(reader_prefix);
    t.stock = stock;
    t.orig = *reinterpret_cast<void ***>(stock);
    t.streaming = std::strcmp(prefix, "/vsis3/") == 0;
    t.gdal_answers_misses = be->list == nullptr;
    // handler.c reaches GDAL's own code only through these (stock.h),
    // takeover or not: t.orig is the object's own table either way.
    vt__stock_set_callbacks_for(be, &kStockCalls[idx]);
    if (!takeover)
        return 0;
    if (redirect_target(t) != 0)
        return -1;
    if (t.streaming)
        install_streaming(kPartialClear[idx]);
    CPLDebug("VSITUNE",
             "GDAL's %s handler redirected (%zu slots, %zu hooks; "
             "ClearCache slot %zd, PartialClearCache slot %zd)",
             t.prefix, t.nslots, t.nredirects, (ssize_t)t.slot_clear,
             (ssize_t)t.slot_partial);
    return 0;
}
