/* notice.h: a line for the user that is not an error.
 *
 * GDAL's CPLError has no "info" class: a CE_Warning changes the thread's last
 * error (class, number, message, counter), reaches every error handler and
 * shows as "Warning 1:" in every tool and as a warning in rasterio's log,
 * though nothing failed. vsitune's notices (a COG opened without its sidecars;
 * the shared cache given up) go through GDAL's debug channel instead, turned
 * on for that one line (a thread-local CPL_DEBUG, put back at once): the
 * default handler prints "VSITUNE: ..." on stderr (or CPL_LOG) whatever
 * CPL_DEBUG says, GDAL's error state is untouched, rasterio logs it at DEBUG.
 * A handler installed without debug messages does not get it (GDAL's choice
 * for that handler). */
#ifndef VT_NOTICE_H
#define VT_NOTICE_H

/* Say fmt once as a notice (printf-style). Any thread; no lock held
 * across GDAL's handler but GDAL's own. */
void vt__notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
