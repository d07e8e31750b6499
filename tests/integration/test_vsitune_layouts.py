"""test_vsitune_layouts.py: files that are not COGs still read right, and in no more
requests than stock GDAL needs, in the same run: a striped TIFF (a whole-file read
through multi-range calls), a COG inside a zip (/vsizip/ over /vsis3/: near-sequential
reads that skip each tile's leader and trailer), and an object with no extension.
"""

import os
import subprocess
import tempfile
import zipfile

import pytest
from osgeo import gdal

import lab_client
from parity import assert_served, tool_served_failures

CHECKSUMS = r'''
import sys
from osgeo import gdal
gdal.UseExceptions()
ds = gdal.Open(sys.argv[1])
print(" ".join(str(ds.GetRasterBand(i + 1).Checksum()) for i in range(ds.RasterCount)))
'''


def checksums(lab, path, vsitune):
    env = lab_client.gdal_env(lab.env("h1"), vsitune=vsitune)
    with tempfile.TemporaryDirectory() as d:
        env["VSITUNE_STATS_FILE"] = os.path.join(d, "exit.json")  # what served it
        cp = subprocess.run(["/usr/bin/python3", "-c", CHECKSUMS, path], env=env,
                            capture_output=True, text=True, timeout=300)
        assert cp.returncode == 0, cp.stderr[-2000:]
        assert_served(tool_served_failures(None, vsitune, env, None, env["VSITUNE_STATS_FILE"]))
    return cp.stdout.strip()


@pytest.fixture(scope="module")
def layouts(lab, small_cog, tmp_path_factory):
    d = tmp_path_factory.mktemp("layouts")
    gdal.UseExceptions()
    src = gdal.Open(small_cog["path"])
    striped = d / "striped.tif"
    gdal.Translate(str(striped), src, creationOptions=["TILED=NO", "COMPRESS=LZW",
                                                       "BLOCKYSIZE=16"])
    zipped = d / "scene.zip"
    with zipfile.ZipFile(zipped, "w") as z:  # stored: GDAL reads it in place
        z.write(small_cog["path"], "inner/scene.tif")
    lab.put_object("lab", "layouts/striped.tif", striped)
    lab.put_object("lab", "layouts/scene.zip", zipped)
    lab.put_object("lab", "layouts/B04", striped)
    return {
        "striped": ("/vsis3/lab/layouts/striped.tif", str(striped)),
        "zip": ("/vsizip//vsis3/lab/layouts/scene.zip/inner/scene.tif",
                f"/vsizip/{zipped}/inner/scene.tif"),
        "noext": ("/vsis3/lab/layouts/B04", str(striped)),
    }


@pytest.mark.parametrize("name", ["striped", "zip", "noext"])
def test_layout_reads_exact_in_fewer_requests(lab, layouts, name):
    remote, local = layouts[name]
    lab.reset()
    stock = checksums(lab, remote, vsitune=False)
    stock_requests = lab.counts()["total"]
    lab.reset()
    ours = checksums(lab, remote, vsitune=True)
    log = lab.log()
    want = checksums(lab, local, vsitune=False)
    assert ours == want == stock
    # not COGs: GDAL's sibling question costs one LIST scoped to the stem
    # (stock GDAL lists the whole directory)
    lists = [e["query"] for e in log if e["kind"] == "LIST"]
    assert len(lists) <= 1 and all("max-keys=1000&prefix=layouts%2F" in q and
                                   not q.endswith("%2F") for q in lists), lists
    assert all(e["sig"] == "ok" for e in log)
    assert 0 < len(log) <= stock_requests, (len(log), stock_requests)


EDGE = r'''
import sys
from osgeo import gdal
gdal.UseExceptions()
p = sys.argv[1]
st = gdal.VSIStatL(p)
f = gdal.VSIFOpenL(p, "rb")
n = len(gdal.VSIFReadL(1, 100, f))
gdal.VSIFCloseL(f)
err = None
gdal.DontUseExceptions()  # read the error as GDAL reports it
gdal.PushErrorHandler("CPLQuietErrorHandler")
if gdal.Open(p) is None:
    err = gdal.GetLastErrorMsg()
print(st.size, n, err)
'''


@pytest.mark.parametrize("name,data,size,n", [
    ("empty", b"", 0, 0),
    ("garbage", b"not a tiff" * 100, 1000, 100),
])
def test_edge_objects_fail_like_stock(lab, name, data, size, n):
    # S3 answers a range on an empty object with 416: vsitune treats it as size 0.
    lab.put_object("lab", f"edge/{name}.tif", data)

    def run(vsitune):
        env = lab_client.gdal_env(lab.env("h1"), vsitune=vsitune)
        cp = subprocess.run(["/usr/bin/python3", "-c", EDGE, f"/vsis3/lab/edge/{name}.tif"],
                            env=env, capture_output=True, text=True, timeout=120)
        assert cp.returncode == 0, cp.stderr[-2000:]
        got_size, got_n, err = cp.stdout.strip().split(" ", 2)
        return int(got_size), int(got_n), err

    stock = run(False)
    mark = max([e["seq"] for e in lab.log()] or [0])
    vt = run(True)
    assert vt == stock  # the same size, bytes and error message (its words vary by release)
    assert vt[:2] == (size, n) and "supported file format" in vt[2]
    # the header GET answered everything but GDAL's sibling question (not a
    # COG: one LIST scoped to the stem, where stock GDAL lists the directory)
    log = lab.log(since=mark)
    assert [e["kind"] for e in log] == ["GET_RANGE", "LIST"], log
    assert log[1]["query"].endswith(f"prefix=edge%2F{name}")
