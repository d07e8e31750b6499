// takeover.cpp: the hooks: what each redirected slot of GDAL's handler of a
// prefix vsitune serves (/vsis3/, /vsigs/, /vsiaz/, /vsicurl/) does instead
// (see takeover.h for what is redirected and why).
//
// The hooks are non-virtual member functions of an empty class `Hooks`
// with exactly the virtual's signature (enforced at compile time by
// vtable.h's redirect()), so the compiler produces the calling convention,
// including hidden return slots; `this` inside them is GDAL's handler
// object and no member of Hooks is ever touched. A hook finds its target
// (takeover_int.h's Target) by that object, and GDAL's own implementation
// by the slot it replaced. add_hooks says which slot leads to which hook;
// takeover_install.cpp copies the vtable and puts them in the copy.
//
// GDAL releases: every behaviour that differs by release is in
// gdal_release.c's table, chosen at run time. The `#if GDAL_VERSION_NUM`
// branches left here (and takeover_int.h's one) are the C++ ABI only (a
// method's signature, whether a virtual exists, the vtable slots), which
// must match the headers built against; each says which. plugin.c refuses a GDAL of another major.minor.
//
// Thread: the hooks run on GDAL's threads; add_hooks runs once per target,
// from vt__takeover_install (registration, before any I/O).
#include "gdal/takeover.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include <cpl_error.h>
#include <cpl_vsi_error.h>
#include <cpl_vsi_virtual.h>
#include <gdal_version.h>

extern "C" {
#include "backends/backend.h"
#include "gdal/handler.h"
#include "read/forget.h"
#include "read/object.h"
#include "read/policy.h"
#include "gdal/streaming.h"
}
#include "gdal/takeover_int.h"
#include "gdal/vtable.h"

using namespace vt__abi;
using namespace vt__takeover;

// The targets, filled by vt__takeover_install (takeover_install.cpp) at
// registration, on one thread; read by the hooks after.
namespace vt__takeover {
bool g_probing = false;
Target g_targets[kMaxTargets];
size_t g_ntargets = 0;
}  // namespace vt__takeover

