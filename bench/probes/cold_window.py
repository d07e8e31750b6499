"""cold_window.py: one fresh process reads one window, as seed 001 measures it.

Run by bench/run.py in a new process per measurement (so every read is cold: no
connection, no metadata, no cache), against /vsis3/ through the lab or, for the
floor, against the same COG as a local file. Prints one JSON line
{"result": {...}} with the phases it timed itself; the caller times the whole
process (start to exit) from outside.

usage: cold_window.py PATH XOFF YOFF SIZE
"""

import json
import sys
import time

t0 = time.monotonic()
from osgeo import gdal  # noqa: E402  (timed: part of what a cold process pays)

t_import = time.monotonic()


def main():
    if len(sys.argv) != 5:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    path = sys.argv[1]
    x, y, size = (int(a) for a in sys.argv[2:5])
    gdal.UseExceptions()
    ds = gdal.Open(path)
    t_open = time.monotonic()
    arr = ds.GetRasterBand(1).ReadAsArray(x, y, size, size)
    t_read = time.monotonic()
    ds = None
    print(json.dumps({"result": {
        "import_s": t_import - t0, "open_s": t_open - t_import, "read_s": t_read - t_open,
        "inside_s": t_read - t0, "checksum": int(arr.astype("uint64").sum()),
        "shape": list(arr.shape)}}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
