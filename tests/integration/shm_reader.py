#!/usr/bin/python3
"""shm_reader.py: one GDAL process of the shared-cache tests (test_shared_cache.py).

Opens a /vsis3/ COG anew for each window asked for, reads band 1 of it, compares it
with the same window of the local file, and prints one JSON line: errors and the
plugin's STATS. With --hold it then stays alive (and attached to the shared segment)
until its stdin gives a line or closes, so a test can run another process while this
one still holds the segment.

    shm_reader.py --key K --local PATH [--bucket lab] [--hold] X,Y,W,H ...
"""

import argparse
import json
import sys

import numpy as np
from osgeo import gdal

gdal.UseExceptions()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--key", required=True)
    ap.add_argument("--bucket", default="lab")
    ap.add_argument("--local", required=True)
    ap.add_argument("--hold", action="store_true")
    ap.add_argument("windows", nargs="*")
    a = ap.parse_args()
    ds = gdal.Open(a.local)
    ref = ds.GetRasterBand(1).ReadAsArray()
    ds = None
    errors = []
    for w in a.windows:
        x, y, wd, ht = (int(v) for v in w.split(","))
        try:
            rds = gdal.Open(f"/vsis3/{a.bucket}/{a.key}")
            got = rds.GetRasterBand(1).ReadAsArray(x, y, wd, ht)
            if got is None or not np.array_equal(got, ref[y:y + ht, x:x + wd]):
                errors.append(f"mismatch at {w}")
        except Exception as e:  # reported, never swallowed
            errors.append(f"{w}: {e}")
    drv = gdal.GetDriverByName("VSITUNE")
    stats = json.loads(drv.GetMetadataItem("STATS")) if drv else None
    print(json.dumps({"nerrors": len(errors), "errors": errors[:5], "stats": stats}),
          flush=True)
    if a.hold:
        sys.stdin.readline()


if __name__ == "__main__":
    main()
