"""test_vsitune_counts.py: issue 3's request-count acceptance, and registration.

A cold read (fresh process) of one pixel through vsitune costs exactly the header
GET and one tile GET (0 LIST, 0 HEAD), gdalinfo exactly the header GET; stock GDAL
3.6.2, run in the same test against the same lab, costs LIST + 2 GETs and LIST + 1
GET. Checked over every lab endpoint (h1, h2 over TLS, http/1.1 over TLS) on both
fixture COGs, from the lab's request log. Then registration: loading twice is
harmless, the driver is listed, and VSITUNE_TAKEOVER=NO leaves /vsis3/ stock while
/vsitune/ reads through the plugin.
"""

import pytest

import lab_client
from test_vsitune_helpers import (PY, VT_UA, Worker, by_vsitune, kinds, last_seq, not_by_vsitune,
                                  run_local, s3path, sigcheck)  # noqa: F401 (autouse fixture)

ENDPOINTS = ["h1", "h2", "h1tls"]
# A pixel inside the data swath (left of the diagonal edge is nodata) of each fixture.
POINT = {"small": (1500, 700), "s2": (8000, 3000)}


def _value(cp):
    assert cp.returncode == 0, cp.stderr
    return cp.stdout.strip()


def _check_vsitune_reads(log, cog, n):
    """n GET_RANGEs by vsitune: the first is the header (from byte 0), the later
    ones pinned to the ETag the first saw."""
    assert kinds(log) == ["GET_RANGE"] * n, [(e["kind"], e["range"]) for e in log]
    assert all(e["user_agent"].startswith(VT_UA) for e in log), [e["user_agent"] for e in log]
    assert all(e["status"] == 206 and e["key"] == cog["key"] for e in log), log
    assert log[0]["range"].startswith("bytes=0-"), log[0]
    assert all(e["if_match"] == cog["etag"] for e in log[1:]), [e["if_match"] for e in log]


@pytest.mark.parametrize("name", ["small", "s2"])
@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_cold_locationinfo_two_requests(lab, gdal, cogs, endpoint, name):
    cog = cogs[name]
    x, y = POINT[name]
    args = ["gdallocationinfo", "-valonly", s3path(cog), x, y]
    want = _value(run_local(["gdallocationinfo", "-valonly", cog["path"], x, y]))
    assert want not in ("", "0")

    stock, _ = gdal.run(args, endpoint=endpoint)
    stock_log = lab.log()
    mark = last_seq(lab)
    vt, _ = gdal.run(args, endpoint=endpoint, vsitune=True)
    vt_log = lab.log(since=mark)

    assert _value(stock) == want and _value(vt) == want
    assert kinds(stock_log) == ["LIST", "GET_RANGE", "GET_RANGE"], \
        [(e["kind"], e["range"]) for e in stock_log]
    _check_vsitune_reads(vt_log, cog, 2)
    assert all(e["endpoint"] == endpoint for e in stock_log + vt_log)


@pytest.mark.parametrize("name", ["small", "s2"])
@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_cold_gdalinfo_one_request(lab, gdal, cogs, endpoint, name):
    cog = cogs[name]
    size = 10980 if name == "s2" else 2048
    stock, _ = gdal.run(["gdalinfo", s3path(cog)], endpoint=endpoint)
    stock_log = lab.log()
    mark = last_seq(lab)
    vt, _ = gdal.run(["gdalinfo", s3path(cog)], endpoint=endpoint, vsitune=True)
    vt_log = lab.log(since=mark)

    for cp in (stock, vt):
        assert cp.returncode == 0, cp.stderr
        assert f"Size is {size}, {size}" in cp.stdout
    # Same answer, apart from nothing: gdalinfo prints the same report.
    assert vt.stdout == stock.stdout
    assert kinds(stock_log) == ["LIST", "GET_RANGE"], [(e["kind"], e["range"]) for e in stock_log]
    _check_vsitune_reads(vt_log, cog, 1)


