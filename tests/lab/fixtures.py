#!/usr/bin/python3
"""fixtures.py: the lab's test rasters, generated at test time, never committed.

Two Sentinel-2-like COGs from one recipe (uint16 reflectance, DEFLATE + PREDICTOR=2,
512x512 tiles, internal overviews, nodata 0 outside a diagonal swath edge):
  s2     10980 x 10980 (a real S2 L2A 10 m band)
  small   2048 x 2048  (fast tests)
Content: smooth low-frequency fields (terrain/illumination), parcel-like texture
(fields of constant reflectance), and noise, in 0-10000, so the compression ratio
and tile sizes look like real data, not like pure noise.

Generation is deterministic (seeded per row band, so the pixels do not depend on how
the raster is written) and cached in VT_FIXTURE_DIR (default <repo>/build/fixtures)
under a name that encodes every parameter: a re-run finds the file and returns at
once. Also: the S2-style object keys and >= 200 sibling objects that make a LIST of
the scene's prefix cost what it costs on a real bucket, and upload() to the lab.

CLI:  /usr/bin/python3 tests/lab/fixtures.py generate [s2|small|all]
      /usr/bin/python3 tests/lab/fixtures.py path NAME
"""

import argparse
import fcntl
import os
import sys
import time
from pathlib import Path

RECIPE_VERSION = 2
REPO = Path(__file__).resolve().parents[2]
SCENE = "S2A_MSIL2A_20230615T103631_N0509_R008_T32TQM_20230615T170211"
PREFIX = "scenes/"

FIXTURES = {
    "s2": {"size": 10980, "block": 512, "seed": 20230615},
    "small": {"size": 2048, "block": 512, "seed": 20230616},
}
BANDS = ["B01", "B02", "B03", "B04", "B05", "B06", "B07", "B08", "B8A", "B09", "B11", "B12",
         "SCL", "TCI", "AOT", "WVP"]


def fixture_dir():
    d = os.environ.get("VT_FIXTURE_DIR")
    return Path(d) if d else REPO / "build" / "fixtures"


def fixture_path(name):
    p = FIXTURES[name]
    return fixture_dir() / (f"{name}-{p['size']}px-b{p['block']}-seed{p['seed']}"
                            f"-deflate-pred2-v{RECIPE_VERSION}.tif")


def fixture_key(name):
    """Object key of the fixture in bucket `lab`: an S2-like band file name."""
    tag = "" if name == "s2" else f"_{name.upper()}"
    return f"{PREFIX}{SCENE}{tag}_B04.tif"


def sibling_keys(count=224):
    """Realistic keys that share the fixtures' prefix: other bands of the same
    scene and of 13 other dates (16 bands x 14 dates = 224 >= 200)."""
    keys = []
    day = 0
    while len(keys) < count:
        date = f"202306{15 + day:02d}" if day < 15 else f"202307{day - 14:02d}"
        scene = f"S2{'AB'[day % 2]}_MSIL2A_{date}T103631_N0509_R008_T32TQM_{date}T170211"
        for b in BANDS:
            k = f"{PREFIX}{scene}_{b}.tif"
            if scene != SCENE or b != "B04":
                keys.append(k)
        day += 1
    return keys[:count]


def _strip(np, size, y0, rows, seed, field_params):
    """Rows [y0, y0+rows) of the raster as uint16, deterministic in (seed, y0)."""
    x = np.arange(size, dtype=np.float32)
    y = np.arange(y0, y0 + rows, dtype=np.float32)
    # 1. smooth low-frequency field: separable sums of sinusoids (cheap outer products)
    low = np.full((rows, size), 2200.0, dtype=np.float32)
    for (ax, ay, ph, amp) in field_params["waves"]:
        sx, cx = np.sin(ax * x), np.cos(ax * x)
        sy, cy = np.sin(ay * y + ph), np.cos(ay * y + ph)
        low += amp * (np.outer(cy, sx) + np.outer(sy, cx))
    # 2. parcels: rows of fields of random height and width, each of one reflectance
    #    offset (precomputed per raster by _parcels, picked here by row).
    row_bounds, row_vectors = field_params["parcels"]
    idx = np.searchsorted(row_bounds, y.astype(np.int64), side="right")
    parcel = row_vectors[idx]
    # 3. noise, seeded by row band so it does not depend on the write order.
    rng = np.random.default_rng([seed, y0])
    noise = rng.normal(0.0, 60.0, size=(rows, size)).astype(np.float32)
    val = low + parcel + noise
    np.clip(val, 1, 10000, out=val)
    out = val.astype(np.uint16)
    # 4. nodata (0) outside the swath edge, a diagonal line as on real S2 tiles.
    edge = (0.18 * size + 0.35 * y).astype(np.int64)
    cols = np.arange(size)
    out[cols[None, :] < edge[:, None]] = 0
    return out


