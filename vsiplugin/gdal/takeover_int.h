// takeover_int.h: what the takeover's files share: the C++ ABI of Open's
// result, and the two questions both kinds of hook (takeover.cpp's,
// takeover_stream.cpp's) ask of a name (its URL in GDAL's cache, whether an
// access mode reads); the targets, which takeover_install.cpp fills and
// takeover.cpp's hooks read, and the hooks' slots (add_hooks).
#ifndef VT_TAKEOVER_INT_H
#define VT_TAKEOVER_INT_H

#include <cstring>
#include <string>
#include <vector>

#include <cpl_error.h>
#include <cpl_vsi_error.h>
#include <cpl_vsi_virtual.h>
#include <gdal_version.h>

#include "gdal/vtable.h"

struct vt_backend; /* backends/backend.h */

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

// What this thread's CPLErrors say while a HeldErrors is alive (hold: 1),
// kept back (GDAL's error handler stack is per thread): replay() says them
// as they were said, drop() forgets them and puts the last error and the
// last VSI error (GDAL's code words a failure by whether one is set) back
// as they were before. A call vsitune answers first and GDAL answers when vsitune
// could not (/vsicurl/'s failed open or stat) must leave only GDAL's words.
class HeldErrors
{
    struct Said {
        CPLErr cls;
        CPLErrorNum no;
        std::string msg;
    };
    std::vector<Said> said_;
    bool holding_ = false;
    CPLErr last_cls_ = CE_None;
    CPLErrorNum last_no_ = CPLE_None;
    std::string last_msg_;
    int last_vsi_ = 0;
    std::string last_vsi_msg_;

    static void CPL_STDCALL hold_one(CPLErr cls, CPLErrorNum no,
                                     const char *msg)
    {
        auto *self = static_cast<HeldErrors *>(CPLGetErrorHandlerUserData());
        self->said_.push_back({cls, no, msg ? msg : ""});
    }
    // A debug line arrives as "CATEGORY: text", and goes out so again.
    static void say(const Said &e)
    {
        if (e.cls != CE_Debug) {
            CPLError(e.cls, e.no, "%s", e.msg.c_str());
            return;
        }
        size_t colon = e.msg.find(": ");
        if (colon == std::string::npos)
            CPLDebug("", "%s", e.msg.c_str());
        else
            CPLDebug(e.msg.substr(0, colon).c_str(), "%s",
                     e.msg.c_str() + colon + 2);
    }
    void stop()
    {
        if (holding_)
            CPLPopErrorHandler();
        holding_ = false;
    }

  public:
    explicit HeldErrors(bool hold)
    {
        if (!hold)
            return;
        last_cls_ = CPLGetLastErrorType();
        last_no_ = CPLGetLastErrorNo();
        last_msg_ = CPLGetLastErrorMsg();
        last_vsi_ = VSIGetLastErrorNo();
        last_vsi_msg_ = last_vsi_ ? VSIGetLastErrorMsg() : "";
        CPLPushErrorHandlerEx(hold_one, this);
        holding_ = true;
    }
    ~HeldErrors() { replay(); }
    HeldErrors(const HeldErrors &) = delete;
    HeldErrors &operator=(const HeldErrors &) = delete;

    void replay()
    {
        stop();
        for (const Said &e : said_)
            say(e);
        said_.clear();
    }
    void drop()
    {
        bool held = holding_;
        stop();
        for (const Said &e : said_) // the debug lines still say what it did
            if (e.cls == CE_Debug)
                say(e);
        said_.clear();
        if (!held)
            return;
        CPLErrorSetState(last_cls_, last_no_, last_msg_.c_str());
        if (last_vsi_)
            VSIError(last_vsi_, "%s", last_vsi_msg_.c_str());
        else
            VSIErrorReset();
    }
};

// One GDAL prefix vsitune serves: GDAL's own handler object there, its own
// vtable and our copy, the slots redirected, and vsitune's reader for it.
// Filled by vt__takeover_install (registration, one thread), read after.
struct Target {
    const char *prefix = nullptr;         // GDAL's: "/vsis3/"
    size_t prefix_len = 0;
    const char *reader_prefix = nullptr;  // vsitune's reader: "/vsitune/"
    const vt_backend *be = nullptr;       // the service its names are of
    VSIFilesystemHandler *stock = nullptr;   // GDAL's own handler
    VSIFilesystemHandler *reader = nullptr;  // vsitune's reader
    void **orig = nullptr;   // the stock object's own vtable
    void **table = nullptr;  // its copy: kPrefixWords + slots, never freed
    size_t nslots = 0;
    size_t slot_clear = SIZE_MAX, slot_partial = SIZE_MAX;
    vt__abi::Redirect redirects[24];
    size_t nredirects = 0;
    bool streaming = false;  // /vsis3/: its /vsis3_streaming/ twin
    // No list (/vsicurl/: GDAL parses HTML indexes): a name vsitune finds no
    // object for (a directory, absent, refused: GDAL's listing, HEAD, words)
    // is GDAL's to answer; the hooks ask GDAL then.
    bool gdal_answers_misses = false;

    void **table_slots() { return table + vt__abi::kPrefixWords; }
};

const size_t kMaxTargets = 4;
// Defined in takeover.cpp (the hooks read them, so that calls go one way:
// takeover_install.cpp -> takeover.cpp). g_probing: true while
// takeover_install.cpp probes a prefix's cache slots: GDAL's
// VSICurlClearCache() then reaches every curl handler, including prefixes
// taken over before; their hooks must not forget what vsitune knows (with
// the shared cache on, that would drop the host's objects at every process
// start).
extern bool g_probing;
extern Target g_targets[kMaxTargets];
extern size_t g_ntargets;

// Append to t.redirects every hooked virtual's slot and its hook
// (takeover.cpp), the ClearCache pair when the probe found both slots
// (t.slot_clear, t.slot_partial); t.nslots bounds the slots. From
// vt__takeover_install, after the probe, before the copy is filled.
void add_hooks(Target &t);

// Redirect GDAL's /vsis3_streaming/ handler's Stat and read Open
// (takeover_stream.cpp); from vt__takeover_install, once. A read open
// calls stock_partial_clear("bucket/key"): GDAL's /vsis3/ PartialClearCache,
// which takeover_install.cpp registers (stock.h); never NULL.
void install_streaming(void (*stock_partial_clear)(const char *path));

}  // namespace vt__takeover

#endif