namespace {

// The target whose GDAL handler object is fs (a hook's `this`).
Target &target_of(VSIFilesystemHandler *fs)
{
    for (size_t i = 0; i < g_ntargets; i++)
        if (g_targets[i].stock == fs)
            return g_targets[i];
    std::abort();  // a hook on an object not redirected: a bug in this file
}

thread_local int t_delegating = 0;

struct Delegating {
    Delegating() { ++t_delegating; }
    ~Delegating() { --t_delegating; }
    Delegating(const Delegating &) = delete;
    Delegating &operator=(const Delegating &) = delete;
};

/* ---- the hooks ---------------------------------------------------------- */

std::string reader_name(const Target &t, const char *name)
{
    return std::string(t.reader_prefix) + (name + t.prefix_len);
}

bool is_ours(const Target &t, const char *name)
{
    return name != nullptr && std::strncmp(name, t.prefix, t.prefix_len) == 0;
}

// Forget what vsitune knows of a name of t (written, deleted, renamed).
void forget(const Target &t, const char *name)
{
    if (is_ours(t, name)) {
        vt__forget_name(t.be, name + t.prefix_len);
        if (t.streaming)
            vt__stream_forget(name + t.prefix_len, 0);
    }
}

void forget_prefix(const Target &t, const char *name)
{
    if (is_ours(t, name)) {
        vt__forget_prefix(t.be, name + t.prefix_len);
        if (t.streaming)
            vt__stream_forget(name + t.prefix_len, 1);
    }
}

// Before vsitune's reader answers a stat or an open of a /vsis3/ name:
// -1 when /vsis3_streaming/ asked about nothing yet, else whether vsitune
// already holds the object's size (1) or will fetch it (0).
int size_known(const Target &t, const char *name)
{
    uint64_t size;
    long long mtime;
    if (!t.streaming || !vt__stream_any())
        return -1;
    return vt__object_peek(t.be, name + t.prefix_len, &size, &mtime);
}

// After it: when the reader did not answer from what it held, the size it
// found (st: its stat's answer; NULL after an open: the object table's) is
// what GDAL's own /vsis3/ would have put in the cache /vsis3_streaming/
// answers from (streaming.h).
void note_learned(const Target &t, const char *name, int known_before,
                  const VSIStatBufL *st)
{
    uint64_t size;
    long long mtime;
    if (known_before != 0)
        return;
    if (st)
        size = static_cast<uint64_t>(st->st_size);
    else if (!vt__object_peek(t.be, name + t.prefix_len, &size, &mtime))
        return;
    vt__stream_learned(actual_url(t.stock, name).c_str(), size);
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

// A name of t whose requests vsitune cannot make as GDAL would (backend.h's
// declines): GDAL's own handler serves it, stat, open and siblings.
bool declined(const Target &t, const char *name)
{
    return t.be->declines != nullptr && t.be->declines(name + t.prefix_len);
}

// A read vsitune serves: not a directory-like name (a bucket, "prefix/").
// GDAL's Open gives those a handle without asking anything (its name has
// no last component to check), or "Filename should be of the form" for a
// bare bucket; reading the handle is GDAL's own, and cheap. What vsitune
// knows of "prefix" (a stat, a listing) must not change that answer.
bool is_object_read(const Target &t, const char *name, const char *access)
{
    return is_read_access(access) && !t_delegating && is_ours(t, name) &&
           !vt__policy_is_dir_like(name + t.prefix_len) && !declined(t, name);
}

// A write handle of GDAL's own: the object exists (or changes) only once the
// upload completes at Close(), so vsitune forgets the name then too.
class WriteHandle final : public VSIVirtualHandle
{
    VSIVirtualHandle *inner_;
    const Target &t_;
    std::string name_;

  public:
    WriteHandle(VSIVirtualHandle *inner, const Target &t, const char *name)
        : inner_(inner), t_(t), name_(name)
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
        forget(t_, name_.c_str());
        return ret;
    }
};

VT_OPEN_RESULT wrap_write(VT_OPEN_RESULT h, const Target &t, const char *name)
{
    // ABI: VT_OPEN_RESULT's type (a unique_ptr from 3.13).
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 13, 0)
    if (!h)
        return h;
    return VSIVirtualHandleUniquePtr(new WriteHandle(h.release(), t, name));
#else
    return h ? new WriteHandle(h, t, name) : nullptr;
#endif
}

// Never instantiated: `this` is GDAL's handler object (see the top).
class Hooks
{
    VSIFilesystemHandler *self()
    {
        return reinterpret_cast<VSIFilesystemHandler *>(this);
    }
    Target &T() { return target_of(self()); }
    // Call GDAL's own implementation of the method hooked at `slot`.
    template <typename Pmf, typename... A>
    auto orig(Pmf hook, A &&...args)
        -> decltype((this->*hook)(std::forward<A>(args)...))
    {
        Target &t = T();
        return (this->*pmf_at<Pmf>(t.orig[slot_of_hook(
                    t, reinterpret_cast<void *>(rep_of(hook).ptr))]))(
            std::forward<A>(args)...);
    }
    static size_t slot_of_hook(const Target &t, void *code);

