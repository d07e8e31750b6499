"""test_mosaic_near.py: a mosaic's COGs in one directory, one request each (issue 22).

A tile server's mosaic opens many COGs of one directory and reads, right after each
header, a block of a low-resolution overview, which a COG keeps just past its header.
vsitune learns per directory how far the first read past VSITUNE_HEADER_SIZE of the
objects opened last went (read/near.c) and asks the next object's first GET for those
bytes too: header and overview block in one request. Read from the lab's log (what the
server saw), beside stock GDAL running the same reads in its own process (pixels equal):

- near: 2048x2048 COGs whose smallest (512-pixel) overview ends between 64 and 256 KiB: the first
  object costs 2 GETs (64 KiB, then the overview's block), every later one 1;
- a COG of the same directory whose overview lies further than what was learned still
  reads right, with one more request;
- far: objects whose first read past the header is full-resolution data megabytes in
  teach nothing: every first GET stays VSITUNE_HEADER_SIZE;
- VSITUNE_FIRST_READ_MAX=0: as before, every first GET VSITUNE_HEADER_SIZE;
- a STAC catalog's layout, each COG in an item directory of its own under the same
  asset name: a directory never seen asks what the same name taught in the bucket's
  other directories (read/hdrsize.h, the family), so again the first item costs 2
  GETs and every later one 1; the same when each file is named after its item and
  then the asset (Landsat's <item>/<item>_SR_B4.TIF); named apart, each item's first
  GET stays 64 KiB.
"""

import json
import re
import subprocess
import uuid

import numpy as np
import pytest
from osgeo import gdal

import lab_client
import plugin_defaults
from parity import VT_UA

pytestmark = pytest.mark.skipif(not lab_client.plugin_built(), reason="plugin not built")

PY = "/usr/bin/python3"
KIB = 1024
N = 6

# One child per side: open each COG in turn (as a VRT's sources are opened) and read
# the 256x256 overview of its whole extent (nearest, GDAL picking the level), or with
# "far" a 512x512 full-resolution window at the bottom right; prints the pixels' sums.
CHILD = r"""
import json, sys
from osgeo import gdal
gdal.UseExceptions()
names, mode = json.loads(sys.argv[1]), sys.argv[2]
out = []
for n in names:
    ds = gdal.Open(n)
    b = ds.GetRasterBand(1)
    if mode == "far":
        buf = b.ReadRaster(1536, 1536, 512, 512)
    else:
        buf = b.ReadRaster(0, 0, ds.RasterXSize, ds.RasterYSize, 256, 256)
    out.append(sum(memoryview(buf).cast("H")))
    ds = None
print(json.dumps(out))
"""


