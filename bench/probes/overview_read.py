"""overview_read.py: the whole raster read at a fraction of its size (issue 22).

Opens PATH and reads all of band 1 into a buffer FRACTION times its size (nearest;
GDAL serves it from the overview level it picks), as a thumbnail or a low-zoom
tile pyramid does. With --levels, also prints each level of the file (size and
the compressed bytes of its tiles), for the caller to know what the read needs.

Prints {"result": {"open_s", "read_s", "checksum", "buf": [w, h]}}.

usage: overview_read.py PATH FRACTION [--levels]
"""

import json
import sys
import time


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    path, frac = argv[0], float(argv[1])
    from osgeo import gdal
    gdal.UseExceptions()
    gdal.AllRegister()
    t0 = time.monotonic()
    ds = gdal.Open(path)
    b = ds.GetRasterBand(1)
    t1 = time.monotonic()
    w, h = max(1, round(ds.RasterXSize * frac)), max(1, round(ds.RasterYSize * frac))
    buf = b.ReadRaster(0, 0, ds.RasterXSize, ds.RasterYSize, w, h)
    t2 = time.monotonic()
    res = {"open_s": t1 - t0, "read_s": t2 - t1, "buf": [w, h],
           "checksum": sum(memoryview(buf).cast("H"))}
    if "--levels" in argv:
        res["levels"] = []
        for lvl in [b] + [b.GetOverview(i) for i in range(b.GetOverviewCount())]:
            bx, by = lvl.GetBlockSize()
            nx, ny = -(-lvl.XSize // bx), -(-lvl.YSize // by)
            res["levels"].append({
                "width": lvl.XSize, "height": lvl.YSize,
                "bytes": sum(int(lvl.GetMetadataItem(f"BLOCK_SIZE_{x}_{y}", "TIFF") or 0)
                             for y in range(ny) for x in range(nx))})
    ds = None
    print(json.dumps({"result": res}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
