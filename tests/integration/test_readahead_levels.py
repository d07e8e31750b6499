"""test_readahead_levels.py: readahead never crosses an overview level's end (issue 22).

A COG keeps each overview level in one run of bytes, smallest level first. Reading a
level whole (a thumbnail, a low-zoom tile) is a sequential scan whose readahead
doubles; at the level's end it used to run on into the next, larger level (issue 22:
4.5 MB past a 25% level). Here the whole band of the 212 MB-class s2 fixture is read
into a buffer of 50%, 25% and 12.5% of its size, stock GDAL and vsitune side by side:
- vsitune's GETs (as the lab's log says the server answered them) end no later than
  the block holding the level's last byte (its 4-byte trailer included);
- vsitune moves at most 1.1x the bytes stock GDAL moves for the same read;
- the pixels equal the local file's, for both.
"""

import json
import subprocess

import pytest

from test_vsitune_helpers import by_vsitune, s3path

BLOCK = 64 * 1024  # VSITUNE_BLOCK_SIZE's default: GETs are block-aligned

READ = r'''
import sys, json, hashlib
from osgeo import gdal
gdal.UseExceptions()
ds = gdal.Open(sys.argv[1]); b = ds.GetRasterBand(1); fr = float(sys.argv[2])
w, h = max(1, round(ds.RasterXSize * fr)), max(1, round(ds.RasterYSize * fr))
buf = b.ReadRaster(0, 0, ds.RasterXSize, ds.RasterYSize, w, h)
out = {"md5": hashlib.md5(buf).hexdigest(), "w": w}
if len(sys.argv) > 3:  # the levels of the (local) file: width, first byte, end
    out["levels"] = []
    for lv in [b] + [b.GetOverview(i) for i in range(b.GetOverviewCount())]:
        bx, by = lv.GetBlockSize()
        t = [(int(lv.GetMetadataItem(f"BLOCK_OFFSET_{x}_{y}", "TIFF") or 0),
              int(lv.GetMetadataItem(f"BLOCK_SIZE_{x}_{y}", "TIFF") or 0))
             for y in range(-(-lv.YSize // by)) for x in range(-(-lv.XSize // bx))]
        t = [(o, s) for o, s in t if s]
        out["levels"].append([lv.XSize, min(o for o, _ in t), max(o + s for o, s in t)])
print(json.dumps(out))
'''


def _read(env, path, fraction, levels=False):
    cp = subprocess.run(["/usr/bin/python3", "-c", READ, path, str(fraction)] +
                        (["levels"] if levels else []), env=env, capture_output=True,
                        text=True, timeout=600)
    assert cp.returncode == 0, cp.stderr[-2000:]
    return json.loads(cp.stdout.strip().splitlines()[-1])


def _last_byte(e):
    """The last byte the GET's answer covered (from the Range the server answered)."""
    rng = (e.get("range") or "").replace("bytes=", "")
    first, _, last = rng.partition("-")
    return int(first) + (e["bytes_sent"] or 0) - 1 if first else None


@pytest.mark.parametrize("fraction", [0.5, 0.25, 0.125])
def test_readahead_stops_at_the_level_end(lab, gdal, cogs, fraction):
    cog = cogs["s2"]
    local = _read(gdal.env(vsitune=False), cog["path"], fraction, levels=True)
    # the level GDAL reads: the smallest at least as wide as the buffer
    width, start, end = min((lv for lv in local["levels"] if lv[0] >= local["w"]),
                            key=lambda lv: lv[0])
    limit = ((end + 4 - 1) // BLOCK + 1) * BLOCK - 1  # its trailer's block, no further
    sent, out = {}, {}
    for vt in (False, True):
        lab.reset()
        out[vt] = _read(gdal.env(vsitune=vt), s3path(cog), fraction)
        log = lab.log()
        assert all(e["status"] in (200, 206) for e in log), log
        sent[vt] = sum(e["bytes_sent"] or 0 for e in log if e["kind"] != "LIST")
        if vt:
            gets = [e for e in by_vsitune(log) if e["method"] == "GET" and e["kind"] != "LIST"]
            assert gets, log
            past = [(e["range"], e["bytes_sent"]) for e in gets
                    if (_last_byte(e) or 0) > limit]
            assert not past, (f"level {width} px ends at byte {end}: GETs past its block "
                              f"(last byte {limit}): {past}")
    assert out[True]["md5"] == out[False]["md5"] == local["md5"]
    assert sent[True] <= 1.1 * sent[False], sent
