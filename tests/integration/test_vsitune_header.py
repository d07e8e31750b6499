"""test_vsitune_header.py: the first GET of an object sized by what its prefix's files
need (issue 22, VSITUNE_HEADER_LEARN; read/hdrsize.c, read/tiffmap.c).

Four COGs of one layout (2048x2048 Byte, 512-pixel tiles, 1-bit noise: ~600 KB each, far
larger than the 64 KiB first read and a cache block) and one of another layout with a
larger header (64-pixel tiles: ~11 KB of IFDs and tile arrays) under one prefix,
opened one after another by one process. From the lab's request log: the first open
asks VSITUNE_HEADER_SIZE (bytes=0-65535); the next ones ask fewer bytes, still at
least their header; the larger-header file in the same prefix costs exactly one more
request (at open, or at its first tile read: GDAL reads tile arrays lazily) and
reads the same as stock GDAL (gdalinfo's JSON and every band's
checksum, measured beside it with the plugin not loaded); the next open after it asks
enough for it; VSITUNE_HEADER_LEARN=NO keeps every first GET at 64 KiB. Checked on
every lab endpoint kind that matters for the first read (h1, and the S3-like HTTPS
HTTP/1.1 front).
"""

import json
import subprocess

import pytest

import lab_client
from test_shared_cache import pool, shared  # noqa: F401 (fixture)
from test_vsitune_helpers import PY, Worker, by_vsitune, last_seq, sigcheck  # noqa: F401

PREFIX = "hdr/learn"
MAKE = r'''
import json, sys
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
out, block, seed, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(seed)
mem = gdal.GetDriverByName("MEM").Create("", 2048, 2048, 1, gdal.GDT_Byte)
mem.SetGeoTransform([600000.0, 10.0, 0.0, 5100000.0, 0.0, -10.0])
mem.GetRasterBand(1).WriteArray(rng.integers(0, top, (2048, 2048), dtype=np.uint8))
gdal.Translate(out, mem, format="COG",
               creationOptions=["COMPRESS=DEFLATE", f"BLOCKSIZE={block}"])
ds = gdal.Open(out)
b = ds.GetRasterBand(1)
offs = [int(lv.GetMetadataItem("BLOCK_OFFSET_0_0", "TIFF"))
        for lv in [b] + [b.GetOverview(i) for i in range(b.GetOverviewCount())]]
lv = b.GetOverview(b.GetOverviewCount() - 1)
small_end = (int(lv.GetMetadataItem("BLOCK_OFFSET_0_0", "TIFF")) +
             int(lv.GetMetadataItem("BLOCK_SIZE_0_0", "TIFF")))
print(json.dumps({"header": min(offs), "small_end": small_end}))
'''
INFO = r'''
import json
res = {}
for p in paths:
    ds = gdal.Open(p)
    info = gdal.Info(ds, format="json")
    info = json.loads(info) if isinstance(info, str) else info
    res[p] = {"info": info, "cks": [ds.GetRasterBand(i + 1).Checksum()
                                    for i in range(ds.RasterCount)]}
    ds = None
result = res
'''


@pytest.fixture(scope="module")
def layouts(lab, tmp_path_factory):
    """a0..a3 (512-pixel tiles) and b (64-pixel tiles) in lab/PREFIX/; the header
    bytes (where the first tile's data starts) of each layout."""
    d = tmp_path_factory.mktemp("hdr")
    env = lab_client.gdal_env({}, vsitune=False)
    out = {}
    for name, block, seed in [("a0", 512, 1), ("a1", 512, 2), ("a2", 512, 3), ("a3", 512, 4),
                              ("b", 64, 5)]:
        path = d / f"{name}.tif"
        cp = subprocess.run([PY, "-c", MAKE, str(path), str(block), str(seed), "2"], env=env,
                            capture_output=True, text=True, timeout=300, check=True)
        made = json.loads(cp.stdout)
        size = path.stat().st_size
        assert size > 500_000, size
        lab.put_object("lab", f"{PREFIX}/{name}.tif", path)
        out[name] = {"path": str(path), "header": made["header"], "size": size,
                     "small_end": made["small_end"], "s3": f"/vsis3/lab/{PREFIX}/{name}.tif"}
    assert out["b"]["header"] > 3 * out["a0"]["header"], out
    assert out["b"]["header"] < 65536, out
    return out


def _first_end(entries):
    """The last byte asked by the first GET of an object (bytes=0-N)."""
    rng = entries[0]["range"]
    assert rng.startswith("bytes=0-"), rng
    return int(rng.split("-")[1])


def _opens(lab, w, paths):
    """Open each path (gdalinfo + checksums) one after another; per key, the
    vsitune requests its open made."""
    got, logs = {}, {}
    for p in paths:
        mark = last_seq(lab)
        got.update(w.call(INFO, paths=[p], timeout=300))
        key = p.split("/vsis3/lab/")[1]
        logs[p] = [e for e in by_vsitune(lab.log(since=mark)) if e["key"] == key]
    return got, logs


