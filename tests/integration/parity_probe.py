#!/usr/bin/python3
"""parity_probe.py: ask GDAL things and print what it answered, as JSON. Run by the parity
suite (parity.py) as one process per side (stock GDAL, or GDAL with the plugin loaded),
with the environment already set: GDAL loads plugins at import, so GDAL_DRIVER_PATH must be
in place before this program starts.

Protocol: one JSON list of probes per line on stdin; one JSON line per list on stdout
(the real stdout; anything GDAL or a driver prints goes to stderr):
    [{"op": "stat", "path": "/vsis3/b/k"}, {"op": "raster", "path": ...}, ...]
 -> {"results": [{"op": "stat", "value": ..., "errors": [[class, number, message], ...]}, ...]}
A probe never raises: a Python exception becomes {"exception": "..."} in its result.
The ops are the GDAL calls a user makes; see OPS at the bottom. Values carry only what GDAL
returned (no timing, no request counts: the lab's log has those).
"""

import hashlib
import json
import os
import stat as pystat
import sys

OUT = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr

from osgeo import gdal, ogr, osr  # noqa: E402

# In newer GDAL (3.10 and 3.13 here) the three modules share one exception switch (the
# last call wins), so
# all three are off: GDAL's own return values and CPLErrors are what is compared.
gdal.DontUseExceptions()
ogr.DontUseExceptions()
osr.DontUseExceptions()

ERRORS = []


def _handler(cls, number, msg):
    if cls >= gdal.CE_Warning:
        ERRORS.append([int(cls), int(number), msg])


gdal.PushErrorHandler(_handler)


def sha(b):
    return hashlib.sha256(b).hexdigest()[:24] if b is not None else None


def _stat_dict(st):
    if st is None:
        return None
    mode = st.mode
    return {"size": st.size, "mode": oct(mode), "isdir": bool(pystat.S_ISDIR(mode)),
            "isreg": bool(pystat.S_ISREG(mode)), "mtime": st.mtime}


STAT_FLAGS = {"exists": gdal.VSI_STAT_EXISTS_FLAG, "nature": gdal.VSI_STAT_NATURE_FLAG,
              "size": gdal.VSI_STAT_SIZE_FLAG, "set_error": gdal.VSI_STAT_SET_ERROR_FLAG}


def op_stat(p):
    """VSIStatL (flags: a list of STAT_FLAGS names). With "set_error", also the VSI
    error GDAL set: [VSIGetLastErrorNo, VSIGetLastErrorMsg]."""
    flags = 0
    for f in p.get("flags") or []:
        flags |= STAT_FLAGS[f]
    gdal.VSIErrorReset()
    st = gdal.VSIStatL(p["path"]) if not flags else gdal.VSIStatL(p["path"], flags)
    d = _stat_dict(st)
    if "set_error" in (p.get("flags") or []):
        return {"stat": d, "vsi_error": [gdal.VSIGetLastErrorNo(), gdal.VSIGetLastErrorMsg()]}
    return d


def op_stat_many(p):
    """VSIStatL of several paths (a case's files and its names that must not exist);
    "fields" keeps only some of each answer (None stays None: not found)."""
    out = {}
    for path in p["paths"]:
        st = op_stat({"path": path, "flags": p.get("flags")})
        if st is not None and p.get("fields"):
            st = {k: st[k] for k in p["fields"]}
        out[path] = st
    return out


def op_readdir(p):
    r = gdal.ReadDir(p["path"], p.get("max", 0)) if p.get("max") else gdal.ReadDir(p["path"])
    return r


def op_readdir_recursive(p):
    return gdal.ReadDirRecursive(p["path"])


def op_opendir(p):
    d = gdal.OpenDir(p["path"], p.get("depth", -1), p.get("options"))
    if d is None:
        return None
    out = []
    try:
        while True:
            e = gdal.GetNextDirEntry(d)
            if e is None:
                break
            out.append({"name": e.name, "mode": oct(e.mode) if e.modeKnown else None,
                        "size": e.size if e.sizeKnown else None,
                        "mtime": e.mtime if e.mtimeKnown else None})
    finally:
        gdal.CloseDir(d)
    return out


def _read_all(f):
    chunks = []
    while True:
        b = gdal.VSIFReadL(1, 1 << 20, f)
        if not b:
            break
        chunks.append(b)
    return b"".join(chunks)


