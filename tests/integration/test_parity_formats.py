"""test_parity_formats.py: every layout of parity_fixtures.py read as a GDAL user reads it,
stock GDAL against GDAL with the plugin (issue 9), outputs compared (parity.py).

Per raster case, in one process per side: gdal.OpenEx and everything GDAL says about the
dataset (driver, size, georeferencing, CRS, GCPs, file list, metadata of every domain, per
band: checksum, min/max, nodata, stored statistics, mask flags and mask checksum, every
overview's checksum), gdal_translate -outsize 12.5% (overviews chosen), gdalwarp -ts to
EPSG:4326 (georeferencing used), VSIStatL of the case's files and of the sidecar names
GDAL probes, VSIReadDir of the case's directory, and the main file's bytes. Then the
`gdalinfo -json -checksum` command line (exit status, stdout, error lines). rasterio reads
for the common layouts. Per vector case: the OGR walk (layers, fields, every feature),
`ogrinfo -ro -al -so` and `ogrinfo -ro -al`. Request counts go to
$VT_BUILD_DIR/parity/requests.json.

A case that differs today carries a strict xfail with what differs; a fix turns it into an
XPASS failure, and the mark must go.
"""

import pytest

from parity import (COG_NOTICE, Pairs, assert_ok, assert_same, both, both_tool, last_seq,
                    one_side, undo_writes, uploaded, writes_since, xfail)

# Sidecar names GDAL may look for beside a file; VSIStatL of each must agree (absent or not).
SIDECAR_SUFFIXES = [".aux.xml", ".ovr", ".msk", ".aux", ".tfw", ".wld", ".prj", "_rpc.txt",
                    ".imd", ".xml"]

RASTER = ["cog", "cog_aux", "cog_rgb", "striped", "tiled_ovr", "world_tfw", "world_wld", "world_tifw",
          "world_j2w", "world_pgw", "pam", "msk", "vrt_ovr", "aaigrid", "srtm", "envi", "ehdr",
          "hfa", "idrisi", "rpc", "gpkg_raster", "zarrv2", "zarrv3", "zip_tif", "zip_cog",
          "zip_world", "tar_ovr", "targz_asc", "gzip_asc"]
VECTOR = ["shp", "tab", "gpkg", "gml", "xlsx", "ods", "geojson", "fgb", "csv", "zip_shp", "shp_dir"]

# What differs today, per case (strict xfail with what differs; remove the entry when the
# case passes). Empty: every case gives stock GDAL's output.
RASTER_XFAIL = {}
GDALINFO_XFAIL = {}
VECTOR_XFAIL = {}
OGRINFO_XFAIL = {}
RASTERIO_XFAIL = {}
ZARR_XFAIL = {}

# COG + .aux.xml: the plugin skips sidecar lookups for a COG by design (issue 9); with
# VSITUNE_SIDECARS=YES it must read the .aux.xml exactly as stock GDAL does.
# test_cog_aux_default_is_documented_difference checks the default.
VT_EXTRA = {"cog_aux": {"VSITUNE_SIDECARS": "YES"}}


def params(names, marks):
    return [pytest.param(n, marks=[xfail(marks[n])] if n in marks else [], id=n) for n in names]


@pytest.fixture(scope="module")
def cases(lab):
    return uploaded(lab)


@pytest.fixture(scope="module")
def pairs(lab):
    """The module's shared probe processes (parity.Pairs): one GDAL start-up per side and
    environment, not per case."""
    p = Pairs(lab)
    yield p
    p.close()


def raster_probes(c):
    path = c.path
    stats = [c.s3(f) for f in c.files]
    if path.startswith("/vsis3/"):
        stats += [path + s for s in SIDECAR_SUFFIXES] + [path.rsplit(".", 1)[0] + s
                                                         for s in SIDECAR_SUFFIXES]
    return [
        {"op": "raster", "path": path},
        {"op": "translate", "path": path, "options": ["-outsize", "12.5%", "12.5%"]},
        {"op": "warp", "path": path, "options": ["-ts", "64", "64", "-t_srs", "EPSG:4326"]},
        {"op": "stat_many", "paths": stats, "fields": ["size", "isdir"]},
        {"op": "readdir", "path": c.dir},
        {"op": "read", "path": c.s3(c.files[0]), "ranges": [[0, 100], [1000, 5000]]},
    ]


@pytest.mark.parametrize("name", params(RASTER, RASTER_XFAIL))
def test_raster(lab, cases, pairs, name):
    c = cases[name]
    stock, vt = pairs.both(name, "raster", raster_probes(c), extra_vt=VT_EXTRA.get(name))
    assert_ok(stock, name)
    assert stock[0]["value"] is not None, f"stock GDAL cannot open {c.path}: {stock[0]}"
    assert_same(stock, vt, name)


