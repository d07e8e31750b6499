/* plugin.c: the GDAL entry point of gdal_vsitune.so.
 *
 * GDAL loads gdal_vsitune.so from GDAL_DRIVER_PATH (or <libdir>/gdalplugins)
 * and calls GDALRegister_vsitune(), the only exported symbol. It installs the
 * vsitune handler on /vsis3/ (or on /vsitune/ with VSITUNE_TAKEOVER=NO, leaving
 * stock /vsis3/ alone), the same for /vsigs/, /vsiaz/ and /vsicurl/
 * (VSITUNE_TAKEOVER_GS, _AZ, _CURL, each YES by default; else on
 * /vsitune_gs/, /vsitune_az/, /vsitune_curl/ only), and registers a driver
 * named VSITUNE with no open
 * function: it shows in `gdalinfo --formats` and its unload hook stops the
 * I/O engine at GDALDestroy. Registration is idempotent (rasterio registers
 * drivers twice). GDAL_SKIP (or OGR_SKIP) naming VSITUNE turns the plugin
 * off: nothing is installed, /vsis3/ stays GDAL's own, and the bare driver
 * registered for GDAL's AutoSkipDrivers to remove (as it removes any skipped
 * driver, silently) is gone by the time GDALAllRegister returns. */
#include <string.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <gdal.h>

#include "base/config.h"
#include "http/engine.h"
#include "compat/gdal_release.h"
#include "gdal/handler.h"
#include "read/object.h"
#include "read/policy.h"
#include "gdal/driver.h"
#include "gdal/takeover.h"
#include "stats/stats.h"

#define VT_DRIVER_NAME "VSITUNE"

/* GDAL's C++ plugin handler ABI (VSIFilesystemHandler's vtable, used by
 * takeover.cpp) is that of the headers we were built against. The test
 * suite builds a copy that claims another release (tests/CMakeLists.txt:
 * -DVT_BUILT_MINOR=...) to see the guard below at work in a real GDAL. */
#define VT_BUILT_MAJOR GDAL_VERSION_MAJOR
#ifndef VT_BUILT_MINOR
#define VT_BUILT_MINOR GDAL_VERSION_MINOR
#endif

static void unload(void)
{
    vt__engine_shutdown();
}

/* The news lower layers report upward goes where this top layer says: the
 * engine's finished attempts and loop turns to the counters, and the
 * counters find the block cache the object table owns. Before anything can
 * read; idempotent. */
static void wire_layers(void)
{
    static const vt_engine_callbacks to_stats = {
        .on_attempt = vt__stats_attempt,
        .on_idle = vt__stats_idle,
    };

    vt__engine_set_callbacks(&to_stats);
    vt__stats_set_cache_source(vt__object_cache);
}

/* The other services vsitune serves besides S3: GDAL's prefix, vsitune's
 * reader for it, the knob that leaves the prefix to GDAL, and the prefix its
 * path-specific options are read under, taken over or not. */
static const struct more_backend {
    const vt_backend *be;
    const char *reader;
    enum vt_opt knob;
} g_more[] = {
    {&vt__backend_gs, "/vsitune_gs/", VT_OPT_TAKEOVER_GS},
    {&vt__backend_az, "/vsitune_az/", VT_OPT_TAKEOVER_AZ},
    {&vt__backend_curl, "/vsitune_curl/", VT_OPT_TAKEOVER_CURL},
};

/* Install each of g_more as /vsis3/ is (cb: a callbacks struct to fill). A
 * prefix that cannot be taken over stays GDAL's; its reader may still work. */
