// takeover.cpp: vsitune serves reads of /vsis3/ inside GDAL's own handler
// (see takeover.h for what is redirected and why).
//
// The mechanism, in one place. GDAL's /vsis3/ handler is one C++ object
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
// restored. The hooks themselves are non-virtual member functions of an
// empty class `Hooks` with exactly the virtual's signature (enforced at
// compile time by redirect()), so the compiler produces the calling
// convention, including hidden return slots; `this` inside them is GDAL's
// handler object and no member of Hooks is ever touched.
//
// The ABI's part (slots, the copy's size, the probe) is vtable.cpp's;
// /vsis3_streaming/'s two redirected slots are takeover_stream.cpp's.
//
// GDAL releases: every behaviour that differs by release is in
// gdal_release.c's table, chosen at run time. The `#if GDAL_VERSION_NUM`
// branches left here (and takeover_int.h's one) are the C++ ABI only (a
// method's signature, whether a virtual exists, the vtable slots), which
// must match the headers built against; each says which. plugin.c refuses a GDAL of another major.minor.
//
// Thread: vt__takeover_install runs once, from GDALRegister_vsitune (inside
// GDALAllRegister, before any /vsis3/ I/O); the hooks run on GDAL's threads.
#include "gdal/takeover.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include <cpl_error.h>
#include <cpl_vsi_error.h>
#include <cpl_vsi_virtual.h>
#include <gdal_version.h>

extern "C" {
#include "auth/creds.h"
#include "gdal/handler.h"
#include "read/forget.h"
#include "read/object.h"
#include "read/policy.h"
#include "backends/s3/s3.h"
#include "gdal/stock.h"
#include "gdal/streaming.h"
}
#include "gdal/takeover_int.h"
#include "gdal/vtable.h"

using namespace vt__abi;
using namespace vt__takeover;