@pytest.mark.parametrize("name", params(RASTER, GDALINFO_XFAIL))
def test_gdalinfo_cli(lab, cases, name):
    c = cases[name]
    stock, vt = both_tool(lab, name, "gdalinfo", ["gdalinfo", "-json", "-checksum", c.path],
                          parse_json=True, extra_vt=VT_EXTRA.get(name))
    assert stock["rc"] == 0, stock
    assert_same(stock, vt, f"gdalinfo {name}")


def test_cog_aux_default_is_documented_difference(lab, cases):
    """The one deliberate difference (docs/compatibility.md): by default the plugin opens a
    COG without looking for sidecars, so an .aux.xml beside it is not read. What the user
    gets is then exactly what stock GDAL gives with no sidecar lookup."""
    c = cases["cog_aux"]
    probes = [{"op": "raster", "path": c.path}]
    stock_nosib, vt = both(lab, "cog_aux", "default-no-sidecars", probes,
                           extra_stock={"GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR"})
    assert stock_nosib[0]["value"]["md"].get("(default)", {}).get("PARITY_SOURCE") is None
    assert_same(stock_nosib, vt, "cog_aux default")


# What a process sees around its COG opens: the error handler's calls (class, number,
# message), GDAL's error state after each open, rasterio's log records.
_NOTICE_SCRIPT = r"""
import json, logging, sys
mode, paths = sys.argv[1], sys.argv[2:]
out = {"handler": [], "state": [], "log": []}
if mode == "gdal":
    from osgeo import gdal
    gdal.DontUseExceptions()
    gdal.PushErrorHandler(lambda c, n, m: out["handler"].append([int(c), int(n), m]))
    for p in paths:
        gdal.ErrorReset()
        ds = gdal.Open(p)
        out["state"].append([ds is not None, gdal.GetLastErrorType(), gdal.GetLastErrorNo(),
                             gdal.GetLastErrorMsg()])
        ds = None
else:
    class Keep(logging.Handler):
        def emit(self, r):
            out["log"].append([r.levelname, r.getMessage()])
    logging.getLogger().addHandler(Keep())
    logging.getLogger().setLevel(logging.DEBUG)
    import rasterio
    for p in paths:
        with rasterio.open(p) as src:
            out["state"].append([src.driver, src.nodata])
print(json.dumps(out))
"""


def _is_cog_notice(line):
    return line.startswith(COG_NOTICE)


def test_cog_notice_once_per_process(lab, cases):
    """The one deliberate difference is said where it happens: the first time a process
    opens a COG without looking for its sidecars (VSITUNE_SIDECARS unset, CPL_DEBUG off),
    the plugin logs one line naming the option, on GDAL's debug channel (CE_Debug,
    category VSITUNE): gdalinfo prints it on stderr, GDAL's error state and error
    handler's warnings and errors are untouched, rasterio logs it at DEBUG only. Every
    other byte of stdout and stderr, and every handler call, is stock GDAL's."""
    import json
    import lab_client
    from parity import side_env
    cog, rgb, striped = cases["cog"].path, cases["cog_rgb"].path, cases["striped"].path

    def run(argv, vsitune, extra=None):
        cp, _ = lab_client.run_tool(argv, side_env(lab, vsitune, extra))
        return cp

    # gdalinfo: stdout, exit status and the whole stderr but the one line
    stock, vt = (run(["gdalinfo", "-json", "-checksum", cog], v) for v in (False, True))
    said = [ln for ln in vt.stderr.splitlines() if _is_cog_notice(ln)]
    assert len(said) == 1, vt.stderr
    assert "VSITUNE_SIDECARS" in said[0] and "aux.xml" in said[0], said
    assert not any(_is_cog_notice(ln) for ln in stock.stderr.splitlines()), stock.stderr
    assert (vt.returncode, vt.stdout) == (stock.returncode, stock.stdout)
    assert [ln for ln in vt.stderr.splitlines() if not _is_cog_notice(ln)] == \
        stock.stderr.splitlines()

    # the library: three COGs and a striped TIFF in one process, once
    py = ["/usr/bin/python3", "-c", _NOTICE_SCRIPT, "gdal", cog, rgb, cog, striped]
    stock, vt = (json.loads(run(py, v).stdout) for v in (False, True))
    said = [h for h in vt["handler"] if _is_cog_notice(h[2])]
    assert [h[:2] for h in said] == [[1, 0]], vt["handler"]  # CE_Debug, CPLE_None
    assert [h for h in vt["handler"] if h not in said] == stock["handler"]
    assert vt["state"] == stock["state"]  # no error class, number or text left behind

    # the option named, set: nothing said (YES: GDAL looks for sidecars; AUTO: kept)
    for value in ("AUTO", "YES"):
        quiet = run(["gdalinfo", cog], True, {"VSITUNE_SIDECARS": value})
        assert quiet.returncode == 0 and not any(
            _is_cog_notice(ln) for ln in quiet.stderr.splitlines()), (value, quiet.stderr)

    # rasterio: a DEBUG record only; nothing at WARNING or above that stock lacks
    py = ["/usr/bin/python3", "-c", _NOTICE_SCRIPT, "rasterio", cog, rgb]
    stock, vt = (json.loads(run(py, v).stdout) for v in (False, True))
    assert vt["state"] == stock["state"]
    loud = lambda recs: [r for r in recs if r[0] not in ("DEBUG", "INFO")]  # noqa: E731
    assert loud(vt["log"]) == loud(stock["log"])
    assert [r[0] for r in vt["log"] if "VSITUNE_SIDECARS" in r[1]] == ["DEBUG"], vt["log"]


