/* driver.h: the VSITUNE GDAL driver (driver.cpp).
 *
 * A driver with no open function: it makes the plugin visible in
 * `gdalinfo --formats` / `--format VSITUNE`, carries the version, the GDAL
 * it was built for (and the one running it) and the live counters (metadata item "STATS"), and its
 * unload hook (run by GDALDestroy) stops the I/O engine. */
#ifndef VT_DRIVER_H
#define VT_DRIVER_H

#ifdef __cplusplus
extern "C" {
#endif

/* Register the driver `name`; prefix is where vsitune serves reads
 * ("/vsis3/" with the takeover, else "/vsitune/"); version is vsitune's,
 * built_for the GDAL release of the headers it was compiled with
 * (GDAL_RELEASE_NAME). on_unload runs at GDALDestroy. */
void vt__driver_register(const char *name, const char *prefix,
                         const char *version, const char *built_for,
                         void (*on_unload)(void));

#ifdef __cplusplus
}
#endif

#endif
