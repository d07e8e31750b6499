"""parity_fixtures.py: the files the GDAL parity suite (test_parity_*.py) reads from the lab.

Every layout a GDAL user keeps on S3, built here with GDAL's own Python bindings from one
seeded raster and one seeded set of features, so the content is the same on every run
(archives carry fixed timestamps; GPKG/XLSX/ODS embed their creation time, which no test
compares). Built once into $VT_BUILD_DIR/parity-fixtures/v<RECIPE> (a re-run reuses it),
then uploaded to bucket `lab` under `parity/<case>/...`, one "directory" per case so that
what GDAL lists beside a file is only that case's files.

    cases = build()            # {case: Case}, local files
    upload(lab, cases)         # put every file under its key

A Case names its main path (what gdalinfo/ogrinfo opens), its kind (raster, vector,
mdim), and every file it consists of (the sidecars GDAL must find).
"""

import fcntl
import gzip
import io
import os
import shutil
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import lab_client

RECIPE = 4  # bump when a fixture changes: the cache directory is versioned by it
BUCKET = "lab"
PREFIX = "parity/"
SEED = 20240917
FIXED_TIME = (2024, 1, 2, 3, 4, 6)  # every archive member's timestamp
FIXED_EPOCH = 1704164646


@dataclass
class Case:
    name: str
    kind: str                  # raster | vector | mdim
    main: str                  # the key GDAL opens (relative to PREFIX), or a /vsi path template
    files: list = field(default_factory=list)   # keys relative to PREFIX
    open_path: str = None      # the path to open when not /vsis3/lab/parity/<main>
    note: str = ""

    def s3(self, key=None):
        return f"/vsis3/{BUCKET}/{PREFIX}{key if key is not None else self.main}"

    @property
    def path(self):
        return self.open_path.format(s3=f"/vsis3/{BUCKET}/{PREFIX}") if self.open_path else self.s3()

    @property
    def dir(self):
        """The case's "directory" (no trailing slash)."""
        return self.s3(self.main.rsplit("/", 1)[0]) if "/" in self.main else self.s3("")[:-1]


def fixture_root():
    """Versioned by the recipe and by the GDAL that writes the files (drivers write
    differently across releases: Zarr v3's layout changed after 3.6)."""
    from osgeo import gdal
    return lab_client.build_dir() / "parity-fixtures" / f"v{RECIPE}-gdal{gdal.VersionInfo()}"