def vector_probes(c):
    stats = [c.s3(f) for f in c.files] if c.path.startswith("/vsis3/") else []
    return [
        {"op": "vector", "path": c.path},
        {"op": "stat_many", "paths": stats + [c.path], "fields": ["size", "isdir"]},
        {"op": "readdir", "path": c.dir},
    ]


@pytest.mark.parametrize("name", params(VECTOR, VECTOR_XFAIL))
def test_vector(lab, cases, pairs, name):
    c = cases[name]
    stock, vt = pairs.both(name, "vector", vector_probes(c))
    assert_ok(stock, name)
    assert stock[0]["value"] is not None, f"stock GDAL cannot open {c.path}: {stock[0]}"
    assert_same(stock, vt, name)


@pytest.mark.parametrize("name", params(VECTOR, OGRINFO_XFAIL))
@pytest.mark.parametrize("mode", ["summary", "full"])
def test_ogrinfo_cli(lab, cases, name, mode):
    c = cases[name]
    argv = ["ogrinfo", "-ro", "-al"] + (["-so"] if mode == "summary" else []) + [c.path]
    stock, vt = both_tool(lab, name, f"ogrinfo-{mode}", argv)
    assert stock["rc"] == 0, stock
    assert_same(stock, vt, f"ogrinfo {mode} {name}")


RASTERIO = ["cog", "cog_rgb", "striped", "tiled_ovr", "world_tfw", "pam", "msk", "vrt_ovr", "aaigrid",
            "zip_tif", "zarrv2"]


@pytest.mark.parametrize("name", params(RASTERIO, RASTERIO_XFAIL))
def test_rasterio(lab, cases, pairs, name):
    c = cases[name]
    stock, vt = pairs.both(name, "rasterio", [{"op": "rasterio", "path": c.path}])
    assert_ok(stock, name)
    assert_same(stock, vt, f"rasterio {name}")


@pytest.mark.parametrize("name", params(["zarrv2", "zarrv3"], ZARR_XFAIL))
def test_zarr_multidim(lab, cases, pairs, name):
    c = cases[name]
    stock, vt = pairs.both(name, "mdim", [{"op": "mdim", "path": c.path},
                                         {"op": "raster", "path": f'ZARR:"{c.path}"'}])
    assert_ok(stock, name)
    assert stock[0]["value"] is not None, stock
    assert_same(stock, vt, f"zarr multidim {name}")


# -- the command-line tools that write a file, and a mosaic of S3 sources ----------------
CLI = {
    "gdal_translate": ["gdal_translate", "-q", "-outsize", "12.5%", "12.5%"],
    "gdalwarp": ["gdalwarp", "-q", "-ts", "64", "64", "-t_srs", "EPSG:4326", "-multi",
                 "-wo", "NUM_THREADS=2"],
}
CLI_CASES = ["cog", "tiled_ovr", "world_tfw", "vrt_ovr", "msk"]
CLI_XFAIL = {(t, c): RASTER_XFAIL[c] for t in CLI for c in CLI_CASES
             if c in RASTER_XFAIL and (t, c) != ("gdal_translate", "msk")}  # no mask applied