def op_read(p):
    """VSIFOpenL + reads: the whole object (sha, size), and optional ranges."""
    f = gdal.VSIFOpenL(p["path"], "rb")
    if f is None:
        return None
    try:
        out = {}
        if p.get("whole", True):
            data = _read_all(f)
            out["size"] = len(data)
            out["sha"] = sha(data)
        ranges = []
        for off, ln in p.get("ranges", []):
            gdal.VSIFSeekL(f, off, 0)
            b = gdal.VSIFReadL(1, ln, f) if ln else b""
            ranges.append([off, ln, len(b or b""), sha(b or b"")])
        if ranges:
            out["ranges"] = ranges
        gdal.VSIFSeekL(f, 0, 2)
        out["tell_end"] = gdal.VSIFTellL(f)
        return out
    finally:
        gdal.VSIFCloseL(f)


def _md_all(obj):
    out = {}
    for dom in (obj.GetMetadataDomainList() or []):
        if dom in ("DERIVED_SUBDATASETS",):
            continue
        out[dom or "(default)"] = obj.GetMetadata_List(dom) if dom.startswith("xml:") \
            else obj.GetMetadata(dom)
    if "" not in (obj.GetMetadataDomainList() or []):
        md = obj.GetMetadata()
        if md:
            out["(default)"] = md
    return out


def _band(b, checksums=True, overviews=True):
    d = {"type": gdal.GetDataTypeName(b.DataType), "block": b.GetBlockSize(),
         "nodata": b.GetNoDataValue(), "desc": b.GetDescription(),
         "color": gdal.GetColorInterpretationName(b.GetColorInterpretation()),
         "offset": b.GetOffset(), "scale": b.GetScale(), "unit": b.GetUnitType(),
         "md": _md_all(b), "mask_flags": b.GetMaskFlags(),
         "stored_stats": b.GetStatistics(0, 0),
         "ovr_count": b.GetOverviewCount(),
         "ct": b.GetColorTable().GetCount() if b.GetColorTable() else None,
         "cats": b.GetCategoryNames()}
    if checksums:
        d["checksum"] = b.Checksum()
        d["minmax"] = list(b.ComputeRasterMinMax(False) or [])
        mf = b.GetMaskFlags()
        if not (mf & gdal.GMF_ALL_VALID):
            d["mask_checksum"] = b.GetMaskBand().Checksum()
    if overviews:
        d["ovr"] = []
        for i in range(b.GetOverviewCount()):
            o = b.GetOverview(i)
            d["ovr"].append([o.XSize, o.YSize, o.Checksum() if checksums else None])
    return d


def _srs(ds_srs):
    return ds_srs.ExportToWkt() if ds_srs is not None else None


def describe_raster(ds, checksums=True):
    d = {"driver": ds.GetDriver().ShortName, "size": [ds.RasterXSize, ds.RasterYSize, ds.RasterCount],
         "gt": list(ds.GetGeoTransform(can_return_null=True) or []) or None,
         "srs": _srs(ds.GetSpatialRef()),
         "gcps": [ds.GetGCPCount(), _srs(ds.GetGCPSpatialRef())],
         "files": ds.GetFileList(), "md": _md_all(ds),
         "bands": [_band(ds.GetRasterBand(i + 1), checksums) for i in range(ds.RasterCount)]}
    return d


def op_raster(p):
    ds = gdal.OpenEx(p["path"], gdal.OF_RASTER | gdal.OF_VERBOSE_ERROR,
                     open_options=p.get("open_options") or [])
    if ds is None:
        return None
    try:
        return describe_raster(ds, p.get("checksums", True))
    finally:
        ds = None


def op_open(p):
    """gdal.OpenEx with the given flags: the driver, or None (with the errors)."""
    flags = {"raster": gdal.OF_RASTER, "vector": gdal.OF_VECTOR,
             "any": gdal.OF_RASTER | gdal.OF_VECTOR}[p.get("kind", "any")]
    ds = gdal.OpenEx(p["path"], flags)
    return None if ds is None else {"driver": ds.GetDriver().ShortName, "files": ds.GetFileList()}


def op_info(p):
    """gdal.Info (gdalinfo's library form) with gdalinfo's options."""
    return gdal.Info(p["path"], options=p.get("options", ["-json"]))


def op_filelist(p):
    ds = gdal.OpenEx(p["path"], gdal.OF_RASTER | gdal.OF_VECTOR)
    return None if ds is None else ds.GetFileList()


def _out_summary(path):
    ds = gdal.Open(path)
    if ds is None:
        return None
    d = {"size": [ds.RasterXSize, ds.RasterYSize, ds.RasterCount],
         "gt": list(ds.GetGeoTransform(can_return_null=True) or []) or None,
         "srs": _srs(ds.GetSpatialRef()),
         "checksums": [ds.GetRasterBand(i + 1).Checksum() for i in range(ds.RasterCount)]}
    ds = None
    return d