static void install_more(VSIFilesystemPluginCallbacksStruct *cb)
{
    size_t i;
    for (i = 0; i < sizeof(g_more) / sizeof(g_more[0]); i++) {
        const struct more_backend *m = &g_more[i];
        int takeover = vt__opt_choice(NULL, m->knob, NULL);
        const char *opts = takeover ? m->be->gdal_prefix : m->reader;
        if (vt__handler_fill_callbacks(cb, m->be, opts) != 0)
            continue;
        if (vt__takeover_install(m->be->gdal_prefix, m->reader, m->be, cb,
                                 takeover) != 0)
            opts = m->reader;
        if (opts == m->reader) /* the options of a name read there */
            (void)vt__handler_fill_callbacks(cb, m->be, m->reader);
        CPLDebug("VSITUNE", "vsitune serves %s reads on %s", m->be->name,
                 opts);
    }
}

__attribute__((visibility("default"))) void GDALRegister_vsitune(void);

void GDALRegister_vsitune(void)
{
    static int done;
    int runtime = vt__gdal_release_running();
    const char *prefix;
    int takeover;
    VSIFilesystemPluginCallbacksStruct *cb;

    if (GDALGetDriverByName(VT_DRIVER_NAME) != NULL)
        return;
    wire_layers();
    /* GDALAllRegister loads plugins first and applies GDAL_SKIP last: decide
     * here, before anything is installed, what AutoSkipDrivers will do. At
     * every registration: each GDALAllRegister skips again. */
    if (vt__policy_skipped(CPLGetConfigOption("GDAL_SKIP", NULL),
                           CPLGetConfigOption("OGR_SKIP", NULL),
                           VT_DRIVER_NAME)) {
        CPLDebug("VSITUNE", "vsitune %s not active: GDAL_SKIP/OGR_SKIP names "
                 "%s; /vsis3/ is GDAL's own", VT_VERSION, VT_DRIVER_NAME);
        if (vt__policy_gdal_supported(runtime, VT_BUILT_MAJOR, VT_BUILT_MINOR))
            vt__driver_register(VT_DRIVER_NAME, "", VT_VERSION,
                                GDAL_RELEASE_NAME, NULL);
        return;
    }
    if (done)
        return;
    done = 1;
    if (!vt__policy_gdal_supported(runtime, VT_BUILT_MAJOR, VT_BUILT_MINOR)) {
        CPLError(CE_Warning, CPLE_NotSupported,
                 "vsitune %s was built for GDAL %d.%d and supports only that "
                 "release (>= 3.6); this process runs GDAL %s. vsitune is not "
                 "active: /vsis3/ is GDAL's own.",
                 VT_VERSION, VT_BUILT_MAJOR, VT_BUILT_MINOR,
                 GDALVersionInfo("RELEASE_NAME"));
        return;
    }
    /* the rules of this GDAL release, chosen once (gdal_release.h) */
    CPLDebug("VSITUNE", "GDAL %d: the rules of GDAL %s", runtime,
             vt__gdal_release()->name);
    takeover = vt__opt_choice(NULL, VT_OPT_TAKEOVER, NULL);
    cb = VSIAllocFilesystemPluginCallbacksStruct();
    if (cb == NULL)
        return;
    /* the handler serves S3's names, on /vsis3/ or /vsitune/; its options
     * under the process prefix (below) */
    vt__handler_fill_callbacks(cb, &vt__backend_s3, NULL);
    if (vt__takeover_install(vt__backend_s3.gdal_prefix, VT_READER_PREFIX,
                             &vt__backend_s3, cb, takeover) != 0)
        takeover = 0; /* /vsis3/ stays GDAL's; /vsitune/ may still work */
    prefix = takeover ? "/vsis3/" : VT_READER_PREFIX;
    vt__cfg_set_prefix(prefix); /* path-specific options are under it */
    install_more(cb);
    vt__driver_register(VT_DRIVER_NAME, prefix, VT_VERSION, GDAL_RELEASE_NAME,
                        unload);
    VSIFreeFilesystemPluginCallbacksStruct(cb); /* GDAL keeps a copy */
    vt__stats_install_exit_dump();
    CPLDebug("VSITUNE", "vsitune %s active on %s (GDAL %s)", VT_VERSION,
             prefix, GDALVersionInfo("RELEASE_NAME"));
}