def _out(path):
    from osgeo import gdal
    ds = gdal.Open(str(path))
    if ds is None:
        return None
    return {"size": [ds.RasterXSize, ds.RasterYSize, ds.RasterCount],
            "gt": list(ds.GetGeoTransform()), "srs": ds.GetProjectionRef(),
            "checksums": [ds.GetRasterBand(i + 1).Checksum() for i in range(ds.RasterCount)]}


@pytest.mark.parametrize("tool,name", [
    pytest.param(t, c, id=f"{t}-{c}", marks=[xfail(CLI_XFAIL[(t, c)])] if (t, c) in CLI_XFAIL else [])
    for t in CLI for c in CLI_CASES])
def test_cli_writes(lab, cases, tmp_path, tool, name):
    """gdal_translate / gdalwarp from /vsis3/ to a local file: exit status, errors and the
    output's size, georeferencing and checksums."""
    from parity import tool as run_tool
    c = cases[name]
    res = {}
    for vsitune in (False, True):
        side = "vsitune" if vsitune else "stock"
        out = tmp_path / f"{side}.tif"
        r = run_tool(lab, CLI[tool] + [c.path, str(out)], vsitune)
        r["output"] = _out(out) if r["rc"] == 0 else None
        res[side] = r
    assert res["stock"]["rc"] == 0, res["stock"]
    assert_same(res["stock"], res["vsitune"], f"{tool} {name}")


def test_buildvrt_of_s3_sources(lab, cases, pairs):
    """A mosaic of /vsis3/ tiles built and read in one process (gdalbuildvrt's library)."""
    srcs = [cases["vrt_ovr"].s3("vrt/left.tif"), cases["vrt_ovr"].s3("vrt/right.tif"),
            cases["cog"].path]
    stock, vt = pairs.both("buildvrt", "mosaic", [
        {"op": "buildvrt", "sources": srcs[:2]},
        {"op": "buildvrt", "sources": srcs, "options": ["-separate"]}])
    assert_ok(stock, "buildvrt")
    assert stock[0]["value"] is not None, stock
    assert_same(stock, vt, "gdal.BuildVRT of /vsis3/ sources")


@pytest.mark.parametrize("name", ["cog", "cog_aux", "striped", "tiled_ovr", "world_tfw", "pam"])
def test_raster_empty_dir(lab, cases, pairs, name):
    """The common tuned setting GDAL_DISABLE_READDIR_ON_OPEN=EMPTY_DIR: GDAL then looks for
    no sidecar, so the plugin must give exactly the same answers."""
    c = cases[name]
    probes = [p for p in raster_probes(c) if p["op"] in ("raster", "translate", "warp")]
    stock, vt = pairs.both(name, "raster-empty-dir", probes,
                           extra={"GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR"})
    assert_ok(stock, name)
    assert_same(stock, vt, f"{name} with EMPTY_DIR")


AUX_AFTER = ('<PAMDataset><Metadata><MDI key="WRITTEN">after the listing</MDI></Metadata>'
             '</PAMDataset>\n')


def test_listed_directory_answers_siblings(lab, cases):
    """A directory GDAL listed (the user's gdal.ReadDir here; GTiff's own listing on 3.6
    and 3.10) is the sibling answer of the files in it, as stock GDAL's open reuses its
    listing: the same answers with no LIST per file (two plain tiled TIFFs, not COGs, so
    the plugin would list their stems). A sidecar written there afterwards is seen by
    both (the write forgets the listing)."""
    c = cases["vrt_ovr"]
    left, right = c.s3("vrt/left.tif"), c.s3("vrt/right.tif")
    probes = [{"op": "readdir", "path": c.dir},
              {"op": "raster", "path": left, "checksums": False},
              {"op": "raster", "path": right, "checksums": False},
              {"op": "write", "path": left + ".aux.xml", "data": AUX_AFTER},
              {"op": "raster", "path": left, "checksums": False}]
    res, lists = {}, {}
    for side, vsitune in (("stock", False), ("vsitune", True)):
        seq = last_seq(lab)
        r, rc = one_side(lab, vsitune, probes)
        log = lab.log(since=seq)
        undo_writes(lab, writes_since(lab, seq))
        res[side] = r + [{"op": "process", "rc": rc}]
        # the LISTs made before the write (the three probes that only read)
        first_put = next(i for i, e in enumerate(log) if e["method"] == "PUT")
        lists[side] = sum(1 for e in log[:first_put] if e["kind"] == "LIST")
    assert_ok(res["stock"], "readdir then open")
    assert "after the listing" in str(res["stock"][4]["value"]), res["stock"][4]
    assert_same(res["stock"], res["vsitune"], "readdir, open, write a sidecar, open")
    assert lists["vsitune"] <= lists["stock"], lists
