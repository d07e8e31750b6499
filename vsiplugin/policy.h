/* policy.h: what vsitune answers without asking the server.
 *
 * GDAL's open path probes for sidecars (.aux.xml, .ovr, .msk, .IMD, ...)
 * and lists the prefix to find them. For a self-contained format (a COG)
 * none exist, so vsitune answers the sibling question with "no siblings"
 * and answers stat() of a name whose extension is not allowed with "not
 * found", both without a request. Pure: options come in as strings. */
#ifndef VT_POLICY_H
#define VT_POLICY_H

/* Default allowed extensions (VSITUNE_ALLOWED_EXTENSIONS overrides, then
 * GDAL's CPL_VSIL_CURL_ALLOWED_EXTENSIONS when the user set it). */
#define VT_DEFAULT_ALLOWED_EXTENSIONS                                         \
    ".tif,.tiff,.gtiff,.cog,.vrt,.ovr,.jp2,.j2k,.jpx,.nc,.h5,.hdf5,.hdf,"    \
    ".he5,.grib,.grib2,.grb,.grb2,.img,.gpkg,.fgb,.parquet,.geoparquet,"     \
    ".json,.geojson,.pmtiles,.mbtiles,.png,.jpg,.jpeg,.webp,.zip,.gz,.tar,"  \
    ".mrf,.idx,.lrc,.ntf,.nitf,.kea,.xyz,.asc,.zarr,.csv"

/* Formats whose datasets are one object: no sidecar lookup is needed. */
#define VT_DEFAULT_NO_SIBLING_EXTENSIONS                                      \
    ".tif,.tiff,.gtiff,.cog,.vrt,.jp2,.j2k,.jpx,.nc,.h5,.hdf5,.he5,.gpkg,"   \
    ".fgb,.parquet,.geoparquet,.json,.geojson,.pmtiles,.mbtiles,.zarr,.grib2,.grb2"

/* 1 when name ends (case-insensitively) with one of the comma-separated
 * extensions of list. A list entry "{noext}" matches a last path component
 * without a dot, as in GDAL. An empty or NULL list allows everything. */
int vt__policy_ext_in(const char *name, const char *list);

/* 1 when the name is a directory-like path ("bucket", "bucket/",
 * "bucket/prefix/"): such stats are delegated, never answered here. */
int vt__policy_is_dir_like(const char *path);

/* 1 when vsitune may run under the GDAL whose GDAL_VERSION_NUM is
 * `runtime` (e.g. 3060200): the same major.minor as the headers it was built
 * against (takeover.cpp depends on GDAL's C++ ABI), and at least 3.6. */
int vt__policy_gdal_supported(int runtime, int built_major, int built_minor);

#endif