namespace {

const char *const kStockPrefix = "/vsis3/";
const size_t kStockPrefixLen = 7;

VSIFilesystemHandler *g_stock = nullptr;   // GDAL's own /vsis3/ handler
VSIFilesystemHandler *g_reader = nullptr;  // vsitune's reader, on /vsitune/
void **g_orig = nullptr;                   // the stock object's own vtable
bool g_taken_over = false;

thread_local int t_delegating = 0;

struct Delegating {
    Delegating() { ++t_delegating; }
    ~Delegating() { --t_delegating; }
    Delegating(const Delegating &) = delete;
    Delegating &operator=(const Delegating &) = delete;
};

/* The stock object's vtable copy: kPrefixWords + slots, never freed (the
 * object uses it until the process ends). */
void **g_table = nullptr;
size_t g_nslots = 0;

void **table_slots() { return g_table + kPrefixWords; }

/* ---- the hooks ---------------------------------------------------------- */

size_t g_slot_clear = SIZE_MAX, g_slot_partial = SIZE_MAX;

std::string reader_name(const char *name)
{
    return std::string(VT_READER_PREFIX) + (name + kStockPrefixLen);
}

bool is_ours(const char *name)
{
    return name != nullptr &&
           std::strncmp(name, kStockPrefix, kStockPrefixLen) == 0;
}

// Forget what vsitune knows of a /vsis3/ name (written, deleted, renamed).
void forget(const char *name)
{
    if (is_ours(name)) {
        vt__forget_name(vt__handler_backend(), name + kStockPrefixLen);
        vt__stream_forget(name + kStockPrefixLen, 0);
    }
}

void forget_prefix(const char *name)
{
    if (is_ours(name)) {
        vt__forget_prefix(vt__handler_backend(), name + kStockPrefixLen);
        vt__stream_forget(name + kStockPrefixLen, 1);
    }
}

// Before vsitune's reader answers a stat or an open of a /vsis3/ name:
// -1 when /vsis3_streaming/ asked about nothing yet, else whether vsitune
// already holds the object's size (1) or will fetch it (0).
int size_known(const char *name)
{
    uint64_t size;
    long long mtime;
    if (!vt__stream_any())
        return -1;
    return vt__object_peek(vt__handler_backend(), name + kStockPrefixLen, &size,
                           &mtime);
}

// After it: when the reader did not answer from what it held, the size it
// found (st: its stat's answer; NULL after an open: the object table's) is
// what GDAL's own /vsis3/ would have put in the cache /vsis3_streaming/
// answers from (streaming.h).
void note_learned(const char *name, int known_before, const VSIStatBufL *st)
{
    uint64_t size;
    long long mtime;
    if (known_before != 0)
        return;
    if (st)
        size = static_cast<uint64_t>(st->st_size);
    else if (!vt__object_peek(vt__handler_backend(), name + kStockPrefixLen,
                              &size, &mtime))
        return;
    vt__stream_learned(actual_url(g_stock, name).c_str(), size);
}

// The VSIE_ code matching a CPLE_ class, so that VSIToCPLError restores it.
int vsie_for(int cple)
{
    switch (cple) {
    case CPLE_AWSSignatureDoesNotMatch: return VSIE_AWSSignatureDoesNotMatch;
    case CPLE_AWSInvalidCredentials: return VSIE_AWSInvalidCredentials;
    case CPLE_AWSBucketNotFound: return VSIE_AWSBucketNotFound;
    case CPLE_AWSObjectNotFound: return VSIE_AWSObjectNotFound;
    case CPLE_AWSAccessDenied: return VSIE_AWSAccessDenied;
    case CPLE_AWSError: return VSIE_AWSError;
    case CPLE_HttpResponse: return VSIE_HttpError;
    default: return VSIE_FileError;
    }
}

// A read vsitune serves: not a directory-like name (a bucket, "prefix/").
// GDAL's Open gives those a handle without asking anything (its name has
// no last component to check), or "Filename should be of the form" for a
// bare bucket; reading the handle is GDAL's own, and cheap. What vsitune
// knows of "prefix" (a stat, a listing) must not change that answer.
bool is_object_read(const char *name, const char *access)
{
    return is_read_access(access) && !t_delegating && is_ours(name) &&
           !vt__policy_is_dir_like(name + kStockPrefixLen);
}

// A write handle of GDAL's own: the object exists (or changes) only once the
// upload completes at Close(), so vsitune forgets the name then too.
class WriteHandle final : public VSIVirtualHandle
{
    VSIVirtualHandle *inner_;
    std::string name_;

  public:
    WriteHandle(VSIVirtualHandle *inner, const char *name)
        : inner_(inner), name_(name)
    {
    }
    ~WriteHandle() override { WriteHandle::Close(); }
    WriteHandle(const WriteHandle &) = delete;
    WriteHandle &operator=(const WriteHandle &) = delete;

    int Seek(vsi_l_offset off, int whence) override
    {
        return inner_->Seek(off, whence);
    }
    vsi_l_offset Tell() override { return inner_->Tell(); }
    // ABI: 3.13's Read/Write take one size, earlier ones size and count.
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 13, 0)
    size_t Read(void *buf, size_t n) override { return inner_->Read(buf, n); }
    size_t Write(const void *buf, size_t n) override
    {
        return inner_->Write(buf, n);
    }
#else
    size_t Read(void *buf, size_t size, size_t count) override
    {
        return inner_->Read(buf, size, count);
    }
    size_t Write(const void *buf, size_t size, size_t count) override
    {
        return inner_->Write(buf, size, count);
    }
#endif
    // ABI: ClearErr/Error are pure virtual from 3.10, absent before.
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 10, 0)
    void ClearErr() override { inner_->ClearErr(); }
    int Error() override { return inner_->Error(); }
#endif
    // ABI: the virtual CancelCreation exists from 3.13.
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 13, 0)
    void CancelCreation() override { inner_->CancelCreation(); }