# -- building blocks -----------------------------------------------------------------
def _base_array(np, size=512, bands=1):
    """A smooth field plus texture plus noise, uint16, deterministic."""
    rng = np.random.default_rng(SEED)
    y, x = np.mgrid[0:size, 0:size].astype(np.float32)
    out = []
    for b in range(bands):
        a = (2000 + 800 * np.sin(x / (37.0 + 5 * b)) * np.cos(y / 53.0)
             + 400 * np.sin((x + y) / 11.0) + rng.normal(0, 90, (size, size)))
        n = -(-size // 32)
        blocks = rng.integers(0, 600, (n, n)).repeat(32, 0).repeat(32, 1)[:size, :size]
        out.append(np.clip(a + blocks, 1, 10000).astype(np.uint16))
    return out


UTM_GT = [600000.0, 20.0, 0.0, 5100000.0, 0.0, -20.0]


def _srs_wkt(gdal, epsg=32632):
    srs = gdal.osr.SpatialReference()
    srs.ImportFromEPSG(epsg)
    return srs.ExportToWkt()


def _mem_raster(gdal, np, size=512, bands=1, dtype=None, georef=True, nodata=None):
    arrays = _base_array(np, size, bands)
    ds = gdal.GetDriverByName("MEM").Create("", size, size, bands, dtype or gdal.GDT_UInt16)
    if georef:
        ds.SetGeoTransform(UTM_GT if size == 512 else [600000.0, 20.0 * 512 / size, 0, 5100000.0, 0,
                                                           -20.0 * 512 / size])
        ds.SetProjection(_srs_wkt(gdal))
    for i, a in enumerate(arrays):
        band = ds.GetRasterBand(i + 1)
        band.WriteArray(a)
        if nodata is not None:
            band.SetNoDataValue(nodata)
    return ds


def _write_world_file(path, gt):
    # A world file: A, D, B, E, C, F with C/F at the centre of the top-left pixel.
    a, b, c, d, e, f = gt[1], gt[2], gt[0], gt[4], gt[5], gt[3]
    vals = [a, d, b, e, c + a / 2 + b / 2, f + d / 2 + e / 2]
    path.write_text("".join(f"{v:.10f}\n" for v in vals))


AUX_XML = """<PAMDataset>
  <SRS dataAxisToSRSAxisMapping="1,2">{srs}</SRS>
  <GeoTransform>{gt}</GeoTransform>
  <Metadata>
    <MDI key="PARITY_SOURCE">aux.xml</MDI>
    <MDI key="ACQUISITION">2024-01-02</MDI>
  </Metadata>
  <PAMRasterBand band="1">
    <NoDataValue>7</NoDataValue>
    <Description>from the aux.xml</Description>
    <Metadata>
      <MDI key="STATISTICS_MAXIMUM">9999</MDI>
      <MDI key="STATISTICS_MEAN">2500.5</MDI>
      <MDI key="STATISTICS_MINIMUM">1</MDI>
      <MDI key="STATISTICS_STDDEV">321.25</MDI>
      <MDI key="BAND_NOTE">from aux</MDI>
    </Metadata>
  </PAMRasterBand>
</PAMDataset>
"""


def _aux_xml(gdal, gt=UTM_GT, epsg=32632):
    wkt = _srs_wkt(gdal, epsg).replace("&", "&amp;").replace('"', "&quot;") \
        .replace("<", "&lt;").replace(">", "&gt;")
    return AUX_XML.format(srs=wkt, gt=", ".join(f"{v:.16e}" for v in gt))


def _features(ogr, osr, ds, name, geom=None, n=40, srs_epsg=4326, options=None):
    import random
    rnd = random.Random(SEED)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(srs_epsg)
    srs.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    lyr = ds.CreateLayer(name, srs, geom or ogr.wkbPoint, options=options or [])
    lyr.CreateField(ogr.FieldDefn("id", ogr.OFTInteger))
    f = ogr.FieldDefn("name", ogr.OFTString)
    f.SetWidth(32)
    lyr.CreateField(f)
    lyr.CreateField(ogr.FieldDefn("value", ogr.OFTReal))
    for i in range(n):
        feat = ogr.Feature(lyr.GetLayerDefn())
        feat.SetField("id", i)
        feat.SetField("name", f"feature-{i:03d}-\u00e9")
        feat.SetField("value", round(rnd.uniform(-100, 100), 3))
        x, y = 6 + rnd.random(), 45 + rnd.random()
        if (geom or ogr.wkbPoint) == ogr.wkbPoint:
            g = ogr.CreateGeometryFromWkt(f"POINT ({x:.6f} {y:.6f})")
        else:
            g = ogr.CreateGeometryFromWkt(
                f"POLYGON (({x:.5f} {y:.5f},{x + .01:.5f} {y:.5f},{x + .01:.5f} {y + .01:.5f},"
                f"{x:.5f} {y:.5f}))")
        feat.SetGeometry(g)
        lyr.CreateFeature(feat)
    return lyr


def _zip(dst, members):
    """A zip with fixed timestamps; members: [(arcname, local path, compress)]."""
    with zipfile.ZipFile(dst, "w") as z:
        for arc, src, comp in members:
            zi = zipfile.ZipInfo(arc, FIXED_TIME)
            zi.compress_type = zipfile.ZIP_DEFLATED if comp else zipfile.ZIP_STORED
            zi.external_attr = 0o644 << 16
            z.writestr(zi, Path(src).read_bytes())


def _tar(dst, members, gz=False):
    with tarfile.open(dst, "w:gz" if gz else "w", format=tarfile.USTAR_FORMAT) as t:
        for arc, src in members:
            data = Path(src).read_bytes()
            ti = tarfile.TarInfo(arc)
            ti.size, ti.mtime, ti.mode, ti.uid, ti.gid = len(data), FIXED_EPOCH, 0o644, 0, 0
            t.addfile(ti, io.BytesIO(data))


# -- the cases ------------------------------------------------------------------------
def _build_all(root):
    """Write every case's files under root; returns {name: Case}."""
    import numpy as np
    from osgeo import gdal, ogr, osr
    gdal.UseExceptions()
    ogr.UseExceptions()
    cases = {}

    def case(name, kind, main, files=None, open_path=None, note=""):
        c = Case(name, kind, main, list(files or [main]), open_path, note)
        cases[name] = c
        (root / main).parent.mkdir(parents=True, exist_ok=True)
        return c

    def p(key):
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        return str(root / key)

    gtiff = gdal.GetDriverByName("GTiff")
    base = _mem_raster(gdal, np)
    plain = _mem_raster(gdal, np, georef=False)

    # COG, and a COG with an .aux.xml beside it
    gdal.Translate(p("cog/scene.tif"), base, format="COG",
                   creationOptions=["COMPRESS=DEFLATE", "BLOCKSIZE=128", "OVERVIEW_RESAMPLING=AVERAGE"])
    case("cog", "raster", "cog/scene.tif")
    gdal.Translate(p("cog_aux/scene.tif"), base, format="COG",
                   creationOptions=["COMPRESS=DEFLATE", "BLOCKSIZE=128"])
    Path(p("cog_aux/scene.tif.aux.xml")).write_text(_aux_xml(gdal))
    case("cog_aux", "raster", "cog_aux/scene.tif", ["cog_aux/scene.tif", "cog_aux/scene.tif.aux.xml"])

    # an RGB orthophoto COG: JPEG (YCbCr), internal per-dataset mask, internal overviews
    rgb = _mem_raster(gdal, np, bands=3, dtype=gdal.GDT_Byte)
    for i in range(3):
        b = rgb.GetRasterBand(i + 1)
        b.WriteArray((_base_array(np, 512, 3)[i] // 40).astype(np.uint8))
        b.SetColorInterpretation(gdal.GCI_RedBand + i)
    rgb.CreateMaskBand(gdal.GMF_PER_DATASET)
    m = np.full((512, 512), 255, dtype=np.uint8)
    m[:64, :] = 0
    rgb.GetRasterBand(1).GetMaskBand().WriteArray(m)
    gdal.Translate(p("cog_rgb/ortho.tif"), rgb, format="COG",
                   creationOptions=["COMPRESS=JPEG", "QUALITY=90", "BLOCKSIZE=256"])
    case("cog_rgb", "raster", "cog_rgb/ortho.tif")

    # a striped GeoTIFF, georeferenced inside (the classic non-COG)
    gdal.Translate(p("striped/scene.tif"), base, creationOptions=["TILED=NO", "COMPRESS=LZW"])
    case("striped", "raster", "striped/scene.tif")

    # tiled TIFF + external overviews (gdaladdo -ro)
    gdal.Translate(p("tiled_ovr/scene.tif"), base,
                   creationOptions=["TILED=YES", "BLOCKXSIZE=128", "BLOCKYSIZE=128", "COMPRESS=DEFLATE"])
    ds = gdal.Open(p("tiled_ovr/scene.tif"), gdal.GA_ReadOnly)
    with_opts = gdal.GetConfigOption("COMPRESS_OVERVIEW")
    gdal.SetConfigOption("COMPRESS_OVERVIEW", "DEFLATE")
    ds.BuildOverviews("AVERAGE", [2, 4, 8])  # read-only open: writes scene.tif.ovr
    gdal.SetConfigOption("COMPRESS_OVERVIEW", with_opts)
    ds = None
    case("tiled_ovr", "raster", "tiled_ovr/scene.tif", ["tiled_ovr/scene.tif", "tiled_ovr/scene.tif.ovr"])

    # world files: a TIFF without georeferencing beside .tfw / .wld / .tifw
    for ext in ("tfw", "wld", "tifw"):
        gdal.Translate(p(f"world_{ext}/scene.tif"), plain, creationOptions=["PROFILE=BASELINE"])
        _write_world_file(root / f"world_{ext}/scene.{ext}", UTM_GT)
        case(f"world_{ext}", "raster", f"world_{ext}/scene.tif",
             [f"world_{ext}/scene.tif", f"world_{ext}/scene.{ext}"])
    # JPEG-2000 with .j2w (no GeoJP2/GMLJP2 box inside)
    gdal.Translate(p("world_j2w/scene.jp2"), plain, format="JP2OpenJPEG",
                   creationOptions=["GeoJP2=NO", "GMLJP2=NO", "QUALITY=100", "REVERSIBLE=YES",
                                    "BLOCKXSIZE=256", "BLOCKYSIZE=256"])
    for junk in (root / "world_j2w").glob("*.aux.xml"):
        junk.unlink()
    _write_world_file(root / "world_j2w/scene.j2w", UTM_GT)
    case("world_j2w", "raster", "world_j2w/scene.jp2", ["world_j2w/scene.jp2", "world_j2w/scene.j2w"])
    # PNG with .pgw
    gdal.Translate(p("world_pgw/scene.png"), plain, format="PNG")
    for junk in (root / "world_pgw").glob("*.aux.xml"):
        junk.unlink()
    _write_world_file(root / "world_pgw/scene.pgw", UTM_GT)
    case("world_pgw", "raster", "world_pgw/scene.png", ["world_pgw/scene.png", "world_pgw/scene.pgw"])

    # georeferencing only in the .aux.xml (PAM)
    gdal.Translate(p("pam/scene.tif"), plain, creationOptions=["PROFILE=BASELINE"])
    Path(p("pam/scene.tif.aux.xml")).write_text(_aux_xml(gdal))
    case("pam", "raster", "pam/scene.tif", ["pam/scene.tif", "pam/scene.tif.aux.xml"])

    # external mask (.msk)
    gdal.Translate(p("msk/scene.tif"), base, creationOptions=["TILED=YES", "COMPRESS=DEFLATE"])
    gdal.SetConfigOption("GDAL_TIFF_INTERNAL_MASK", "NO")
    ds = gdal.Open(p("msk/scene.tif"), gdal.GA_Update)
    ds.CreateMaskBand(gdal.GMF_PER_DATASET)
    m = ds.GetRasterBand(1).GetMaskBand()
    mask = np.full((512, 512), 255, dtype=np.uint8)
    mask[:, :100] = 0
    mask[400:, :] = 0
    m.WriteArray(mask)
    ds = None
    gdal.SetConfigOption("GDAL_TIFF_INTERNAL_MASK", None)
    case("msk", "raster", "msk/scene.tif", ["msk/scene.tif", "msk/scene.tif.msk"])

    # VRT mosaic of two relative tiles + .vrt.ovr
    left = gdal.Translate(p("vrt/left.tif"), base, srcWin=[0, 0, 256, 512])
    right = gdal.Translate(p("vrt/right.tif"), base, srcWin=[256, 0, 256, 512])
    left = right = None
    cwd = os.getcwd()
    os.chdir(root / "vrt")
    try:
        gdal.BuildVRT("mosaic.vrt", ["left.tif", "right.tif"])
    finally:
        os.chdir(cwd)
    ds = gdal.Open(p("vrt/mosaic.vrt"), gdal.GA_ReadOnly)
    ds.BuildOverviews("AVERAGE", [2, 4])
    ds = None
    case("vrt_ovr", "raster", "vrt/mosaic.vrt",
         ["vrt/mosaic.vrt", "vrt/mosaic.vrt.ovr", "vrt/left.tif", "vrt/right.tif"])

    # AAIGrid + .prj
    small = _mem_raster(gdal, np, size=128, dtype=gdal.GDT_Int16)
    gdal.Translate(p("aaigrid/dem.asc"), small, format="AAIGrid")
    for junk in (root / "aaigrid").glob("*.aux.xml"):
        junk.unlink()
    case("aaigrid", "raster", "aaigrid/dem.asc", ["aaigrid/dem.asc", "aaigrid/dem.prj"])

    # SRTM .hgt (1201 x 1201, lon 6 lat 45)
    hgt = gdal.GetDriverByName("MEM").Create("", 1201, 1201, 1, gdal.GDT_Int16)
    hgt.SetGeoTransform([5.99958333333333, 1 / 1200.0, 0, 46.00041666666667, 0, -1 / 1200.0])
    hgt.SetProjection(_srs_wkt(gdal, 4326))
    arr = (_base_array(np, 1201)[0] // 4).astype(np.int16)
    hgt.GetRasterBand(1).WriteArray(arr)
    gdal.Translate(p("srtm/N45E006.hgt"), hgt, format="SRTMHGT")
    for junk in (root / "srtm").glob("*.aux.xml"):
        junk.unlink()
    case("srtm", "raster", "srtm/N45E006.hgt")

    # ENVI, EHdr, HFA, each with an .aux.xml carrying extra metadata
    gdal.Translate(p("envi/scene.img"), base, format="ENVI")
    gdal.Translate(p("ehdr/scene.bil"), base, format="EHdr")
    gdal.Translate(p("hfa/scene.img"), base, format="HFA")
    for name, main in (("envi", "envi/scene.img"), ("ehdr", "ehdr/scene.bil"), ("hfa", "hfa/scene.img")):
        for junk in (root / name).glob("*.aux.xml"):
            junk.unlink()
        Path(p(main + ".aux.xml")).write_text(
            '<PAMDataset>\n  <Metadata>\n    <MDI key="PARITY_SOURCE">aux.xml</MDI>\n  </Metadata>\n'
            '  <PAMRasterBand band="1">\n    <Metadata>\n      <MDI key="BAND_NOTE">from aux</MDI>\n'
            '    </Metadata>\n  </PAMRasterBand>\n</PAMDataset>\n')
        files = sorted(str(f.relative_to(root)) for f in (root / name).iterdir())
        case(name, "raster", main, files)

    # Idrisi .rst (+ .rdc, .ref/.smp as the driver writes them)
    gdal.Translate(p("idrisi/scene.rst"), _mem_raster(gdal, np, dtype=gdal.GDT_Byte), format="RST")
    for junk in (root / "idrisi").glob("*.aux.xml"):
        junk.unlink()
    case("idrisi", "raster", "idrisi/scene.rst",
         sorted(str(f.relative_to(root)) for f in (root / "idrisi").iterdir()))

    # RPCs in scene_rpc.txt
    rpc = {
        "HEIGHT_OFF": "430", "HEIGHT_SCALE": "501", "LAT_OFF": "45.5", "LAT_SCALE": "0.05",
        "LINE_DEN_COEFF": " ".join(["1"] + ["0"] * 19), "LINE_NUM_COEFF": " ".join(["0", "0", "-1"] + ["0"] * 17),
        "LINE_OFF": "256", "LINE_SCALE": "256", "LONG_OFF": "6.5", "LONG_SCALE": "0.05",
        "SAMP_DEN_COEFF": " ".join(["1"] + ["0"] * 19), "SAMP_NUM_COEFF": " ".join(["0", "1"] + ["0"] * 18),
        "SAMP_OFF": "256", "SAMP_SCALE": "256",
    }
    rds = gdal.GetDriverByName("MEM").Create("", 512, 512, 1, gdal.GDT_UInt16)
    rds.GetRasterBand(1).WriteArray(_base_array(np)[0])
    rds.SetMetadata(rpc, "RPC")
    gdal.Translate(p("rpc/scene.tif"), rds, creationOptions=["PROFILE=BASELINE", "RPCTXT=YES"])
    for junk in (root / "rpc").glob("*.aux.xml"):
        junk.unlink()
    os.replace(root / "rpc/scene_RPC.TXT", root / "rpc/scene_rpc.txt")  # GDAL looks for both cases
    case("rpc", "raster", "rpc/scene.tif",
         sorted(str(f.relative_to(root)) for f in (root / "rpc").iterdir()))

    # GeoPackage (vector + a raster table in another file)
    ds = gdal.GetDriverByName("GPKG").Create(p("gpkg/data.gpkg"), 0, 0, 0, gdal.GDT_Unknown)
    _features(ogr, osr, ds, "points")
    _features(ogr, osr, ds, "parcels", ogr.wkbPolygon)
    ds = None
    case("gpkg", "vector", "gpkg/data.gpkg")
    gdal.Translate(p("gpkg_raster/tiles.gpkg"), _mem_raster(gdal, np, dtype=gdal.GDT_Byte,
                                                            size=256), format="GPKG")
    case("gpkg_raster", "raster", "gpkg_raster/tiles.gpkg")

    # Shapefile (+ .shx .dbf .prj .cpg)
    ds = ogr.GetDriverByName("ESRI Shapefile").CreateDataSource(p("shp/roads.shp"))
    _features(ogr, osr, ds, "roads", ogr.wkbPolygon, options=["ENCODING=UTF-8"])  # + .cpg
    ds = None
    case("shp", "vector", "shp/roads.shp", sorted(str(f.relative_to(root)) for f in (root / "shp").iterdir()))

    # MapInfo .tab (+ .map .id .dat)
    ds = ogr.GetDriverByName("MapInfo File").CreateDataSource(p("tab/parcels.tab"))
    _features(ogr, osr, ds, "parcels", ogr.wkbPolygon)
    ds = None
    case("tab", "vector", "tab/parcels.tab", sorted(str(f.relative_to(root)) for f in (root / "tab").iterdir()))

    # GML + .xsd
    ds = ogr.GetDriverByName("GML").CreateDataSource(p("gml/data.gml"), options=["FORMAT=GML3"])
    _features(ogr, osr, ds, "points")
    ds = None
    for junk in (root / "gml").glob("*.gfs"):
        junk.unlink()
    case("gml", "vector", "gml/data.gml", ["gml/data.gml", "gml/data.xsd"])

    # XLSX and ODS
    for drv, ext in (("XLSX", "xlsx"), ("ODS", "ods")):
        ds = ogr.GetDriverByName(drv).CreateDataSource(p(f"{ext}/table.{ext}"))
        lyr = ds.CreateLayer("sheet1", None, ogr.wkbNone)
        lyr.CreateField(ogr.FieldDefn("id", ogr.OFTInteger))
        lyr.CreateField(ogr.FieldDefn("label", ogr.OFTString))
        lyr.CreateField(ogr.FieldDefn("value", ogr.OFTReal))
        for i in range(25):
            f = ogr.Feature(lyr.GetLayerDefn())
            f.SetField("id", i)
            f.SetField("label", f"row {i}")
            f.SetField("value", i * 1.5)
            lyr.CreateFeature(f)
        ds = None
        case(ext, "vector", f"{ext}/table.{ext}")

    # FlatGeobuf (cloud-native vector, spatial index)
    ds = ogr.GetDriverByName("FlatGeobuf").CreateDataSource(p("fgb/points.fgb"))
    _features(ogr, osr, ds, "points")
    ds = None
    case("fgb", "vector", "fgb/points.fgb")

    # CSV with its .csvt (field types) and .prj sidecars
    ds = ogr.GetDriverByName("CSV").CreateDataSource(p("csv/table.csv"))
    _features(ogr, osr, ds, "table", options=["GEOMETRY=AS_WKT", "CREATE_CSVT=YES"])
    ds = None
    case("csv", "vector", "csv/table.csv",
         sorted(str(f.relative_to(root)) for f in (root / "csv").iterdir()))

    # GeoJSON (single file, the simplest vector)
    ds = ogr.GetDriverByName("GeoJSON").CreateDataSource(p("geojson/points.geojson"))
    _features(ogr, osr, ds, "points")
    ds = None
    case("geojson", "vector", "geojson/points.geojson")

    # Zarr v2 and v3: directories; opened by the directory path without a trailing slash
    for fmt in ("ZARR_V2", "ZARR_V3"):
        name = fmt.lower().replace("_", "")
        gdal.Translate(p(f"{name}/cube.zarr"), base, format="Zarr",
                       creationOptions=[f"FORMAT={fmt}", "BLOCKSIZE=128,128", "COMPRESS=NONE"])
        files = sorted(str(f.relative_to(root)) for f in (root / name).rglob("*") if f.is_file())
        case(name, "raster", f"{name}/cube.zarr", files)

    # archives
    arch = root / "archive"
    arch.mkdir(exist_ok=True)
    _zip(arch / "bundle.zip", [
        ("inner/scene.tif", root / "striped/scene.tif", False),
        ("inner/cog.tif", root / "cog/scene.tif", True),
        ("world/scene.tif", root / "world_tfw/scene.tif", True),
        ("world/scene.tfw", root / "world_tfw/scene.tfw", True),
    ] + [(f"shp/{Path(f).name}", root / f, True) for f in cases["shp"].files])
    _tar(arch / "bundle.tar", [("inner/scene.tif", root / "tiled_ovr/scene.tif"),
                               ("inner/scene.tif.ovr", root / "tiled_ovr/scene.tif.ovr")])
    _tar(arch / "bundle.tar.gz", [("dem.asc", root / "aaigrid/dem.asc"),
                                  ("dem.prj", root / "aaigrid/dem.prj")], gz=True)
    with open(arch / "dem.asc.gz", "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0,
                                                            filename="dem.asc") as g:
        g.write((root / "aaigrid/dem.asc").read_bytes())
    afiles = ["archive/bundle.zip", "archive/bundle.tar", "archive/bundle.tar.gz", "archive/dem.asc.gz"]
    case("zip_tif", "raster", "archive/bundle.zip", afiles,
         open_path="/vsizip/{s3}archive/bundle.zip/inner/scene.tif")
    case("zip_cog", "raster", "archive/bundle.zip", afiles,
         open_path="/vsizip/{s3}archive/bundle.zip/inner/cog.tif")
    case("zip_world", "raster", "archive/bundle.zip", afiles,
         open_path="/vsizip/{s3}archive/bundle.zip/world/scene.tif")
    case("zip_shp", "vector", "archive/bundle.zip", afiles,
         open_path="/vsizip/{s3}archive/bundle.zip/shp/roads.shp")
    case("tar_ovr", "raster", "archive/bundle.tar", afiles,
         open_path="/vsitar/{s3}archive/bundle.tar/inner/scene.tif")
    case("targz_asc", "raster", "archive/bundle.tar.gz", afiles,
         open_path="/vsitar/{s3}archive/bundle.tar.gz/dem.asc")
    case("gzip_asc", "raster", "archive/dem.asc.gz", afiles,
         open_path="/vsigzip/{s3}archive/dem.asc.gz")

    # a directory of shapefiles, opened as a datasource by its prefix (no trailing slash)
    case("shp_dir", "vector", "shp/roads.shp", cases["shp"].files, open_path="{s3}shp")
    return cases


def _cases_from_disk(root):
    """The case table without building (files already there): rebuilt cheaply by
    re-running the recipe's bookkeeping from the manifest written at build time."""
    import json
    m = json.loads((root / "manifest.json").read_text())
    return {k: Case(**v) for k, v in m.items()}


def build():
    """Build (once) and return {case: Case}. Concurrent callers wait on a lock."""
    import json
    root = fixture_root()
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(str(root) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / "manifest.json").exists():
            return _cases_from_disk(root)
        tmp = root.with_name(root.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        cases = _build_all(tmp)
        for c in cases.values():
            for f in c.files:
                assert (tmp / f).is_file(), f"fixture {c.name}: {f} was not written"
        (tmp / "manifest.json").write_text(json.dumps({k: v.__dict__ for k, v in cases.items()},
                                                      indent=1, sort_keys=True))
        shutil.rmtree(root, ignore_errors=True)
        os.replace(tmp, root)
        return cases


def local(case, key=None):
    return fixture_root() / (key if key is not None else case.main)


def upload(lab, cases, bucket=BUCKET, prefix=PREFIX):
    """Put every file of every case under prefix + its key (once per key)."""
    done = set()
    for c in cases.values():
        for f in c.files:
            if f not in done:
                lab.put_object(bucket, prefix + f, fixture_root() / f)
                done.add(f)
    return sorted(done)