def _cog(path, seed, noise):
    """A 2048x2048 UInt16 DEFLATE COG, 512-pixel tiles, overviews: a smooth field plus
    `noise` (larger: a larger overview, further from the header)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:2048, 0:2048]
    a = (1000 + 500 * np.sin(x / 97.0 + seed) * np.cos(y / 131.0)).astype(np.int64)
    a += rng.integers(0, noise + 1, size=a.shape)
    mem = gdal.GetDriverByName("MEM").Create("", 2048, 2048, 1, gdal.GDT_UInt16)
    mem.SetGeoTransform([0, 10, 0, 0, 0, -10])
    mem.GetRasterBand(1).WriteArray(a.astype(np.uint16))
    gdal.Translate(str(path), mem, format="COG",
                   creationOptions=["COMPRESS=DEFLATE", "PREDICTOR=2", "BLOCKSIZE=512"])


def _overview_end(path):
    """Where the smallest overview (the one a 256x256 read of the whole extent
    uses) ends, and the file's size."""
    ds = gdal.Open(str(path))
    b = ds.GetRasterBand(1)
    ov = b.GetOverview(b.GetOverviewCount() - 1)
    bx, by = ov.GetBlockSize()
    end = 0
    for j in range((ov.YSize + by - 1) // by):
        for i in range((ov.XSize + bx - 1) // bx):
            off = int(ov.GetMetadataItem(f"BLOCK_OFFSET_{i}_{j}", "TIFF"))
            end = max(end, off + int(ov.GetMetadataItem(f"BLOCK_SIZE_{i}_{j}", "TIFF")))
    return end, path.stat().st_size


@pytest.fixture(scope="module")
def cog_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("near")
    near = [d / f"near_{i}.tif" for i in range(N)]
    for i, p in enumerate(near):
        _cog(p, i, 3)
    wide = d / "wide.tif"
    _cog(wide, 99, 4000)
    return near, wide


def _upload(lab, files, prefix):
    for p in files:
        lab.put_object("lab", f"{prefix}/{p.name}", str(p))
    return [f"/vsis3/lab/{prefix}/{p.name}" for p in files]


def _run(lab, names, mode, vsitune, extra=None, full_keys=False):
    """One side's run: (pixel sums, the GETs the lab saw, by file name, or with
    full_keys by key, in order)."""
    seq = lab.log()[-1]["seq"] if lab.log() else 0
    env = lab_client.gdal_env(lab.env("h1"), vsitune=vsitune, extra=extra)
    cp = subprocess.run([PY, "-c", CHILD, json.dumps(names), mode], env=env,
                        capture_output=True, text=True, timeout=300)
    assert cp.returncode == 0, cp.stderr[-2000:]
    log = [e for e in lab.log(since=seq) if e["key"]]
    if vsitune:
        assert log and all((e["user_agent"] or "").startswith(VT_UA) for e in log), \
            "the plugin did not serve /vsis3/"
    gets = {}
    for e in log:
        assert e["method"] == "GET", e
        k = e["key"] if full_keys else e["key"].rsplit("/", 1)[-1]
        gets.setdefault(k, []).append(e["range"])
    return json.loads(cp.stdout), gets


def test_near_overview_one_request_per_object(lab, cog_files):
    near, wide = cog_files
    for p in near:
        end, size = _overview_end(p)
        # the premise: past the 64 KiB header read, within 256 KiB, in a larger file
        assert 64 * KIB < end <= 192 * KIB < size, (p.name, end, size)
    wend, _ = _overview_end(wide)
    assert wend > 256 * KIB, wend
    prefix = f"near-{uuid.uuid4().hex[:8]}"
    names = _upload(lab, near + [wide], prefix)
    stock, _ = _run(lab, names, "near", vsitune=False)
    vt, gets = _run(lab, names, "near", vsitune=True)
    assert vt == stock
    first = gets[near[0].name]
    assert first[0] == "bytes=0-65535" and len(first) == 2, first
    bs = plugin_defaults.block_size_default()
    for p in near[1:]:
        # header and overview block in one GET, block-rounded, within 256 KiB
        assert len(gets[p.name]) == 1, (p.name, gets[p.name])
        m = re.fullmatch(r"bytes=0-(\d+)", gets[p.name][0])
        assert m, gets[p.name]
        reach = int(m.group(1)) + 1
        assert reach % bs == 0 and _overview_end(p)[0] <= reach <= 256 * KIB, \
            (gets[p.name], _overview_end(p), bs)
    # further than learned: one more request, pixels still stock's
    assert len(gets[wide.name]) == 2, gets[wide.name]
    assert sum(len(v) for v in gets.values()) == N + 1 + 2


def test_far_reads_teach_nothing(lab, cog_files):
    near, _ = cog_files
    prefix = f"far-{uuid.uuid4().hex[:8]}"
    names = _upload(lab, near, prefix)
    stock, _ = _run(lab, names, "far", vsitune=False)
    # the learned header size off (hdrsize.h: it would shrink the later first GETs)
    vt, gets = _run(lab, names, "far", vsitune=True, extra={"VSITUNE_HEADER_LEARN": "NO"})
    assert vt == stock
    for p in near:
        assert gets[p.name][0] == "bytes=0-65535", (p.name, gets[p.name])


def test_option_off(lab, cog_files):
    near, _ = cog_files
    prefix = f"off-{uuid.uuid4().hex[:8]}"
    names = _upload(lab, near, prefix)
    vt, gets = _run(lab, names, "near", vsitune=True,
                    extra={"VSITUNE_FIRST_READ_MAX": "0"})
    stock, _ = _run(lab, names, "near", vsitune=False)
    assert vt == stock
    for p in near:
        assert gets[p.name][0] == "bytes=0-65535" and len(gets[p.name]) == 2, \
            (p.name, gets[p.name])


def test_stac_items_learn_from_the_same_asset_name(lab, cog_files):
    near, _ = cog_files
    prefix = f"stac-{uuid.uuid4().hex[:8]}"
    same, after_item, apart = [], [], []
    for i, p in enumerate(near):
        # Sentinel-2 on AWS: every item's asset named alike
        same.append(f"{prefix}/items/S2_{i}/B04.tif")
        # Landsat, HLS: each file named after its item, then the asset
        after_item.append(f"{prefix}/scenes/LC08_{i}_T1/LC08_{i}_T1_SR_B4.TIF")
        # named apart
        apart.append(f"{prefix}/other/S2_{i}/B04_{i}.tif")
        for k in (same[-1], after_item[-1], apart[-1]):
            lab.put_object("lab", k, str(p))
    bs = plugin_defaults.block_size_default()
    for keys, learns in ((same, True), (after_item, True), (apart, False)):
        names = [f"/vsis3/lab/{k}" for k in keys]
        stock, _ = _run(lab, names, "near", vsitune=False)
        vt, gets = _run(lab, names, "near", vsitune=True, full_keys=True)
        assert vt == stock
        assert gets[keys[0]][0] == "bytes=0-65535" and len(gets[keys[0]]) == 2, \
            gets[keys[0]]
        for k, p in zip(keys[1:], near[1:]):
            if not learns:
                # nothing carries over between names: 64 KiB, then the overview
                assert gets[k][0] == "bytes=0-65535" and len(gets[k]) == 2, (k, gets[k])
                continue
            assert len(gets[k]) == 1, (k, gets[k])
            m = re.fullmatch(r"bytes=0-(\d+)", gets[k][0])
            assert m, gets[k]
            reach = int(m.group(1)) + 1
            assert reach % bs == 0 and _overview_end(p)[0] <= reach <= 256 * KIB, \
                (k, gets[k], _overview_end(p), bs)
        assert sum(len(v) for v in gets.values()) == (N + 1 if learns else 2 * N)