#endif
    int Eof() override { return inner_->Eof(); }
    int Flush() override { return inner_->Flush(); }
    int Truncate(vsi_l_offset size) override { return inner_->Truncate(size); }
    int Close() override
    {
        if (inner_ == nullptr)
            return 0;
        int ret;
        {
            Delegating d;  // the upload's own stats are GDAL's
            ret = inner_->Close();
            delete inner_;
            inner_ = nullptr;
        }
        forget(name_.c_str());
        return ret;
    }
};

VT_OPEN_RESULT wrap_write(VT_OPEN_RESULT h, const char *name)
{
    // ABI: VT_OPEN_RESULT's type (a unique_ptr from 3.13).
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 13, 0)
    if (!h)
        return h;
    return VSIVirtualHandleUniquePtr(new WriteHandle(h.release(), name));
#else
    return h ? new WriteHandle(h, name) : nullptr;
#endif
}

// Never instantiated: `this` is GDAL's handler object (see the top).
class Hooks
{
    VSIFilesystemHandler *self()
    {
        return reinterpret_cast<VSIFilesystemHandler *>(this);
    }
    // Call GDAL's own implementation of the method hooked at `slot`.
    template <typename Pmf, typename... A>
    auto orig(Pmf hook, A &&...args)
        -> decltype((this->*hook)(std::forward<A>(args)...))
    {
        (void)hook;
        return (this->*pmf_at<Pmf>(g_orig[slot_of_hook(
                    reinterpret_cast<void *>(rep_of(hook).ptr))]))(
            std::forward<A>(args)...);
    }
    static size_t slot_of_hook(void *code);

  public:
    VT_OPEN_RESULT Open(const char *name, const char *access, bool set_error,
                        CSLConstList options)
    {
        if (is_object_read(name, access)) {
            std::string rn = reader_name(name);
            // An error set before stays as GDAL would leave it
            int prior = VSIGetLastErrorNo();
            std::string prior_msg = prior ? VSIGetLastErrorMsg() : "";
            int known = size_known(name);
            vt__handler_open_asks_no_error(!set_error);
            VT_OPEN_RESULT h =
                g_reader->Open(rn.c_str(), access, set_error, options);
            vt__handler_open_asks_no_error(0);
            if (h)
                note_learned(name, known, nullptr);
            if (!h && set_error) {
                /* Replaces the plugin handler's "<name>: strerror" text; no
                 * error at all for a missing key, as stock GDAL. */
                int cls = 0;
                const char *why = vt__handler_open_error(&cls);
                if (why)
                    VSIError(vsie_for(cls), "%s", why);
                else if (prior)
                    VSIError(prior, "%s", prior_msg.c_str());
                else
                    VSIErrorReset();
            }
            return h;
        }
        // A write: the object changes only when the upload completes, at
        // the handle's Close(); what vsitune knows of the name (a 404, the
        // listing of its directory) stays true until then. A directory-like
        // name: GDAL's own answer (is_object_read).
        Delegating d;
        VT_OPEN_RESULT h = orig(&Hooks::Open, name, access, set_error, options);
        if (is_read_access(access))
            return h;
        return wrap_write(std::move(h), name);
    }
    int Stat(const char *name, VSIStatBufL *st, int flags)
    {
        // GDAL's own code (a delete, a rename, an upload) stats its names:
        // what vsitune knows answers without a request, as GDAL's cache
        // would have had it; else GDAL's own Stat.
        if (t_delegating && is_ours(name) &&
            vt__handler_stat_known(name + kStockPrefixLen, st))
            return 0;
        if (t_delegating || !is_ours(name))
            return orig(&Hooks::Stat, name, st, flags);
        int known = size_known(name);
        int ret = g_reader->Stat(reader_name(name).c_str(), st, flags);
        if (ret == 0 && VSI_ISREG(st->st_mode))
            note_learned(name, known, st);
        return ret;
    }
    char **ReadDirEx(const char *name, int max_files)
    {
        // GDAL's listing, kept as the sibling answer of the files there
        // (its own open would reuse it; handler.h)
        char **names = orig(&Hooks::ReadDirEx, name, max_files);
        if (!t_delegating && is_ours(name))
            vt__handler_note_read_dir(name + kStockPrefixLen, names,
                                      max_files);
        return names;
    }
    char **SiblingFiles(const char *name)
    {
        if (t_delegating || !is_ours(name))
            return orig(&Hooks::SiblingFiles, name);
        return g_reader->SiblingFiles(reader_name(name).c_str());
    }
    int Unlink(const char *name)
    {
        Delegating d;
        int ret = orig(&Hooks::Unlink, name);
        forget(name);
        return ret;
    }
    int *UnlinkBatch(CSLConstList files)
    {
        Delegating d;
        int *ret = orig(&Hooks::UnlinkBatch, files);
        for (CSLConstList p = files; p && *p; ++p)
            forget(*p);
        return ret;
    }
    int Mkdir(const char *name, long mode)
    {
        Delegating d;
        return orig(&Hooks::Mkdir, name, mode);
    }
    int Rmdir(const char *name)
    {
        Delegating d;
        return orig(&Hooks::Rmdir, name);
    }
    int RmdirRecursive(const char *name)
    {
        Delegating d;
        int ret = orig(&Hooks::RmdirRecursive, name);
        forget_prefix(name);
        return ret;
    }
    // ABI: 3.13's Rename takes a progress callback.
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 13, 0)
    int Rename(const char *from, const char *to, GDALProgressFunc progress,
               void *progress_data)
    {
        Delegating d;
        int ret = orig(&Hooks::Rename, from, to, progress, progress_data);
        forget(from);
        forget(to);
        return ret;
    }
