#!/usr/bin/python3
"""shm_pool.py: a ProcessPoolExecutor reading windows twice, for test_shared_cache.py.

The pool (start method fork or spawn, 4 workers) reads the windows, prints
{"phase": "pass1"} and waits for a line on stdin (the test marks the lab's log), then
reads them again in reverse order (so most land on another worker than the first
time) and prints {"ok": ..., "pids": n}. Every window is compared with the local file.

    shm_pool.py --key K --local PATH --method fork|spawn X,Y,W,H ...
"""

import argparse
import concurrent.futures as cf
import json
import multiprocessing as mp
import os
import sys

import numpy as np
from osgeo import gdal


def job(args):
    path, local, w = args
    ds, lds = gdal.Open(path), gdal.Open(local)  # bands do not keep them alive
    got = ds.GetRasterBand(1).ReadAsArray(*w)
    ref = lds.GetRasterBand(1).ReadAsArray(*w)
    return bool(np.array_equal(got, ref)), os.getpid()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--key", required=True)
    ap.add_argument("--local", required=True)
    ap.add_argument("--method", choices=("fork", "spawn"), required=True)
    ap.add_argument("windows", nargs="+")
    a = ap.parse_args()
    wins = [tuple(int(v) for v in w.split(",")) for w in a.windows]
    tasks = [(f"/vsis3/lab/{a.key}", a.local, w) for w in wins]
    with cf.ProcessPoolExecutor(4, mp_context=mp.get_context(a.method)) as ex:
        first = list(ex.map(job, tasks))
        print(json.dumps({"phase": "pass1"}), flush=True)
        sys.stdin.readline()
        second = list(ex.map(job, list(reversed(tasks))))
    res = first + second
    print(json.dumps({"ok": all(ok for ok, _ in res), "pids": len({p for _, p in res})}),
          flush=True)


if __name__ == "__main__":
    main()