# -- registration ----------------------------------------------------------------
def test_all_register_twice_still_two_requests(lab, small_cog):
    x, y = POINT["small"]
    want = int(_value(run_local(["gdallocationinfo", "-valonly", small_cog["path"], x, y])))
    with Worker(lab) as w:
        got = w.call("gdal.AllRegister(); gdal.AllRegister()\n"
                     "ds = gdal.Open(path)\n"
                     "result = [gdal.GetDriverByName('VSITUNE') is not None,\n"
                     "          int(ds.GetRasterBand(1).ReadAsArray(x, y, 1, 1)[0][0])]",
                     path=s3path(small_cog), x=x, y=y)
    assert got == [True, want]
    log = lab.log()
    _check_vsitune_reads(log, small_cog, 2)


def test_formats_lists_vsitune(gdal, lab):
    vt, _ = gdal.run(["gdalinfo", "--formats"], vsitune=True)
    stock, _ = gdal.run(["gdalinfo", "--formats"])
    assert vt.returncode == 0 and stock.returncode == 0
    assert "VSITUNE" in vt.stdout
    assert "VSITUNE" not in stock.stdout
    assert lab.log() == []  # registering costs no request


def test_takeover_no_keeps_stock_vsis3(lab, gdal, small_cog):
    extra = {"VSITUNE_TAKEOVER": "NO"}
    stock, _ = gdal.run(["gdalinfo", s3path(small_cog)], vsitune=True, extra=extra)
    stock_log = lab.log()
    mark = last_seq(lab)
    vt, _ = gdal.run(["gdalinfo", f"/vsitune/lab/{small_cog['key']}"], vsitune=True, extra=extra)
    vt_log = lab.log(since=mark)
    assert stock.returncode == 0, stock.stderr
    assert vt.returncode == 0, vt.stderr
    assert "Size is 2048, 2048" in stock.stdout and "Size is 2048, 2048" in vt.stdout
    # /vsis3/ is GDAL's own: its LIST, its User-Agent, nothing from vsitune.
    assert kinds(stock_log) == ["LIST", "GET_RANGE"]
    assert by_vsitune(stock_log) == []
    # /vsitune/ is the plugin: one header GET.
    _check_vsitune_reads(vt_log, small_cog, 1)
    assert not_by_vsitune(vt_log) == []


def test_takeover_no_vsitune_prefix_pixel(lab, gdal, small_cog):
    x, y = POINT["small"]
    want = _value(run_local(["gdallocationinfo", "-valonly", small_cog["path"], x, y]))
    vt, _ = gdal.run(["gdallocationinfo", "-valonly", f"/vsitune/lab/{small_cog['key']}", x, y],
                     vsitune=True, extra={"VSITUNE_TAKEOVER": "NO"})
    assert _value(vt) == want
    _check_vsitune_reads(lab.log(), small_cog, 2)


def test_plugin_is_built():
    # Guards the rest of this file: without the plugin the tests above skip.
    assert lab_client.plugin_built(), f"gdal_vsitune.so not found in {lab_client.plugin_dir()}"


# The variables users set to "tune" stock GDAL (seed 001); VSI_CACHE=TRUE costs
# stock GDAL 3.6.2 an extra bytes=16384-32767 GET on every open.
TUNED = {"GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR", "VSI_CACHE": "TRUE",
         "GDAL_HTTP_MULTIPLEX": "YES", "GDAL_HTTP_VERSION": "2",
         "CPL_VSIL_CURL_ALLOWED_EXTENSIONS": ".tif", "GDAL_HTTP_MERGE_CONSECUTIVE_RANGES": "YES"}


