// driver.cpp: the VSITUNE GDAL driver (see driver.h).
#include "gdal/driver.h"

#include <string>

#include <gdal_priv.h>

extern "C" {
#include "stats/stats.h"
}

namespace {

void (*g_on_unload)(void) = nullptr;

void unload_driver(GDALDriver *)
{
    if (g_on_unload)
        g_on_unload();
}

// Its "STATS" metadata item is computed at each call.
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

extern "C" void vt__driver_register(const char *name, const char *prefix,
                                    const char *version,
                                    const char *built_for,
                                    void (*on_unload)(void))
{
    GDALDriver *drv = new VtDriver();
    drv->SetDescription(name);
    drv->SetMetadataItem(GDAL_DCAP_RASTER, "YES");  // else GDAL warns at load
    // The long name is what `gdalinfo --formats` lists: version and GDAL in it.
    std::string longname = std::string("vsitune ") + version +
                           " (built for GDAL " + built_for +
                           "): fewer requests for " + prefix + " reads";
    drv->SetMetadataItem(GDAL_DMD_LONGNAME, longname.c_str());
    // `gdalinfo --format VSITUNE` prints these under "Other metadata items".
    drv->SetMetadataItem("VSITUNE_VERSION", version);
    drv->SetMetadataItem("VSITUNE_BUILT_FOR_GDAL", built_for);
    drv->SetMetadataItem("VSITUNE_RUNNING_GDAL",
                         GDALVersionInfo("RELEASE_NAME"));
    drv->SetMetadataItem("VSITUNE_PREFIX", prefix);
    g_on_unload = on_unload;
    drv->pfnUnloadDriver = unload_driver;
    GetGDALDriverManager()->RegisterDriver(drv);
}
