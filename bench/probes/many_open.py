"""many_open.py: open many distinct COGs, the shape of async-tiff's benchmark (issue 22).

A thread pool opens COUNT objects PREFIX0000.tif, PREFIX0001.tif, ... with the GDAL
Python bindings, each once, and reads what gdalinfo prints without its coordinate
transforms: size, geotransform, projection, band type, block size, nodata, overview
sizes and the metadata of the default and IMAGE_STRUCTURE domains (header +
metadata); then closes it. With --info, gdal.Info() itself (gdalinfo's own code,
corner coordinates through PROJ included).

Measured over the opening phase only (after imports and driver registration): wall
time, the process's CPU time (user + system, getrusage), each open's latency, and
the peak RSS (VmHWM). A digest of what every open read (the same for every object:
they are copies) is printed so the caller can compare it with the local file's.

Prints {"done": n} every 16 opens and, at the end, {"result": {...}}.

With --idle-ms MS each thread sleeps MS before each open, as a thread waiting on the
network would (the sleep is outside each open's latency and adds no CPU): what GDAL's
own work costs after an idle wait on this machine. "open_wall_per_open_s" is the mean
latency of one open, sleep excluded.

With --read-only BYTES no dataset is opened: each object is opened with VSIFOpenL, its
first BYTES read with one VSIFReadL and closed (the digest is of those bytes). That is
the VSI handler's own part of an open (request, TLS, signing, hand-offs), without
GDAL's driver work, to set beside one plain libcurl GET of the same bytes.

usage: many_open.py PREFIX COUNT --threads N [--info] [--idle-ms MS] [--read-only BYTES]
       many_open.py --local FILE COUNT --threads N   (the same open COUNT times: the digest)
"""

import argparse
import hashlib
import json
import os
import resource
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pss import status_kb  # noqa: E402


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def header_and_metadata(gdal, path, info):
    """What one open reads, as a JSON-able dict (None when the open failed)."""
    ds = gdal.Open(path)
    if ds is None:
        return None
    try:
        if info:
            text = gdal.Info(ds)
            # the path is in gdalinfo's output; the rest must be equal everywhere
            return {"info": "\n".join(ln for ln in text.splitlines() if path not in ln)}
        b = ds.GetRasterBand(1)
        return {"size": [ds.RasterXSize, ds.RasterYSize, ds.RasterCount],
                "gt": list(ds.GetGeoTransform()), "srs": ds.GetProjectionRef(),
                "type": gdal.GetDataTypeName(b.DataType), "block": b.GetBlockSize(),
                "nodata": b.GetNoDataValue(),
                "overviews": [[b.GetOverview(i).XSize, b.GetOverview(i).YSize]
                              for i in range(b.GetOverviewCount())],
                "md": ds.GetMetadata() or {},
                "image_structure": ds.GetMetadata("IMAGE_STRUCTURE") or {}}
    finally:
        ds = None


def first_bytes(gdal, path, nbytes):
    """The first nbytes of path through GDAL's VSI layer, as a JSON-able dict: their
    length and SHA-256; an "error" when it cannot be opened (GDAL 3.6's VSIFOpenL returns
    None there, later releases raise: either counts as a failed object)."""
    f = gdal.VSIFOpenL(path, "rb")
    if f is None:
        return {"error": f"VSIFOpenL failed: {gdal.VSIGetLastErrorMsg() or path}"}
    try:
        data = gdal.VSIFReadL(1, nbytes, f)
    finally:
        gdal.VSIFCloseL(f)
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def main():
    ap = argparse.ArgumentParser(description="many-object open probe")
    ap.add_argument("prefix")
    ap.add_argument("count", type=int)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--info", action="store_true", help="gdal.Info() per object")
    ap.add_argument("--local", action="store_true",
                    help="PREFIX is one local file, opened COUNT times")
    ap.add_argument("--idle-ms", type=float, default=0.0,
                    help="sleep this long before each open (outside its latency)")
    ap.add_argument("--read-only", type=int, default=0, metavar="BYTES",
                    help="no dataset: VSIFOpenL, one VSIFReadL of BYTES, VSIFCloseL")
    a = ap.parse_args()
    if a.count < 1 or a.threads < 1 or a.idle_ms < 0 or a.read_only < 0:
        ap.error("count and threads must be >= 1, --idle-ms and --read-only >= 0")

    from osgeo import gdal
    gdal.UseExceptions()
    gdal.AllRegister()
    paths = ([a.prefix] * a.count if a.local else
             [f"{a.prefix}{i:04d}.tif" for i in range(a.count)])
    lock = threading.Lock()
    done = [0]

    def one(path):
        if a.idle_ms:
            time.sleep(a.idle_ms / 1000)
        t = time.monotonic()
        try:
            got = (first_bytes(gdal, path, a.read_only) if a.read_only else
                   header_and_metadata(gdal, path, a.info))
        except RuntimeError as e:
            got = {"error": str(e)[:200]}
        lat = time.monotonic() - t
        with lock:
            done[0] += 1
            if done[0] % 16 == 0:
                print(json.dumps({"done": done[0]}), flush=True)
        return got, lat

    cpu0, t0 = cpu_s(), time.monotonic()
    with ThreadPoolExecutor(max_workers=a.threads) as pool:
        out = list(pool.map(one, paths))
    elapsed, cpu = time.monotonic() - t0, cpu_s() - cpu0
    digests = {hashlib.sha256(json.dumps(g, sort_keys=True).encode()).hexdigest()[:16]
               for g, _ in out}
    errors = [g["error"] for g, _ in out if g and "error" in g]
    lats = sorted(lat for _, lat in out)
    print(json.dumps({"result": {
        "opens": len(out), "threads": a.threads, "elapsed_s": elapsed,
        "opens_per_s": len(out) / elapsed if elapsed > 0 else None,
        "wall_per_open_s": elapsed / len(out), "cpu_s": cpu, "cpu_per_open_s": cpu / len(out),
        "open_wall_per_open_s": sum(lats) / len(lats), "idle_ms": a.idle_ms,
        "latency_median_s": lats[len(lats) // 2], "latency_max_s": lats[-1],
        "digests": sorted(digests), "errors": len(errors), "first_error": errors[:1],
        "vmhwm_kb": status_kb("VmHWM")}}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
