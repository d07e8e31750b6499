/* userhdr.h: the user's extra HTTP headers (GDAL_HTTP_HEADER_FILE, then
 * GDAL_HTTP_HEADERS), as GDAL 3.6 adds them to every request of its
 * network file systems, for every backend (userhdr.c). */
#ifndef VT_USERHDR_H
#define VT_USERHDR_H

/* User headers for path (path-specific values first where the running GDAL
 * reads them so: config.h vt__cfg_http_path): the lines of GDAL_HTTP_HEADER_FILE, then those of
 * GDAL_HTTP_HEADERS (split at "\r\n" when it has one, else at ',' outside
 * double quotes), each trimmed, in that order, as GDAL 3.6 adds them. A
 * header file that cannot be read gets GDAL's CPLError (CE_Failure,
 * CPLE_FileIO, "Cannot read %s") and is skipped. NULL-terminated malloc'd
 * array of malloc'd lines (free with vt__user_headers_free), NULL when
 * there are none. */
char **vt__user_headers(const char *path);
void vt__user_headers_free(char **h);

#endif
