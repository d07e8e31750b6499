#!/usr/bin/python3
"""vt_reader.py: a GDAL reader process driven by the process-wide engine tests.

Runs in its own process (GDAL_DRIVER_PATH must be set before GDAL loads), reads
windows of a /vsis3/ COG in the shape a test asks for, compares every window with
the same window of the local file, and prints one JSON line: errors, mismatches,
and the plugin's STATS (cache and engine counters) when vsitune is loaded.

    vt_reader.py MODE --key K --local PATH [--threads N] [--windows N] ...

Modes:
  windows      each thread opens once, reads --windows random windows
  open-per-window  each window opens the dataset anew (tile-server shape)
  scan         read the whole band in strips (a full sequential scan), --passes times
  fork-pool    open and read one window, then fork --threads children that each
               open the file again and read the same window (a process pool)
"""

import argparse
import json
import random
import sys
import threading

import numpy as np
from osgeo import gdal

gdal.UseExceptions()


def stats():
    drv = gdal.GetDriverByName("VSITUNE")
    return json.loads(drv.GetMetadataItem("STATS")) if drv else None


class Checker:
    def __init__(self, local):
        ds = gdal.Open(local)  # keep the dataset alive while its band is used
        self.ref = ds.GetRasterBand(1).ReadAsArray()
        ds = None
        self.lock = threading.Lock()
        self.errors = []
        self.windows = 0

    def check(self, ds, x, y, w, h):
        a = ds.GetRasterBand(1).ReadAsArray(x, y, w, h)
        ok = a is not None and np.array_equal(a, self.ref[y:y + h, x:x + w])
        with self.lock:
            self.windows += 1
            if not ok:
                self.errors.append(f"mismatch at {x},{y} {w}x{h}")

    def fail(self, what):
        with self.lock:
            self.errors.append(what)


def random_window(rnd, xs, ys, size):
    return rnd.randrange(0, xs - size), rnd.randrange(0, ys - size)


def run_threads(n, fn):
    ths = [threading.Thread(target=fn, args=(t,)) for t in range(n)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode")
    ap.add_argument("--key", required=True)
    ap.add_argument("--bucket", default="lab")
    ap.add_argument("--local", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--windows", type=int, default=10)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--passes", type=int, default=1)
    a = ap.parse_args()

    path = f"/vsis3/{a.bucket}/{a.key}"
    chk = Checker(a.local)
    ys, xs = chk.ref.shape
    out = {}

    if a.mode in ("windows", "open-per-window"):
        per_thread = max(1, a.windows // a.threads) if a.mode == "open-per-window" else a.windows

        def work(t):
            rnd = random.Random(a.seed * 1000 + t)
            try:
                ds = gdal.Open(path)
                for _ in range(per_thread):
                    if a.mode == "open-per-window":
                        ds = gdal.Open(path)
                    x, y = random_window(rnd, xs, ys, a.size)
                    chk.check(ds, x, y, a.size, a.size)
            except Exception as e:  # reported, never swallowed
                chk.fail(f"thread {t}: {e}")
        run_threads(a.threads, work)

    elif a.mode == "scan":
        ds = gdal.Open(path)
        step = 512
        for _ in range(a.passes):  # later passes refetch what was evicted
            for y in range(0, ys, step):
                h = min(step, ys - y)
                chk.check(ds, 0, y, xs, h)
        out["after_scan"] = stats()
        print(json.dumps({"phase": "scanned", "stats": out["after_scan"]}), flush=True)
        sys.stdin.readline()  # the test resets the lab's log, then says go
        chk.check(ds, xs - 512, ys - 512, 512, 512)  # the last tile read: still cached

    elif a.mode == "fork-pool":
        import os
        ds = gdal.Open(path)
        chk.check(ds, 0, 0, a.size, a.size)
        print(json.dumps({"phase": "read"}), flush=True)
        sys.stdin.readline()  # the test resets the lab's log, then says go
        pids = []
        for _ in range(a.threads):
            pid = os.fork()
            if pid == 0:  # a worker: its own dataset, the parent's engine state
                try:
                    wds = gdal.Open(path)
                    chk.check(wds, 0, 0, a.size, a.size)
                except Exception as e:
                    chk.fail(f"child: {e}")
                os._exit(0 if not chk.errors else 3)
            pids.append(pid)
        out["child_exits"] = [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids]
    else:
        ap.error(f"unknown mode {a.mode}")

    out.update({"windows": chk.windows, "errors": chk.errors[:10],
                "nerrors": len(chk.errors), "stats": stats()})
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
