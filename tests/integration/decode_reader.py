#!/usr/bin/python3
"""decode_reader.py: one GDAL client reading one window several times, for the tests of
decode failures on corrupt bytes (test_reliability.py). Runs in its own process so each
client behaves as it does alone (error handlers, error resets between calls).

    decode_reader.py CLIENT PATTERN --path /vsis3/b/k --local FILE [--reads N]
                     [--window X Y W H] [--arm-first]

CLIENT:  gdal (python3-gdal with UseExceptions), gdal-noexc (without), rasterio.
PATTERN: same (one dataset, N reads), reopen (open, read, close; N times).
Unless --arm-first, the object is opened (and closed) once, then the reader prints
{"phase": "opened"} and waits for a line on stdin (the test arms its fault meanwhile).
Then one JSON line per read: {"status": "ok"|"wrong"|"error", "error": "..."}, where
ok means the window equals the local file's, pixel for pixel; an error is the exception's
text and its causes', one a line.
"""

import argparse
import json
import sys


def _chain(e):
    """The exception's text and its causes' (rasterio 1.4 raises "Read failed. See
    previous exception for details." from GDAL's error), as a user's traceback shows."""
    words = []
    while e is not None and len(words) < 8:
        words.append(str(e))
        e = e.__cause__ or e.__context__
    return "\n".join(words)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("client", choices=["gdal", "gdal-noexc", "rasterio"])
    ap.add_argument("pattern", choices=["same", "reopen"])
    ap.add_argument("--path", required=True)
    ap.add_argument("--local", required=True)
    ap.add_argument("--reads", type=int, default=3)
    ap.add_argument("--window", type=int, nargs=4, default=[1200, 1300, 700, 600])
    ap.add_argument("--arm-first", action="store_true")
    a = ap.parse_args()
    x, y, w, h = a.window

    if a.client == "rasterio":
        import rasterio
        from rasterio.windows import Window
        win = Window(x, y, w, h)
        with rasterio.open(a.local) as src:
            ref = src.read(1, window=win)
        env = rasterio.Env()
        env.__enter__()

        def open_():
            return rasterio.open(a.path)

        def read(ds):
            return ds.read(1, window=win)

        def close(ds):
            ds.close()
    else:
        from osgeo import gdal
        if a.client == "gdal":
            gdal.UseExceptions()
        else:
            gdal.DontUseExceptions()
        lds = gdal.Open(a.local)
        ref = lds.GetRasterBand(1).ReadAsArray(x, y, w, h)
        lds = None

        def open_():
            ds = gdal.Open(a.path)
            if ds is None:  # gdal-noexc
                raise RuntimeError(gdal.GetLastErrorMsg())
            return ds

        def read(ds):
            arr = ds.GetRasterBand(1).ReadAsArray(x, y, w, h)
            if arr is None:  # gdal-noexc
                raise RuntimeError(gdal.GetLastErrorMsg())
            return arr

        def close(ds):
            pass  # the last reference goes with the caller's variable

    if not a.arm_first:
        close(open_())
        print(json.dumps({"phase": "opened"}), flush=True)
        sys.stdin.readline()

    ds = None
    for _ in range(a.reads):
        try:
            if ds is None:
                ds = open_()
            arr = read(ds)
            out = {"status": "ok" if (arr == ref).all() else "wrong"}
        except Exception as e:  # reported, never swallowed
            out = {"status": "error", "error": _chain(e)}
        if a.pattern == "reopen" and ds is not None:
            close(ds)
            ds = None
        print(json.dumps(out), flush=True)
    if ds is not None:
        close(ds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
