/* userhdr.h: the user's extra HTTP headers (GDAL_HTTP_HEADER_FILE, then
 * GDAL_HTTP_HEADERS), as GDAL 3.6 adds them to every request of its
 * network file systems, for every backend. The reader lives in
 * backends/s3/s3_hdr.c today; this is the one door other backends reach it
 * through, so that moving it here later changes no caller. */
#ifndef VT_USERHDR_H
#define VT_USERHDR_H

/* NULL-terminated malloc'd array of trimmed "Name: value" lines for path
 * (free with vt__user_headers_free), NULL when there are none. A header
 * file that cannot be read gets GDAL's CPLError ("Cannot read %s"). */
char **vt__user_headers(const char *path);
void vt__user_headers_free(char **h);

#endif