#else
    int Rename(const char *from, const char *to)
    {
        Delegating d;
        int ret = orig(&Hooks::Rename, from, to);
        forget(from);
        forget(to);
        return ret;
    }
#endif
    bool Sync(const char *src, const char *dst, const char *const *options,
              GDALProgressFunc progress, void *progress_data, char ***outputs)
    {
        Delegating d;
        bool ret = orig(&Hooks::Sync, src, dst, options, progress,
                        progress_data, outputs);
        forget_prefix(dst);
        return ret;
    }
    // ABI: the virtuals CopyFile and MultipartUploadEnd exist from 3.10.
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 10, 0)
    int CopyFile(const char *src, const char *dst, VSILFILE *fp,
                 vsi_l_offset size, const char *const *options,
                 GDALProgressFunc progress, void *progress_data)
    {
        Delegating d;
        int ret = orig(&Hooks::CopyFile, src, dst, fp, size, options,
                       progress, progress_data);
        forget(dst);
        return ret;
    }
    bool MultipartUploadEnd(const char *name, const char *upload_id,
                            size_t nparts, const char *const *part_ids,
                            vsi_l_offset total, CSLConstList options)
    {
        Delegating d;
        bool ret = orig(&Hooks::MultipartUploadEnd, name, upload_id, nparts,
                        part_ids, total, options);
        forget(name);
        return ret;
    }
#endif
    // ABI: the virtual CreateOnlyVisibleAtCloseTime exists from 3.13.
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 13, 0)
    VSIVirtualHandleUniquePtr
    CreateOnlyVisibleAtCloseTime(const char *name, bool emulation_allowed,
                                 CSLConstList options)
    {
        Delegating d;
        return wrap_write(orig(&Hooks::CreateOnlyVisibleAtCloseTime, name,
                               emulation_allowed, options),
                          name);
    }