  public:
    VT_OPEN_RESULT Open(const char *name, const char *access, bool set_error,
                        CSLConstList options)
    {
        Target &t = T();
        if (is_object_read(t, name, access)) {
            std::string rn = reader_name(t, name);
            // An error set before stays as GDAL would leave it
            int prior = VSIGetLastErrorNo();
            std::string prior_msg = prior ? VSIGetLastErrorMsg() : "";
            int known = size_known(t, name);
            HeldErrors held(t.gdal_answers_misses);
            vt__handler_open_asks_no_error(!set_error);
            VT_OPEN_RESULT h =
                t.reader->Open(rn.c_str(), access, set_error, options);
            vt__handler_open_asks_no_error(0);
            if (h)
                note_learned(t, name, known, nullptr);
            if (!h && (set_error || t.gdal_answers_misses)) {
                /* Replaces the plugin handler's "<name>: strerror" text; no
                 * error at all for a missing key, as stock GDAL. */
                int cls = 0;
                const char *why = t.gdal_answers_misses
                                      ? nullptr
                                      : vt__handler_open_error(&cls);
                if (why)
                    VSIError(vsie_for(cls), "%s", why);
                else if (prior)
                    VSIError(prior, "%s", prior_msg.c_str());
                else
                    VSIErrorReset();
            }
            if (!h && t.gdal_answers_misses) {
                held.drop();
                Delegating d;
                return orig(&Hooks::Open, name, access, set_error, options);
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
        return wrap_write(std::move(h), t, name);
    }
    int Stat(const char *name, VSIStatBufL *st, int flags)
    {
        // GDAL's own code (a delete, a rename, an upload) stats its names:
        // what vsitune knows answers without a request, as GDAL's cache
        // would have had it; else GDAL's own Stat.
        Target &t = T();
        if (t_delegating && is_ours(t, name) &&
            vt__handler_stat_known(t.be, name + t.prefix_len, st))
            return 0;
        if (t_delegating || !is_ours(t, name) || declined(t, name))
            return orig(&Hooks::Stat, name, st, flags);
        int known = size_known(t, name);
        HeldErrors held(t.gdal_answers_misses);
        int ret = t.reader->Stat(reader_name(t, name).c_str(), st, flags);
        if (ret != 0 && t.gdal_answers_misses && vt__handler_stat_asked()) {
            held.drop();
            Delegating d;
            return orig(&Hooks::Stat, name, st, flags);
        }
        if (ret == 0 && VSI_ISREG(st->st_mode))
            note_learned(t, name, known, st);
        return ret;
    }
    char **ReadDirEx(const char *name, int max_files)
    {
        // GDAL's listing, kept as the sibling answer of the files there
        // (its own open would reuse it; handler.h)
        Target &t = T();
        char **names = orig(&Hooks::ReadDirEx, name, max_files);
        if (!t_delegating && is_ours(t, name))
            vt__handler_note_read_dir(t.be, name + t.prefix_len, names,
                                      max_files);
        return names;
    }
    char **SiblingFiles(const char *name)
    {
        Target &t = T();
        if (t_delegating || !is_ours(t, name) || declined(t, name))
            return orig(&Hooks::SiblingFiles, name);
        return t.reader->SiblingFiles(reader_name(t, name).c_str());
    }
    int Unlink(const char *name)
    {
        Delegating d;
        int ret = orig(&Hooks::Unlink, name);
        forget(T(), name);
        return ret;
    }
    int *UnlinkBatch(CSLConstList files)
    {
        Delegating d;
        int *ret = orig(&Hooks::UnlinkBatch, files);
        for (CSLConstList p = files; p && *p; ++p)
            forget(T(), *p);
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
        forget_prefix(T(), name);
        return ret;
    }
    // ABI: 3.13's Rename takes a progress callback.
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 13, 0)
    int Rename(const char *from, const char *to, GDALProgressFunc progress,
               void *progress_data)
    {
        Delegating d;
        int ret = orig(&Hooks::Rename, from, to, progress, progress_data);
        forget(T(), from);
        forget(T(), to);
        return ret;
    }
#else
    int Rename(const char *from, const char *to)
    {
        Delegating d;
        int ret = orig(&Hooks::Rename, from, to);
        forget(T(), from);
        forget(T(), to);
        return ret;
    }
#endif
    bool Sync(const char *src, const char *dst, const char *const *options,
              GDALProgressFunc progress, void *progress_data, char ***outputs)
    {
        Delegating d;
        bool ret = orig(&Hooks::Sync, src, dst, options, progress,
                        progress_data, outputs);
        forget_prefix(T(), dst);
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
        forget(T(), dst);
        return ret;
    }
    bool MultipartUploadEnd(const char *name, const char *upload_id,
                            size_t nparts, const char *const *part_ids,
                            vsi_l_offset total, CSLConstList options)
    {
        Delegating d;
        bool ret = orig(&Hooks::MultipartUploadEnd, name, upload_id, nparts,
                        part_ids, total, options);
        forget(T(), name);
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
                          T(), name);
    }
#endif
    // GDAL's internal curl class; slots found by the probe.
    void ClearCache()
    {
        orig(&Hooks::ClearCache);
        if (g_probing)
            return;  // another prefix's probe at load: nothing to forget
        /* GDAL forgets its redirects, the failures it kept and the
         * credentials it fetched too (be->forget) */
        Target &t = T();
        vt__forget_all(t.be);
        if (t.streaming)
            vt__stream_clear(); /* GDAL's streaming handler forgot too */
    }
    void PartialClearCache(const char *prefix)
    {
        orig(&Hooks::PartialClearCache, prefix);
        if (!g_probing)
            forget_prefix(T(), prefix);
    }
};
size_t Hooks::slot_of_hook(const Target &t, void *code)
{
    for (size_t i = 0; i < t.nredirects; i++)
        if (t.redirects[i].code == code)
            return t.redirects[i].slot;
    std::abort();  // a hook without a slot: a bug in this file
}