def _parcels(np, size, seed):
    """Field layout: (row upper bounds, one offset vector of `size` per row)."""
    rng = np.random.default_rng([seed, 1])
    heights = rng.integers(24, 160, size=size // 24 + 2)
    bounds = np.cumsum(heights)
    bounds = bounds[: np.searchsorted(bounds, size) + 1]
    vectors = np.empty((len(bounds), size), dtype=np.float32)
    for r in range(len(bounds)):
        widths = rng.integers(20, 220, size=size // 20 + 2)
        cuts = np.cumsum(widths)
        values = rng.normal(0.0, 550.0, size=len(cuts) + 1).astype(np.float32)
        vectors[r] = values[np.searchsorted(cuts, np.arange(size), side="right")]
    return bounds, vectors


def generate(name, force=False, verbose=False):
    """Return the path of fixture `name`, generating it if absent. Safe against a
    concurrent generator (file lock) and interruption (written then renamed)."""
    import numpy as np
    from osgeo import gdal
    gdal.UseExceptions()
    params = FIXTURES[name]
    path = fixture_path(name)
    if path.exists() and not force:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(str(path) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists() and not force:
            return path
        t0 = time.monotonic()
        size, seed = params["size"], params["seed"]
        rng = np.random.default_rng(seed)
        field_params = {
            "waves": [(2 * np.pi / rng.uniform(size / 4, size * 1.5),
                       2 * np.pi / rng.uniform(size / 4, size * 1.5),
                       rng.uniform(0, 2 * np.pi), rng.uniform(300, 700)) for _ in range(5)],
            "parcels": _parcels(np, size, seed),
        }
        tmp_src = path.with_suffix(".src.tif")
        tmp_cog = path.with_suffix(".tmp.tif")
        drv = gdal.GetDriverByName("GTiff")
        src = drv.Create(str(tmp_src), size, size, 1, gdal.GDT_UInt16,
                         options=["TILED=YES", "BLOCKXSIZE=512", "BLOCKYSIZE=512", "COMPRESS=NONE",
                                  "BIGTIFF=IF_NEEDED"])
        src.SetGeoTransform([600000.0, 10.0 * 10980 / size, 0.0, 5100000.0, 0.0, -10.0 * 10980 / size])
        srs = gdal.osr.SpatialReference()
        srs.ImportFromEPSG(32632)
        src.SetProjection(srs.ExportToWkt())
        band = src.GetRasterBand(1)
        band.SetNoDataValue(0)
        step = 512
        for y0 in range(0, size, step):
            rows = min(step, size - y0)
            band.WriteArray(_strip(np, size, y0, rows, seed, field_params), 0, y0)
        src.FlushCache()
        src = None
        gdal.Translate(str(tmp_cog), str(tmp_src), format="COG",
                       creationOptions=["COMPRESS=DEFLATE", "PREDICTOR=2", f"BLOCKSIZE={params['block']}",
                                        "OVERVIEWS=IGNORE_EXISTING", "OVERVIEW_RESAMPLING=AVERAGE",
                                        "NUM_THREADS=2", "BIGTIFF=NO"])
        tmp_src.unlink()
        os.replace(tmp_cog, path)
        if verbose:
            print(f"fixtures: generated {path.name} ({path.stat().st_size / 1e6:.1f} MB) in "
                  f"{time.monotonic() - t0:.1f} s", file=sys.stderr)
    return path


def upload(lab, names=("small",), bucket="lab", siblings=True):
    """Generate (if needed) and upload the named fixtures to the lab, plus the
    sibling keys. Returns {name: {"key", "path", "size", "etag", "bucket"}}."""
    out = {}
    for name in names:
        path = generate(name)
        key = fixture_key(name)
        r = lab.put_object(bucket, key, path)
        out[name] = {"key": key, "path": str(path), "size": path.stat().st_size,
                     "etag": r.get("etag"), "bucket": bucket}
    if siblings:
        for i, k in enumerate(sibling_keys()):
            lab.put_object(bucket, k, (f"sibling {i} {k}\n" * 8).encode())
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description="Generate the lab's fixture COGs (cached).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="generate (if not cached) and print the path(s)")
    g.add_argument("name", nargs="?", default="all", choices=list(FIXTURES) + ["all"])
    g.add_argument("--force", action="store_true", help="regenerate even if cached")
    p = sub.add_parser("path", help="print where a fixture is (or would be) cached")
    p.add_argument("name", choices=list(FIXTURES))
    args = ap.parse_args(argv)
    if args.cmd == "path":
        print(fixture_path(args.name))
        return 0
    names = list(FIXTURES) if args.name == "all" else [args.name]
    for n in names:
        print(generate(n, force=args.force, verbose=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