#endif
    // GDAL's internal curl class; slots found by the probe.
    void ClearCache()
    {
        orig(&Hooks::ClearCache);
        /* GDAL forgets its redirects, the failures it kept and the
         * credentials it fetched too (be->forget) */
        vt__forget_all(vt__handler_backend());
        vt__stream_clear(); /* GDAL's streaming handler forgot too */
    }
    void PartialClearCache(const char *prefix)
    {
        orig(&Hooks::PartialClearCache, prefix);
        forget_prefix(prefix);
    }
};
Redirect g_redirects[24];
size_t g_nredirects = 0;

size_t Hooks::slot_of_hook(void *code)
{
    for (size_t i = 0; i < g_nredirects; i++)
        if (g_redirects[i].code == code)
            return g_redirects[i].slot;
    std::abort();  // a hook without a slot: a bug in this file
}

void add(Redirect r)
{
    if (r.slot != SIZE_MAX && r.slot < g_nslots &&
        g_nredirects < sizeof(g_redirects) / sizeof(g_redirects[0]))
        g_redirects[g_nredirects++] = r;
}

}  // namespace

/* ---- GDAL's own /vsis3/ code, registered for handler.c (stock.h) -------- */

namespace {

int stock_stat(const char *path, VSIStatBufL *st, int flags)
{
    if (g_stock == nullptr) {
        errno = ENOENT;
        return -1;
    }
    std::string name = std::string(kStockPrefix) + path;
    typedef int (VSIFilesystemHandler::*StatFn)(const char *, VSIStatBufL *,
                                                int);
    size_t slot = vslot(static_cast<StatFn>(&VSIFilesystemHandler::Stat));
    // GDAL's own Stat, not the hook (the object may be redirected).
    typedef int (Hooks::*HookStat)(const char *, VSIStatBufL *, int);
    return (reinterpret_cast<Hooks *>(g_stock)->*pmf_at<HookStat>(
               g_orig[slot]))(name.c_str(), st, flags);
}

void stock_partial_clear(const char *path)
{
    if (g_stock == nullptr || g_slot_partial == SIZE_MAX)
        return;
    std::string name = std::string(kStockPrefix) + path;
    typedef void (Hooks::*PartialFn)(const char *);
    (reinterpret_cast<Hooks *>(g_stock)->*pmf_at<PartialFn>(
         g_orig[g_slot_partial]))(name.c_str());
}

char **stock_read_dir(const char *path, int max_files)
{
    if (g_stock == nullptr)
        return nullptr;
    std::string name = std::string(kStockPrefix) + path;
    return g_stock->ReadDirEx(name.c_str(), max_files);
}

}  // namespace

extern "C" int vt__takeover_delegating(void) { return t_delegating; }

