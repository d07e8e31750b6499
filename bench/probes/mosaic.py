"""mosaic.py: STAC-mosaic tiles through a VRT of adjacent COGs (issue 22).

The VRT (bench/probes/make_cogs.py mosaic: a 5x5 grid of C x C web-mercator COGs,
shifted by C/2 from the XYZ grid) is opened per tile, as a tile server does, and
one 256x256 XYZ tile is read from it (nearest, GDAL picking the overview level):
the 16 zoom-10 tiles inside the grid, each needing 4 COGs, and the zoom-9 tile
inside it, needing 9. A thread pool serves them at once.

Prints {"result": {...}}: tiles, elapsed (serving only), tiles/s, the peak RSS, and a
checksum of all tiles (run it on the local VRT for the expected one).

usage: mosaic.py VRT C --threads N
"""

import argparse
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pss import status_kb  # noqa: E402


def tiles(c):
    """(zoom, window) of every tile: window = (xoff, yoff, size) in VRT pixels; the
    VRT starts C/2 pixels into the grid's first zoom-10 tile."""
    half = c // 2
    out = [(10, (tx * c - half, ty * c - half, c)) for ty in range(1, 5) for tx in range(1, 5)]
    out.append((9, (2 * c - half, 2 * c - half, 2 * c)))
    return out


def main():
    ap = argparse.ArgumentParser(description="mosaic tile probe")
    ap.add_argument("vrt")
    ap.add_argument("cog_px", type=int)
    ap.add_argument("--threads", type=int, default=4)
    a = ap.parse_args()

    from osgeo import gdal
    gdal.UseExceptions()
    gdal.AllRegister()
    lock = threading.Lock()
    done = [0]

    def serve(t):
        zoom, (x, y, size) = t
        t0 = time.monotonic()
        ds = gdal.Open(a.vrt)
        buf = ds.GetRasterBand(1).ReadRaster(x, y, size, size, 256, 256)
        ds = None
        s = sum(memoryview(buf).cast("H"))
        with lock:
            done[0] += 1
            print(json.dumps({"done": done[0]}), flush=True)
        return s, time.monotonic() - t0

    work = tiles(a.cog_px)
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=a.threads) as pool:
        out = list(pool.map(serve, work))
    elapsed = time.monotonic() - t0
    lats = sorted(lat for _, lat in out)
    print(json.dumps({"result": {
        "tiles": len(out), "tiles_4_cogs": sum(1 for z, _ in work if z == 10),
        "tiles_9_cogs": sum(1 for z, _ in work if z == 9), "threads": a.threads,
        "elapsed_s": elapsed, "tiles_per_s": len(out) / elapsed if elapsed > 0 else None,
        "latency_median_s": lats[len(lats) // 2], "latency_max_s": lats[-1],
        "checksum": sum(s for s, _ in out), "vmhwm_kb": status_kb("VmHWM")}}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
