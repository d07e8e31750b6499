// router.cpp: the one C++ file of vsitune (see router.h for why it exists).
//
// VtRouter sits on the prefix and forwards each call either to the vsitune
// reader (the VSIPluginFilesystemHandler that VSIInstallPluginHandler built
// from our C callbacks) or to GDAL's own S3 handler. Both are owned by
// GDAL's VSIFileManager for the life of the process; so is the router.
#include "router.h"

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include <cpl_error.h>
#include <cpl_vsi_error.h>
#include <cpl_vsi_virtual.h>
#include <gdal_priv.h>

extern "C" {
#include "handler.h"
#include "object.h"
#include "stats.h"
}

namespace {

const char *const kStockPrefix = "/vsis3/";

VSIFilesystemHandler *g_stock = nullptr;  // GDAL's own /vsis3/ handler
void (*g_on_unload)(void) = nullptr;

void unload_driver(GDALDriver *)
{
    if (g_on_unload)
        g_on_unload();
}

// Set while a call runs inside GDAL's own handler on this thread. GDAL's
// Unlink/Rename/Sync/write paths stat their own names through VSIStatL, which
// lands back on the router: those stats are GDAL's business, so they go to
// GDAL's handler too, not to vsitune's "not found without a request" policy.
thread_local int t_delegating = 0;

struct Delegating {
    Delegating() { ++t_delegating; }
    ~Delegating() { --t_delegating; }
    Delegating(const Delegating &) = delete;
    Delegating &operator=(const Delegating &) = delete;
};

// The VSIE_ code matching a CPLE_ class, so VSIToCPLError restores it.
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

bool is_read_access(const char *access)
{
    return access == nullptr || std::strpbrk(access, "wa+") == nullptr;
}

// A write handle of GDAL's own: the object exists (or changes) only once the
// upload completes at Close(), so vsitune forgets what it knew of the name
// then, not only when the handle was opened.
class VtWriteHandle final : public VSIVirtualHandle
{
    VSIVirtualHandle *inner_;
    std::string path_;  // "bucket/key"

  public:
    VtWriteHandle(VSIVirtualHandle *inner, std::string path)
        : inner_(inner), path_(std::move(path))
    {
    }
    ~VtWriteHandle() override
    {
        VtWriteHandle::Close();
    }
    VtWriteHandle(const VtWriteHandle &) = delete;
    VtWriteHandle &operator=(const VtWriteHandle &) = delete;

    int Seek(vsi_l_offset off, int whence) override
    {
        return inner_->Seek(off, whence);
    }
    vsi_l_offset Tell() override { return inner_->Tell(); }
    size_t Read(void *buf, size_t size, size_t count) override
    {
        return inner_->Read(buf, size, count);
    }
    size_t Write(const void *buf, size_t size, size_t count) override
    {
        return inner_->Write(buf, size, count);
    }
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
        vt__object_forget(path_.c_str());
        return ret;
    }
};

class VtRouter final : public VSIFilesystemHandler
{
    std::string prefix_;
    VSIFilesystemHandler *reader_;
    VSIFilesystemHandler *stock_;

    // "/vsitune/b/k" -> "/vsis3/b/k" for GDAL's handler.
    std::string stock_name(const char *name) const
    {
        if (prefix_ == kStockPrefix)
            return name;
        return std::string(kStockPrefix) + (name + prefix_.size());
    }
    // The object table knows "b/k": forget it when it is written or removed.
    void forget(const char *name) const
    {
        if (std::strncmp(name, prefix_.c_str(), prefix_.size()) == 0)
            vt__object_forget(name + prefix_.size());
    }

  public:
    VtRouter(const char *prefix, VSIFilesystemHandler *reader,
             VSIFilesystemHandler *stock)
        : prefix_(prefix), reader_(reader), stock_(stock)
    {
    }
    // The reader was taken out of GDAL's table, so it is ours to delete when
    // GDAL's file manager deletes the router. GDAL's own handler stays alive
    // (g_stock still points at it) until the process ends.
    ~VtRouter() override { delete reader_; }
    VtRouter(const VtRouter &) = delete;
    VtRouter &operator=(const VtRouter &) = delete;