extern "C" int vt__takeover_install(const VSIFilesystemPluginCallbacksStruct *cb,
                                    int takeover)
{
    if (g_reader != nullptr)
        return 0;  // idempotent
    VSIInstallPluginHandler(VT_READER_PREFIX, cb);
    g_reader = VSIFileManager::GetHandler(VT_READER_PREFIX);
    VSIFilesystemHandler *stock = VSIFileManager::GetHandler(kStockPrefix);
    // GetHandler falls back to the local-file handler for an unknown prefix.
    if (stock == nullptr ||
        stock == VSIFileManager::GetHandler("/vsitune-no-such-prefix/")) {
        CPLError(CE_Failure, CPLE_AppDefined,
                 "vsitune: GDAL's own /vsis3/ handler is not available "
                 "(GDAL built without curl?); vsitune stays out of the way");
        return -1;
    }
    g_stock = stock;
    g_orig = *reinterpret_cast<void ***>(stock);
    // handler.c reaches GDAL's own code only through these (stock.h),
    // takeover or not: g_orig is the object's own table either way.
    static const vt_stock_callbacks to_stock = {
        stock_stat, stock_read_dir, stock_partial_clear};
    vt__stock_set_callbacks(&to_stock);
    if (!takeover)
        return 0;

    // The object's most derived part must start at the VSIFilesystemHandler
    // part (single inheritance), or slot calls would need a this-adjustment.
    if (dynamic_cast<void *>(stock) != static_cast<void *>(stock) ||
        (g_nslots = readable_slots(g_orig)) < 8) {
        CPLError(CE_Warning, CPLE_NotSupported,
                 "vsitune: GDAL's /vsis3/ handler does not have the expected "
                 "C++ layout; vsitune is not active on /vsis3/ (read through "
                 "%s instead)",
                 VT_READER_PREFIX);
        return -1;
    }
    g_table = new void *[kPrefixWords + g_nslots];
    std::memcpy(g_table, g_orig - kPrefixWords,
                (kPrefixWords + g_nslots) * sizeof(void *));
    *reinterpret_cast<void ***>(stock) = table_slots();

    g_slot_partial = probe(table_slots(), g_orig, g_nslots,
                           [] { VSICurlPartialClearCache(kStockPrefix); });
    g_slot_clear =
        probe(table_slots(), g_orig, g_nslots, [] { VSICurlClearCache(); });

    add(redirect<Hooks, VT_OPEN_RESULT, const char *, const char *, bool,
                 CSLConstList>(&VSIFilesystemHandler::Open, &Hooks::Open));
    add(redirect(&VSIFilesystemHandler::Stat, &Hooks::Stat));
    add(redirect(&VSIFilesystemHandler::SiblingFiles, &Hooks::SiblingFiles));
    add(redirect(&VSIFilesystemHandler::ReadDirEx, &Hooks::ReadDirEx));
    add(redirect(&VSIFilesystemHandler::Unlink, &Hooks::Unlink));
    add(redirect(&VSIFilesystemHandler::UnlinkBatch, &Hooks::UnlinkBatch));
    add(redirect(&VSIFilesystemHandler::Mkdir, &Hooks::Mkdir));
    add(redirect(&VSIFilesystemHandler::Rmdir, &Hooks::Rmdir));
    add(redirect(&VSIFilesystemHandler::RmdirRecursive,
                 &Hooks::RmdirRecursive));
    add(redirect(&VSIFilesystemHandler::Rename, &Hooks::Rename));
    add(redirect(&VSIFilesystemHandler::Sync, &Hooks::Sync));
    // ABI: these slots exist only in the releases their hooks exist in.
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 10, 0)
    add(redirect(&VSIFilesystemHandler::CopyFile, &Hooks::CopyFile));
    add(redirect(&VSIFilesystemHandler::MultipartUploadEnd,
                 &Hooks::MultipartUploadEnd));
#endif
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 13, 0)
    add(redirect(&VSIFilesystemHandler::CreateOnlyVisibleAtCloseTime,
                 &Hooks::CreateOnlyVisibleAtCloseTime));
#endif
    if (g_slot_clear != SIZE_MAX && g_slot_partial != SIZE_MAX &&
        g_slot_clear != g_slot_partial) {
        add({g_slot_clear, reinterpret_cast<void *>(
                               rep_of(&Hooks::ClearCache).ptr)});
        add({g_slot_partial, reinterpret_cast<void *>(
                                 rep_of(&Hooks::PartialClearCache).ptr)});
    } else {
        CPLDebug("VSITUNE",
                 "ClearCache slots not found (probe: %zd, %zd): "
                 "VSICurlClearCache() will not clear vsitune's cache",
                 (ssize_t)g_slot_clear, (ssize_t)g_slot_partial);
    }
    for (size_t i = 0; i < g_nredirects; i++)
        table_slots()[g_redirects[i].slot] = g_redirects[i].code;
    install_streaming(stock_partial_clear);
    g_taken_over = true;
    CPLDebug("VSITUNE",
             "GDAL's /vsis3/ handler redirected (%zu slots, %zu hooks; "
             "ClearCache slot %zd, PartialClearCache slot %zd)",
             g_nslots, g_nredirects, (ssize_t)g_slot_clear,
             (ssize_t)g_slot_partial);
    return 0;
}