def _to_vsimem(fn, p, out):
    """gdal.Translate or gdal.Warp of p["path"] into `out`, summarised, then removed."""
    src = gdal.Open(p["path"])
    if src is None:
        return None
    r = fn(out, src, options=p.get("options", []))
    if r is None:
        return None
    r = None
    d = _out_summary(out)
    gdal.Unlink(out)
    return d


def op_translate(p):
    return _to_vsimem(gdal.Translate, p, "/vsimem/parity_translate.tif")


def op_warp(p):
    return _to_vsimem(gdal.Warp, p, "/vsimem/parity_warp.tif")


def op_buildvrt(p):
    """gdal.BuildVRT of /vsis3/ sources into /vsimem/, then everything about the mosaic."""
    out = "/vsimem/parity_mosaic.vrt"
    vrt = gdal.BuildVRT(out, p["sources"], options=p.get("options", []))
    if vrt is None:
        return None
    vrt = None
    ds = gdal.Open(out)
    try:
        return None if ds is None else describe_raster(ds)
    finally:
        ds = None
        gdal.Unlink(out)


def _geom(g):
    return g.ExportToIsoWkt() if g is not None else None


def op_vector(p):
    ds = gdal.OpenEx(p["path"], gdal.OF_VECTOR | gdal.OF_VERBOSE_ERROR,
                     open_options=p.get("open_options") or [])
    if ds is None:
        return None
    d = {"driver": ds.GetDriver().ShortName, "files": ds.GetFileList(), "layers": []}
    for i in range(ds.GetLayerCount()):
        lyr = ds.GetLayer(i)
        defn = lyr.GetLayerDefn()
        ld = {"name": lyr.GetName(), "geom": ogr.GeometryTypeToName(lyr.GetGeomType()),
              "srs": _srs(lyr.GetSpatialRef()), "count": lyr.GetFeatureCount(),
              "extent": list(lyr.GetExtent()) if lyr.GetGeomType() != ogr.wkbNone else None,
              "fields": [[defn.GetFieldDefn(j).GetName(), defn.GetFieldDefn(j).GetTypeName(),
                          defn.GetFieldDefn(j).GetWidth()] for j in range(defn.GetFieldCount())],
              "md": _md_all(lyr)}
        feats = []
        lyr.ResetReading()
        for f in lyr:
            feats.append([f.GetFID(), [f.GetField(j) for j in range(defn.GetFieldCount())],
                          _geom(f.GetGeometryRef())])
        ld["features_sha"] = sha(json.dumps(feats, default=str).encode())
        ld["features_n"] = len(feats)
        d["layers"].append(ld)
    return d


def op_mdim(p):
    ds = gdal.OpenEx(p["path"], gdal.OF_MULTIDIM_RASTER)
    if ds is None:
        return None
    rg = ds.GetRootGroup()
    out = {"driver": ds.GetDriver().ShortName, "arrays": {}, "groups": rg.GetGroupNames()}
    for name in rg.GetMDArrayNames() or []:
        a = rg.OpenMDArray(name)
        data = a.Read()
        out["arrays"][name] = {"dims": [[d.GetName(), d.GetSize()] for d in a.GetDimensions()],
                               "type": a.GetDataType().GetNumericDataType(),
                               "attrs": sorted(x.GetName() for x in a.GetAttributes()),
                               "sha": sha(bytes(data)) if data is not None else None}
    return out