    VSIVirtualHandle *Open(const char *name, const char *access,
                           bool set_error, CSLConstList options) override
    {
        if (is_read_access(access)) {
            VSIVirtualHandle *h = reader_->Open(name, access, set_error, options);
            int cls = 0;
            const char *why = h ? nullptr : vt__handler_open_error(&cls);
            if (why && set_error)
                VSIError(vsie_for(cls), "%s", why);  // replaces strerror text
            return h;
        }
        Delegating d;
        forget(name);
        VSIVirtualHandle *h = stock_->Open(stock_name(name).c_str(), access,
                                           set_error, options);
        if (h == nullptr ||
            std::strncmp(name, prefix_.c_str(), prefix_.size()) != 0)
            return h;
        return new VtWriteHandle(h, name + prefix_.size());
    }
    int Stat(const char *name, VSIStatBufL *st, int flags) override
    {
        if (t_delegating)
            return stock_->Stat(stock_name(name).c_str(), st, flags);
        return reader_->Stat(name, st, flags);
    }
    char **SiblingFiles(const char *name) override
    {
        return reader_->SiblingFiles(name);
    }
    int HasOptimizedReadMultiRange(const char *) override { return TRUE; }
    bool IsLocal(const char *) override { return false; }
    bool SupportsRead(const char *) override { return true; }

    // Everything else is GDAL's.
    int Unlink(const char *name) override
    {
        Delegating d;
        int ret = stock_->Unlink(stock_name(name).c_str());
        forget(name);
        return ret;
    }
    int *UnlinkBatch(CSLConstList files) override
    {
        Delegating d;
        int *ret = stock_->UnlinkBatch(files);
        for (CSLConstList p = files; p && *p; ++p)
            forget(*p);
        return ret;
    }
    int Mkdir(const char *name, long mode) override
    {
        Delegating d;
        return stock_->Mkdir(stock_name(name).c_str(), mode);
    }
    int Rmdir(const char *name) override
    {
        Delegating d;
        return stock_->Rmdir(stock_name(name).c_str());
    }
    int RmdirRecursive(const char *name) override
    {
        Delegating d;
        return stock_->RmdirRecursive(stock_name(name).c_str());
    }
    char **ReadDirEx(const char *name, int max_files) override
    {
        Delegating d;
        return stock_->ReadDirEx(stock_name(name).c_str(), max_files);
    }
    char **ReadDir(const char *name) override { return ReadDirEx(name, 0); }
    VSIDIR *OpenDir(const char *name, int depth,
                    const char *const *options) override
    {
        Delegating d;
        return stock_->OpenDir(stock_name(name).c_str(), depth, options);
    }
    int Rename(const char *from, const char *to) override
    {
        Delegating d;
        int ret =
            stock_->Rename(stock_name(from).c_str(), stock_name(to).c_str());
        forget(from);
        forget(to);
        return ret;
    }
    int IsCaseSensitive(const char *name) override
    {
        return stock_->IsCaseSensitive(name);
    }
    GIntBig GetDiskFreeSpace(const char *name) override
    {
        return stock_->GetDiskFreeSpace(name);
    }
    int SupportsSparseFiles(const char *name) override
    {
        return stock_->SupportsSparseFiles(name);
    }
    const char *GetActualURL(const char *name) override
    {
        return stock_->GetActualURL(stock_name(name).c_str());
    }
    const char *GetOptions() override { return stock_->GetOptions(); }
    char *GetSignedURL(const char *name, CSLConstList options) override
    {
        return stock_->GetSignedURL(stock_name(name).c_str(), options);
    }
    bool Sync(const char *src, const char *dst, const char *const *options,
              GDALProgressFunc progress, void *progress_data,
              char ***outputs) override
    {
        Delegating d;
        bool ret =
            stock_->Sync(src, dst, options, progress, progress_data, outputs);
        forget(dst);
        return ret;
    }
    char **GetFileMetadata(const char *name, const char *domain,
                           CSLConstList options) override
    {
        Delegating d;
        return stock_->GetFileMetadata(stock_name(name).c_str(), domain,
                                       options);
    }
    bool SetFileMetadata(const char *name, CSLConstList md, const char *domain,
                         CSLConstList options) override
    {
        Delegating d;
        return stock_->SetFileMetadata(stock_name(name).c_str(), md, domain,
                                       options);
    }
    bool AbortPendingUploads(const char *name) override
    {
        Delegating d;
        return stock_->AbortPendingUploads(stock_name(name).c_str());
    }
    std::string GetStreamingFilename(const std::string &name) const override
    {
        return stock_->GetStreamingFilename(name);
    }
    bool SupportsSequentialWrite(const char *name, bool tmp) override
    {
        return stock_->SupportsSequentialWrite(stock_name(name).c_str(), tmp);
    }
    bool SupportsRandomWrite(const char *name, bool tmp) override
    {
        return stock_->SupportsRandomWrite(stock_name(name).c_str(), tmp);
    }
};