def _info_only(lab, w, p):
    mark = last_seq(lab)
    w.call("ds = gdal.Open(p); md = ds.GetMetadata(); ds = None; result = 1", p=p)
    key = p.split("/vsis3/lab/")[1]
    return [e for e in by_vsitune(lab.log(since=mark)) if e["key"] == key]


@pytest.mark.parametrize("endpoint", ["h1", "h1tls"])
def test_header_learned_per_prefix(lab, layouts, endpoint):
    lab.reset()
    a = [layouts[n]["s3"] for n in ("a0", "a1", "a2")]
    with Worker(lab, endpoint=endpoint) as w:
        logs = [_info_only(lab, w, p) for p in a]
        # the first open of the prefix: VSITUNE_HEADER_SIZE
        assert len(logs[0]) == 1 and _first_end(logs[0]) == 65535, logs[0]
        # the next ones: one GET each, fewer bytes, still the whole header
        for lg in logs[1:]:
            assert len(lg) == 1, [(e["kind"], e["range"]) for e in lg]
            end = _first_end(lg)
            assert layouts["a0"]["header"] <= end + 1 < 65536, (end, layouts["a0"])
            assert lg[0]["bytes_sent"] == end + 1
        # a file of another layout, its header larger than learned: at most one
        # more GET (none when GDAL's open reads only its IFDs: its tile arrays
        # are read when a tile is)
        lb = _info_only(lab, w, layouts["b"]["s3"])
        assert len(lb) in (1, 2), [(e["kind"], e["range"]) for e in lb]
        assert _first_end(lb) + 1 < layouts["b"]["header"]
        # ... and the next open in the prefix asks enough for it
        la = _info_only(lab, w, layouts["a3"]["s3"])
        assert len(la) == 1 and _first_end(la) + 1 >= layouts["b"]["header"], la


def test_larger_header_reads_as_stock(lab, layouts):
    """Every file of the prefix opened after the others (the larger-header one
    last, so its first GET is the learned short one): what GDAL sees is what
    stock GDAL sees, and the local file's checksums."""
    lab.reset()
    paths = [layouts[n]["s3"] for n in ("a0", "a1", "a2", "b")]
    with Worker(lab, vsitune=False) as w:
        stock, _ = _opens(lab, w, paths)
    with Worker(lab) as w:
        vt, logs = _opens(lab, w, paths)
    assert _first_end(logs[paths[-1]]) + 1 < layouts["b"]["header"], logs[paths[-1]][0]
    for p in paths:
        assert vt[p] == stock[p], p
    env = lab_client.gdal_env({}, vsitune=False)
    local = subprocess.run(
        [PY, "-c", "import sys, json\nfrom osgeo import gdal\n"
         "ds = gdal.Open(sys.argv[1])\nprint(json.dumps(ds.GetRasterBand(1).Checksum()))",
         layouts["b"]["path"]], env=env, capture_output=True, text=True, check=True)
    assert vt[paths[-1]]["cks"] == [int(local.stdout)]


def test_learning_off(lab, layouts):
    lab.reset()
    with Worker(lab, extra={"VSITUNE_HEADER_LEARN": "NO"}) as w:
        for n in ("a0", "a1", "a2"):
            lg = _info_only(lab, w, layouts[n]["s3"])
            assert len(lg) == 1 and _first_end(lg) == 65535, lg


def test_shared_cache_serves_the_short_header(lab, layouts, pool):
    """With the host-wide cache, a process opening what another opened with a short
    (learned) first GET asks nothing: the head block is found in the segment
    (object_header.c vt__object_find_head), not refetched as a whole block."""
    lab.reset()
    env = shared(pool)
    names = ("a0", "a1", "a2")
    with Worker(lab, extra=env) as a, Worker(lab, extra=env) as b:
        logs = [_info_only(lab, a, layouts[n]["s3"]) for n in names]
        assert all(_first_end(lg) + 1 < 65536 for lg in logs[1:]), logs
        for n in names:
            assert _info_only(lab, b, layouts[n]["s3"]) == [], n


def test_reads_past_the_head_are_learned(lab, layouts):
    """A tile read inside the first 64 KiB but past a short first GET (the smallest
    overview's tile, which a COG stores right after its header) costs the one GET of
    its block, once: the prefix's next open asks up to its end, so reading that
    tile of the next file costs no request beyond its header GET."""
    assert layouts["a0"]["small_end"] < 65536, layouts["a0"]
    lab.reset()
    read = ("ds = gdal.Open(p); b = ds.GetRasterBand(1)\n"
            "ov = b.GetOverview(b.GetOverviewCount() - 1)\n"
            "result = len(ov.ReadRaster(0, 0, ov.XSize, ov.YSize)); ds = None")
    with Worker(lab) as w:
        _info_only(lab, w, layouts["a0"]["s3"])
        for n, gets in (("a1", 2), ("a2", 1)):
            mark = last_seq(lab)
            w.call(read, p=layouts[n]["s3"])
            key = f"{PREFIX}/{n}.tif"
            lg = [e for e in by_vsitune(lab.log(since=mark)) if e["key"] == key]
            assert len(lg) == gets, (n, [e["range"] for e in lg])
        assert _first_end(lg) + 1 >= layouts["a2"]["small_end"], lg