def op_rasterio(p):
    import numpy as np
    import rasterio
    from rasterio.enums import Resampling
    with rasterio.open(p["path"]) as src:
        out = {"driver": src.driver, "shape": [src.count, src.height, src.width],
               "dtypes": list(src.dtypes), "crs": src.crs.to_wkt() if src.crs else None,
               "transform": list(src.transform)[:6], "nodata": src.nodata,
               "overviews": [src.overviews(i + 1) for i in range(src.count)],
               "files": list(src.files), "tags": src.tags(),
               "mask_flags": [[str(f) for f in fl] for fl in src.mask_flag_enums]}
        full = src.read(1)
        out["sum"] = int(np.asarray(full, dtype=np.float64).sum())
        small = src.read(1, out_shape=(max(1, src.height // 8), max(1, src.width // 8)),
                         resampling=Resampling.nearest)
        out["decimated_sha"] = sha(np.ascontiguousarray(small).tobytes())
        out["mask_sha"] = sha(np.ascontiguousarray(src.dataset_mask()).tobytes())
    return out


def op_fopen_ex(p):
    """VSIFOpenExL(path, "rb", bSetError=TRUE): the handle's existence and the VSI error."""
    gdal.VSIErrorReset()
    f = gdal.VSIFOpenExL(p["path"], "rb", 1)
    ok = f is not None
    if f is not None:
        gdal.VSIFCloseL(f)
    return {"opened": ok, "vsi_error": [gdal.VSIGetLastErrorNo(), gdal.VSIGetLastErrorMsg()]}


def op_rasterio_open(p):
    """rasterio.open: the exception a rasterio user catches (class and message)."""
    import rasterio
    try:
        with rasterio.open(p["path"]) as src:
            return {"opened": True, "driver": src.driver}
    except Exception as e:  # what the user sees is the point
        return {"opened": False, "exception": type(e).__name__, "message": str(e)}


def op_signed_url(p):
    return gdal.GetSignedURL(p["path"], p.get("options") or [])


def op_file_metadata(p):
    """GetFileMetadata(path, domain), only the keys asked for (others change per request)."""
    md = gdal.GetFileMetadata(p["path"], p.get("domain", "HEADERS"))
    if md is None:
        return None
    keys = {k.lower() for k in p.get("keys", [])}
    return {k: v for k, v in md.items() if not keys or k.lower() in keys}


def op_rename(p):
    return gdal.Rename(p["src"], p["dst"])


def op_setconfig(p):
    for k, v in p["options"].items():
        gdal.SetConfigOption(k, v)
    return True


def op_path_options(p):
    """Path-specific options: gdal.SetPathSpecificOption (3.6) or its older name
    gdal.SetCredential, for every key of p["options"] under p["prefix"]."""
    fn = getattr(gdal, p.get("api", "SetPathSpecificOption"))
    for k, v in p["options"].items():
        fn(p["prefix"], k, v)
    return True


def op_clear_cache(p):
    gdal.VSICurlClearCache()
    return True


def op_partial_clear_cache(p):
    gdal.VSICurlPartialClearCache(p["prefix"])
    return True


def op_sync(p):
    return bool(gdal.Sync(p["src"], p["dst"], options=p.get("options")))


def op_mkdir(p):
    return gdal.Mkdir(p["path"], 0o755)


def op_unlink(p):
    return gdal.Unlink(p["path"])


def op_write(p):
    f = gdal.VSIFOpenL(p["path"], "wb")
    if f is None:
        return None
    data = p["data"].encode()
    n = gdal.VSIFWriteL(data, 1, len(data), f)
    return [n, gdal.VSIFCloseL(f)]


def op_compute_stats(p):
    """gdalinfo -stats in library form: computes and (PAM) saves the statistics."""
    ds = gdal.Open(p["path"])
    if ds is None:
        return None
    st = ds.GetRasterBand(1).ComputeStatistics(False)
    ds = None
    return st


def op_served_by(p):
    """What serves /vsis3/ in this process (parity.py asks once per process): the VSITUNE
    driver and the prefix it took over; with "path", also how many requests the plugin's
    own counters (its STATS) saw for one VSIStatL of that path, made with the path-specific
    "options" set on "scope" for that call only (so the case's settings stay untouched)."""
    drv = gdal.GetDriverByName("VSITUNE")
    out = {"driver": drv is not None, "prefix": None, "requests": None}
    if drv is None or not p.get("path"):
        return out
    out["prefix"] = drv.GetMetadataItem("VSITUNE_PREFIX")

    def requests():
        return json.loads(drv.GetMetadataItem("STATS"))["engine"]["requests"]

    before = requests()
    for k, v in p["options"].items():
        gdal.SetPathSpecificOption(p["scope"], k, v)
    try:
        gdal.VSIStatL(p["path"])
    finally:
        gdal.ClearPathSpecificOptions(p["scope"])
    out["requests"] = requests() - before
    return out


OPS = {k[3:]: v for k, v in globals().items() if k.startswith("op_")}


def run(probes):
    results = []
    for p in probes:
        del ERRORS[:]
        gdal.ErrorReset()
        r = {"op": p["op"]}
        try:
            r["value"] = OPS[p["op"]](p)
        except Exception as e:  # the probe's own failure: reported, never raised
            r["exception"] = f"{type(e).__name__}: {e}"
        r["errors"] = list(ERRORS)
        results.append(r)
    return results


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        OUT.write(json.dumps({"results": run(json.loads(line))}, default=str) + "\n")
        OUT.flush()


if __name__ == "__main__":
    main()