@pytest.mark.parametrize("endpoint", ["h1", "h2"])
def test_tuned_settings_still_two_requests(lab, gdal, small_cog, endpoint):
    x, y = POINT["small"]
    args = ["gdallocationinfo", "-valonly", s3path(small_cog), x, y]
    want = _value(run_local(["gdallocationinfo", "-valonly", small_cog["path"], x, y]))
    stock, _ = gdal.run(args, endpoint=endpoint, extra=TUNED)
    stock_log = lab.log()
    mark = last_seq(lab)
    vt, _ = gdal.run(args, endpoint=endpoint, vsitune=True, extra=TUNED)
    assert _value(stock) == want and _value(vt) == want
    assert kinds(stock_log) == ["GET_RANGE"] * 3  # 0-16383, 16384-32767, the tile
    _check_vsitune_reads(lab.log(since=mark), small_cog, 2)


@pytest.mark.parametrize("x,y", [(1500, 700), (2040, 2040)])
def test_tile_index_past_the_prefetch(lab, gdal, small_cog, tmp_path, x, y):
    # 16x16 tiles: 16384 tiles, a 128 KiB tile index, twice the header GET.
    # GDAL reads the index lazily; vsitune must fetch what it asks for past the
    # prefetch, and never more requests than stock GDAL less its LIST.
    cog = tmp_path / "b16.tif"
    # (GDAL warns that BLOCKSIZE < 128 is unusual, and writes it.)
    run_local(["gdal_translate", "-q", "-of", "COG", "-co", "BLOCKSIZE=16", "-co", "COMPRESS=DEFLATE",
               small_cog["path"], cog])
    lab.put_object("lab", "big-header/b16.tif", cog)
    want = _value(run_local(["gdallocationinfo", "-valonly", cog, x, y]))
    args = ["gdallocationinfo", "-valonly", "/vsis3/lab/big-header/b16.tif", x, y]
    stock, _ = gdal.run(args)
    stock_log = lab.log()
    mark = last_seq(lab)
    vt, _ = gdal.run(args, vsitune=True)
    vt_log = lab.log(since=mark)
    assert _value(stock) == want and _value(vt) == want
    assert kinds(stock_log)[0] == "LIST"
    assert set(kinds(vt_log)) == {"GET_RANGE"} and not_by_vsitune(vt_log) == []
    assert 2 <= len(vt_log) <= len(stock_log) - 1, ([e["range"] for e in stock_log],
                                                     [e["range"] for e in vt_log])


RASTERIO_PIXEL = r'''
import sys
import rasterio
from rasterio.windows import Window
with rasterio.open(sys.argv[1]) as ds:
    print(int(ds.read(1, window=Window(int(sys.argv[2]), int(sys.argv[3]), 1, 1))[0][0]))
'''


@pytest.mark.parametrize("endpoint", ["h1", "h2"])
def test_rasterio_cold_pixel_two_requests(lab, gdal, small_cog, endpoint):
    # rasterio registers GDAL's drivers twice and maps s3:// to /vsis3/: with
    # only GDAL_DRIVER_PATH added, one pixel costs the same 2 GETs.
    x, y = POINT["small"]
    want = _value(run_local(["gdallocationinfo", "-valonly", small_cog["path"], x, y]))
    args = [PY, "-c", RASTERIO_PIXEL, f"s3://lab/{small_cog['key']}", x, y]
    stock, _ = lab_client.run_tool(args, gdal.env(endpoint))
    stock_log = lab.log()
    mark = last_seq(lab)
    vt, _ = lab_client.run_tool(args, gdal.env(endpoint, vsitune=True))
    assert _value(stock) == want and _value(vt) == want
    # Stock: LIST + 2 GETs over h1; over h2 (TLS) it was measured repeating its
    # 16 KB header GET 8 times and listing nothing. Either way, more than 2.
    if endpoint == "h1":
        assert kinds(stock_log) == ["LIST", "GET_RANGE", "GET_RANGE"]
    assert len(stock_log) >= 3
    _check_vsitune_reads(lab.log(since=mark), small_cog, 2)