// GetHandler falls back to the local-file handler for an unknown prefix:
// make sure we got the real /vsis3/ one.
VSIFilesystemHandler *find_stock()
{
    VSIFilesystemHandler *h = VSIFileManager::GetHandler(kStockPrefix);
    if (h == VSIFileManager::GetHandler("/vsitune-no-such-prefix/"))
        return nullptr;
    if (dynamic_cast<VtRouter *>(h) != nullptr)
        return g_stock;  // already taken over
    return h;
}

}  // namespace

extern "C" int vt__router_install(const char *prefix,
                                  const VSIFilesystemPluginCallbacksStruct *cb)
{
    VSIFilesystemHandler *stock = find_stock();
    if (stock == nullptr) {
        CPLError(CE_Failure, CPLE_AppDefined,
                 "vsitune: GDAL's own /vsis3/ handler is not available "
                 "(GDAL built without curl?); vsitune stays out of the way");
        return -1;
    }
    g_stock = stock;
    if (dynamic_cast<VtRouter *>(VSIFileManager::GetHandler(prefix)))
        return 0;  // idempotent: already installed on this prefix
    // Let GDAL build its plugin handler from our callbacks, take it back,
    // and put the router in its place.
    VSIInstallPluginHandler(prefix, cb);
    VSIFilesystemHandler *reader = VSIFileManager::GetHandler(prefix);
    VSIFileManager::InstallHandler(prefix, new VtRouter(prefix, reader, stock));
    return 0;
}

extern "C" int vt__stock_stat(const char *path, VSIStatBufL *st, int flags)
{
    if (g_stock == nullptr) {
        errno = ENOENT;
        return -1;
    }
    std::string name = std::string(kStockPrefix) + path;
    return g_stock->Stat(name.c_str(), st, flags);
}

extern "C" char **vt__stock_read_dir(const char *path, int max_files)
{
    if (g_stock == nullptr)
        return nullptr;
    std::string name = std::string(kStockPrefix) + path;
    return g_stock->ReadDirEx(name.c_str(), max_files);
}

namespace {
// The VSITUNE driver: no open function; its "STATS" metadata item is live.
class VtDriver final : public GDALDriver
{
    std::string stats_;

  public:
    const char *GetMetadataItem(const char *name, const char *domain) override
    {
        if (name && EQUAL(name, "STATS") && (!domain || !*domain)) {
            char buf[VT_STATS_JSON_MAX];
            vt__stats_json(buf, sizeof(buf));
            stats_ = buf;  // lives until the next call, as GDAL's items do
            return stats_.c_str();
        }
        return GDALDriver::GetMetadataItem(name, domain);
    }
};
}  // namespace

extern "C" void vt__router_register_driver(const char *name, const char *prefix,
                                           const char *version,
                                           void (*on_unload)(void))
{
    GDALDriver *drv = new VtDriver();
    drv->SetDescription(name);
    drv->SetMetadataItem(GDAL_DCAP_RASTER, "YES");  // else GDAL warns at load
    drv->SetMetadataItem(GDAL_DMD_LONGNAME,
                         "vsitune: fewer requests for /vsis3/ reads");
    drv->SetMetadataItem("VSITUNE_VERSION", version);
    drv->SetMetadataItem("VSITUNE_PREFIX", prefix);
    g_on_unload = on_unload;
    drv->pfnUnloadDriver = unload_driver;
    GetGDALDriverManager()->RegisterDriver(drv);
}
