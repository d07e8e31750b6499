"""cpu_window.py: instructions per warm window read, counted by callgrind.

Run under `valgrind --tool=callgrind --instr-atstart=no`: the import, the open and
a first window (connection, header, TLS session all made) run uninstrumented; then
instrumentation is switched on with callgrind_control for COUNT reads of further,
distinct 512x512 windows (new tiles, so each one is fetched and decoded), and off
again. The callgrind totals are then the instructions of those reads, over every
thread of the process (GDAL's, curl's and vsitune's I/O thread alike).

usage: cpu_window.py PATH COUNT [plain]
("plain": no callgrind_control calls, to read the reference checksum outside valgrind)
"""

import json
import os
import subprocess
import sys

from osgeo import gdal


def ctl(flag):
    if sys.argv[3:] == ["plain"]:
        return
    subprocess.run(["callgrind_control", flag, str(os.getpid())], check=True,
                   capture_output=True, timeout=120)


def main():
    if len(sys.argv) not in (3, 4) or sys.argv[3:] not in ([], ["plain"]):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    path, count = sys.argv[1], int(sys.argv[2])
    gdal.UseExceptions()
    ds = gdal.Open(path)
    band = ds.GetRasterBand(1)
    cols, rows = ds.RasterXSize // 512, ds.RasterYSize // 512
    tiles = [(512 * (i % cols), 512 * (i // cols)) for i in range(cols * rows)]
    if count < 1 or count >= len(tiles):
        print(f"cpu_window.py: COUNT must be 1..{len(tiles) - 1}", file=sys.stderr)
        return 2
    band.ReadAsArray(*tiles[0], 512, 512)
    ctl("--instr=on")
    total = 0
    for x, y in tiles[1:count + 1]:
        total += int(band.ReadAsArray(x, y, 512, 512).sum(dtype="uint64"))
    ctl("--instr=off")
    print(json.dumps({"result": {"windows": count, "checksum": total}}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