EXACT = r'''
import random
data = open(local, "rb").read()
rng = random.Random(seed)
bad = []
f = gdal.VSIFOpenL(path, "rb")
for i in range(n):
    shape = rng.random()
    if shape < 0.4:                                  # inside the head
        off = rng.randrange(head); ln = rng.randint(1, head - off)
    elif shape < 0.7:                                # across the head's end
        off = rng.randrange(max(0, head - 2000), head); ln = rng.randint(1, 4000)
    elif shape < 0.85:                               # across the first block's end
        off = rng.randrange(65536 - 3000, 65536); ln = rng.randint(1, 6000)
    else:                                            # anywhere, some large
        off = rng.randrange(len(data)); ln = rng.randint(1, 300000)
    gdal.VSIFSeekL(f, off, 0)
    got = gdal.VSIFReadL(1, ln, f) or b""
    if got != data[off:off + ln]:
        bad.append([off, ln, len(got)])
gdal.VSIFCloseL(f)
multi = []
for i in range(40):
    rs = sorted((rng.randrange(head + 5000), rng.randint(1, 3000)) for _ in range(rng.randint(1, 6)))
    got = read_multi(path, rs)
    if got is None or any(g != data[o:o + ln] for g, (o, ln) in zip(got, rs)):
        multi.append(rs)
result = {"bad": bad[:10], "nbad": len(bad), "multi": multi[:5]}
'''


@pytest.mark.parametrize("cache", ["64M", "0"])
def test_short_head_reads_byte_exact(lab, layouts, cache):
    """Through a short (learned) first answer, 3,000 random reads and 40
    multi-range reads (inside it, across its end, across the first block's end,
    anywhere) equal the local file's bytes, with the default cache and with
    VSITUNE_CACHE_SIZE=0 (the head block kept only by the header ring)."""
    lab.reset()
    with Worker(lab, extra={"VSITUNE_CACHE_SIZE": cache}) as w:
        _info_only(lab, w, layouts["a0"]["s3"])
        lg = _info_only(lab, w, layouts["a1"]["s3"])
        head = _first_end(lg) + 1
        assert head < 65536
        got = w.call(EXACT, timeout=280, path=layouts["a1"]["s3"], local=layouts["a1"]["path"],
                     head=head, seed=7, n=3000)
    assert got["nbad"] == 0 and not got["multi"], got


def test_reload_with_a_longer_head(lab, layouts):
    """An object opened again (metadata TTL 0) after its prefix learned to ask more
    keeps the longer answer as its head: a read inside it costs no request (before,
    the shorter head block of the first load stayed and the read fetched a block)."""
    lab.reset()
    with Worker(lab, extra={"VSITUNE_METADATA_TTL": "0"}) as w:
        _info_only(lab, w, layouts["a0"]["s3"])
        first = _first_end(_info_only(lab, w, layouts["a1"]["s3"])) + 1
        _info_only(lab, w, layouts["b"]["s3"])  # its need is larger: learned
        mark = last_seq(lab)
        got = w.call("f = gdal.VSIFOpenL(p, 'rb'); gdal.VSIFSeekL(f, off, 0)\n"
                     "result = len(gdal.VSIFReadL(1, 100, f)); gdal.VSIFCloseL(f)",
                     p=layouts["a1"]["s3"], off=first + 100)
        lg = [e for e in by_vsitune(lab.log(since=mark)) if e["key"] == f"{PREFIX}/a1.tif"]
        assert got == 100
        assert len(lg) == 1 and _first_end(lg) + 1 > first + 200, [e["range"] for e in lg]


def test_no_shrink_while_the_first_files_are_open(lab, layouts):
    """A mosaic opens its sources together and reads their coarse overview tiles,
    stored right after each header. While the prefix's first file is still open
    (not yet read and let go) nothing is learned: a source opened beside it asks
    the whole first block, and its overview tile costs no second GET (before,
    the structure learned at the first load shrank it: 2 GETs)."""
    lab.reset()
    code = ("keep = gdal.Open(p0); keep.GetRasterBand(1).ReadRaster(0, 0, 1, 1)\n"
            "ds = gdal.Open(p1); b = ds.GetRasterBand(1)\n"
            "ov = b.GetOverview(b.GetOverviewCount() - 1)\n"
            "result = len(ov.ReadRaster(0, 0, ov.XSize, ov.YSize)); ds = None; keep = None")
    # near.c off: earlier tests' reads in PREFIX would grow the first GET (test_mosaic_near.py)
    with Worker(lab, extra={"VSITUNE_FIRST_READ_MAX": "0"}) as w:
        w.call(code, p0=layouts["a0"]["s3"], p1=layouts["a1"]["s3"])
    lg = [e for e in by_vsitune(lab.log()) if e["key"] == f"{PREFIX}/a1.tif"]
    assert len(lg) == 1 and _first_end(lg) == 65535, [e["range"] for e in lg]