void add(Target &t, Redirect r)
{
    if (r.slot != SIZE_MAX && r.slot < t.nslots &&
        t.nredirects < sizeof(t.redirects) / sizeof(t.redirects[0]))
        t.redirects[t.nredirects++] = r;
}

}  // namespace

namespace vt__takeover {

void add_hooks(Target &t)
{
    add(t, redirect<Hooks, VT_OPEN_RESULT, const char *, const char *, bool,
                    CSLConstList>(&VSIFilesystemHandler::Open, &Hooks::Open));
    add(t, redirect(&VSIFilesystemHandler::Stat, &Hooks::Stat));
    add(t, redirect(&VSIFilesystemHandler::SiblingFiles, &Hooks::SiblingFiles));
    add(t, redirect(&VSIFilesystemHandler::ReadDirEx, &Hooks::ReadDirEx));
    add(t, redirect(&VSIFilesystemHandler::Unlink, &Hooks::Unlink));
    add(t, redirect(&VSIFilesystemHandler::UnlinkBatch, &Hooks::UnlinkBatch));
    add(t, redirect(&VSIFilesystemHandler::Mkdir, &Hooks::Mkdir));
    add(t, redirect(&VSIFilesystemHandler::Rmdir, &Hooks::Rmdir));
    add(t, redirect(&VSIFilesystemHandler::RmdirRecursive,
                    &Hooks::RmdirRecursive));
    add(t, redirect(&VSIFilesystemHandler::Rename, &Hooks::Rename));
    add(t, redirect(&VSIFilesystemHandler::Sync, &Hooks::Sync));
    // ABI: these slots exist only in the releases their hooks exist in.
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 10, 0)
    add(t, redirect(&VSIFilesystemHandler::CopyFile, &Hooks::CopyFile));
    add(t, redirect(&VSIFilesystemHandler::MultipartUploadEnd,
                    &Hooks::MultipartUploadEnd));
#endif
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 13, 0)
    add(t, redirect(&VSIFilesystemHandler::CreateOnlyVisibleAtCloseTime,
                    &Hooks::CreateOnlyVisibleAtCloseTime));
#endif
    if (t.slot_clear != SIZE_MAX && t.slot_partial != SIZE_MAX &&
        t.slot_clear != t.slot_partial) {
        add(t, {t.slot_clear, reinterpret_cast<void *>(
                                  rep_of(&Hooks::ClearCache).ptr)});
        add(t, {t.slot_partial, reinterpret_cast<void *>(
                                    rep_of(&Hooks::PartialClearCache).ptr)});
    } else {
        CPLDebug("VSITUNE",
                 "%s: ClearCache slots not found (probe: %zd, %zd): "
                 "VSICurlClearCache() will not clear vsitune's cache",
                 t.prefix, (ssize_t)t.slot_clear, (ssize_t)t.slot_partial);
    }
}

}  // namespace vt__takeover

extern "C" int vt__takeover_delegating(void) { return t_delegating; }

