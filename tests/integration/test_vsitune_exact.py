"""test_vsitune_exact.py: every byte read through vsitune equals the local file.

Issue 3's byte-exact acceptance, against the lab: >= 10,000 random ranges (tiny,
straddling cache blocks, running past EOF, starting past EOF, sequential reads
without a seek) through VSIFOpenL/VSIFSeekL/VSIFReadL, VSIFReadMultiRangeL (through
ctypes: the 3.6 Python bindings do not expose it), full-raster checksums of every
band and overview, gdal_translate -srcwin outputs, gdallocationinfo at many
points, and rasterio windowed reads of s3:// URLs: each compared with the same
read of the local fixture file. The 10,000-range run keeps the default cache (so
most reads are served from cached blocks); the others run with budgets far below
the file size, so they also cover evicted blocks fetched again.
"""

import random
import subprocess

import pytest

import lab_client
from test_vsitune_helpers import (PY, Worker, by_vsitune, kinds, not_by_vsitune, run_local,
                                  s3path, sigcheck)  # noqa: F401 (autouse fixture)

BLOCK = 65536  # vsitune's default cache block (docs/configuration.md)


def random_ranges(rng, size, n):
    """n (offset, length, seek) reads of every shape worth testing; seek False
    means "read on from where the previous read stopped"."""
    out = []
    for _ in range(n):
        shape = rng.random()
        if shape < 0.25:  # tiny, anywhere
            off, ln = rng.randrange(size), rng.randint(1, 16)
        elif shape < 0.45:  # straddles a block boundary
            edge = BLOCK * rng.randint(1, size // BLOCK)
            off = edge - rng.randint(1, 300)
            ln = rng.randint(2, 600)
        elif shape < 0.55:  # at or past EOF
            off = size - rng.randint(0, 2000) + rng.choice([0, 0, 0, rng.randint(1, 100)])
            ln = rng.randint(1, 5000)
        elif shape < 0.85:  # medium
            off, ln = rng.randrange(size), rng.randint(17, 256 * 1024)
        elif shape < 0.95:  # large, several blocks
            off, ln = rng.randrange(size), rng.randint(256 * 1024, 1024 * 1024)
        else:  # a zero-length read
            off, ln = rng.randrange(size), 0
        out.append((off, ln, rng.random() > 0.15))
    return out


RANGES_CODE = r'''
data = open(local, "rb").read()
st = gdal.VSIStatL(path)
handles = [gdal.VSIFOpenL(path, "rb") for _ in range(3)]
pos = [0, 0, 0]
bad = []
for i, (off, ln, seek) in enumerate(ranges):
    h = i % 3
    f = handles[h]
    if seek:
        assert gdal.VSIFSeekL(f, off, 0) == 0
        pos[h] = off
    got = gdal.VSIFReadL(1, ln, f) if ln else b""
    got = got or b""
    want = data[pos[h]:pos[h] + ln]
    if got != want:
        bad.append([i, pos[h], ln, len(got), len(want)])
    pos[h] += len(want)
    if gdal.VSIFTellL(f) != pos[h]:
        bad.append([i, "tell", gdal.VSIFTellL(f), pos[h]])
for f in handles:
    gdal.VSIFCloseL(f)
result = {"size": st.size if st else None, "bad": bad[:20], "nbad": len(bad)}
'''

MULTI_CODE = r'''
data = open(local, "rb").read()
bad = []
for i, rs in enumerate(calls):
    got = read_multi(path, rs)
    want = [data[o:o + n] for o, n in rs]
    if got != want:
        bad.append([i, rs[:4], None if got is None else [len(g) for g in got][:4]])
result = {"bad": bad[:10], "nbad": len(bad)}
'''


@pytest.mark.parametrize("name,endpoint,n,cache", [("small", "h1", 10000, "64M"),
                                                   ("small", "h2", 1000, "256K"),
                                                   ("s2", "h1tls", 1000, "8M")])
def test_random_ranges_byte_exact(lab, cogs, name, endpoint, n, cache):
    cog = cogs[name]
    rng = random.Random(f"vsitune-{name}-{endpoint}-{n}")
    ranges = random_ranges(rng, cog["size"], n)
    with Worker(lab, endpoint=endpoint, extra={"VSITUNE_CACHE_SIZE": cache}) as w:
        got = w.call(RANGES_CODE, timeout=280, path=s3path(cog), local=cog["path"], ranges=ranges)
    assert got["size"] == cog["size"]
    assert got["nbad"] == 0, got["bad"]
    log = lab.log()
    assert log and not_by_vsitune(log) == []
    assert set(kinds(log)) == {"GET_RANGE"}
    assert all(e["status"] == 206 for e in log)


def test_multi_range_byte_exact(lab, cogs):
    cog = cogs["small"]
    size = cog["size"]
    rng = random.Random("vsitune-multirange")
    calls = []
    for _ in range(40):
        rs = []
        for _ in range(rng.randint(1, 24)):
            if rng.random() < 0.5:  # tile-like: a few KB to 200 KB
                off, ln = rng.randrange(size), rng.randint(1024, 200 * 1024)
            else:  # tiny, possibly next to the previous one (merge candidates)
                base = rs[-1][0] + rs[-1][1] if rs and rng.random() < 0.5 else rng.randrange(size)
                off, ln = base + rng.randint(0, 3000), rng.randint(1, 64)
            off = min(off, size - 1)
            rs.append((off, min(ln, size - off)))
        calls.append(rs)
    with Worker(lab, endpoint="h2", extra={"VSITUNE_CACHE_SIZE": "2M"}) as w:
        got = w.call(MULTI_CODE, timeout=200, path=s3path(cog), local=cog["path"], calls=calls)
    assert got["nbad"] == 0, got["bad"]
    assert not_by_vsitune(lab.log()) == []
    assert set(kinds(lab.log())) == {"GET_RANGE"}


CHECKSUM_CODE = r"""
def sums(p):
    ds = gdal.Open(p)
    out = []
    for i in range(1, ds.RasterCount + 1):
        b = ds.GetRasterBand(i)
        full = b.Checksum() if full_res else None
        out.append([full] + [b.GetOverview(k).Checksum() for k in range(b.GetOverviewCount())])
    return out
result = [sums(local), sums(path)]
"""


# s2 at full resolution is 120 M pixels to decode twice: its overviews (whole
# rasters too) are checksummed, the full-resolution band only for the small COG.
@pytest.mark.parametrize("name,full_res", [("small", True), ("s2", False)])
def test_full_checksums(lab, cogs, name, full_res):
    cog = cogs[name]
    with Worker(lab, endpoint="h2") as w:
        want, got = w.call(CHECKSUM_CODE, timeout=200, path=s3path(cog), local=cog["path"],
                           full_res=full_res)
    assert len(want[0]) >= 3, want  # the band and its overviews
    assert got == want
    log = lab.log()
    assert log and not_by_vsitune(log) == [] and set(kinds(log)) == {"GET_RANGE"}


@pytest.mark.parametrize("name,win", [("small", (300, 200, 700, 900)),
                                      ("small", (1536, 1536, 512, 512)),
                                      ("s2", (4000, 5000, 1200, 800)),
                                      ("s2", (10480, 10480, 500, 500))])
def test_translate_srcwin_equals_local(lab, gdal, cogs, tmp_path, name, win):
    cog = cogs[name]
    win = [str(v) for v in win]
    run_local(["gdal_translate", "-q", "-srcwin", *win, cog["path"], tmp_path / "local.tif"])
    cp, _ = gdal.run(["gdal_translate", "-q", "-srcwin", *win, s3path(cog), tmp_path / "vt.tif"],
                     vsitune=True)
    assert cp.returncode == 0, cp.stderr
    assert (tmp_path / "vt.tif").read_bytes() == (tmp_path / "local.tif").read_bytes()
    log = lab.log()
    assert log and not_by_vsitune(log) == [] and "LIST" not in kinds(log)


@pytest.mark.parametrize("name", ["small", "s2"])
def test_locationinfo_many_points(lab, gdal, cogs, name):
    cog = cogs[name]
    size = 10980 if name == "s2" else 2048
    rng = random.Random(f"points-{name}")
    pts = [(rng.randrange(size), rng.randrange(size)) for _ in range(300 if name == "small" else 150)]
    pts += [(0, 0), (size - 1, size - 1), (size - 1, 0), (0, size - 1)]
    stdin = "".join(f"{x} {y}\n" for x, y in pts)

    def run(path, env):
        cp = subprocess.run(["gdallocationinfo", "-valonly", path], input=stdin, env=env,
                            capture_output=True, text=True, timeout=240)
        assert cp.returncode == 0, cp.stderr
        # one line per point; from GDAL 3.10 a nodata pixel is an empty line
        return cp.stdout.splitlines()

    want = run(cog["path"], lab_client.gdal_env({}))
    got = run(s3path(cog), gdal.env("h1", vsitune=True))
    assert len(want) == len(pts) and len(set(want)) > 10
    assert got == want
    log = lab.log()
    assert log and not_by_vsitune(log) == [] and "LIST" not in kinds(log)


RASTERIO_SRC = r'''
import json, sys
import numpy as np
import rasterio
from rasterio.windows import Window
args = json.loads(sys.argv[1])
bad = []
n = 0
with rasterio.open(args["url"]) as remote, rasterio.open(args["local"]) as local:
    assert remote.profile == local.profile, (remote.profile, local.profile)
    assert remote.overviews(1) == local.overviews(1)
    for col, row, w, h, dec in args["windows"]:
        win = Window(col, row, w, h)
        shape = (1, max(1, h // dec), max(1, w // dec))
        a = remote.read(window=win, out_shape=shape)
        b = local.read(window=win, out_shape=shape)
        n += 1
        if not np.array_equal(a, b):
            bad.append([col, row, w, h, dec])
print(json.dumps({"n": n, "bad": bad}))
'''


@pytest.mark.parametrize("name", ["small", "s2"])
def test_rasterio_s3_windows(lab, gdal, cogs, name):
    cog = cogs[name]
    size = 10980 if name == "s2" else 2048
    rng = random.Random(f"rasterio-{name}")
    windows = []
    for _ in range(40 if name == "small" else 15):
        w, h = rng.randint(1, 800), rng.randint(1, 800)
        windows.append([rng.randrange(size - w), rng.randrange(size - h), w, h,
                        rng.choice([1, 1, 1, 2, 4, 8])])
    windows.append([0, 0, size, size, 16])  # whole raster, from an overview
    args = {"url": f"s3://{cog['bucket']}/{cog['key']}", "local": cog["path"], "windows": windows}
    import json
    env = gdal.env("h2", vsitune=True)
    cp = subprocess.run([PY, "-c", RASTERIO_SRC, json.dumps(args)], env=env, capture_output=True,
                        text=True, timeout=240)
    assert cp.returncode == 0, cp.stderr
    got = json.loads(cp.stdout)
    assert got == {"n": len(windows), "bad": []}
    log = lab.log()
    assert log and not_by_vsitune(log) == [], [(e["kind"], e["user_agent"]) for e in log][:5]
    assert set(kinds(log)) == {"GET_RANGE"}
    assert by_vsitune(log)[0]["range"].startswith("bytes=0-")


SMALL_CODE = r'''
import hashlib
out = []
for p in paths:
    st = gdal.VSIStatL(p)
    out.append([None if st is None else st.size, hashlib.sha256(read_all(p)).hexdigest()])
result = out
'''


def test_objects_smaller_than_the_header_read(lab):
    # vsitune's first GET asks for its header size (64 KiB by default); objects
    # shorter than that answer 206 with Content-Range "bytes 0-(n-1)/n", and
    # must read whole (a VRT or a tiny GeoTIFF is a few KB).
    import hashlib
    sizes = [1, 100, 5000, 65535, 65536, 65537, 200000]
    blobs = {n: bytes((i * 7 + n) % 251 for i in range(n)) for n in sizes}
    for n, b in blobs.items():
        lab.put_object("lab", f"sizes/{n}.tif", b)
    with Worker(lab) as w:
        got = w.call(SMALL_CODE, paths=[f"/vsis3/lab/sizes/{n}.tif" for n in sizes])
    want = [[n, hashlib.sha256(blobs[n]).hexdigest()] for n in sizes]
    assert dict(zip(sizes, got)) == dict(zip(sizes, want))
    log = lab.log()
    assert log and not_by_vsitune(log) == [] and set(kinds(log)) == {"GET_RANGE"}
