"""pool.py: seed 000's window-statistics handler, with the executor swept.

The parent opens the COG for its size (as the seed's handler does), builds the
task list of block-aligned SIZExSIZE windows over the region asked for, and maps
them over a ProcessPoolExecutor (fork start method, chunksize as in the seed) or a
ThreadPoolExecutor of N workers. Each task opens the dataset itself, reads its
window masked, and returns (index, mean, std) of the valid pixels.
Prints {"result": {...}}: windows/s over the pool's run, and the per-window means
so the caller can compare them with the same computation on the local file.

usage: pool.py PATH --executor process|thread --workers N [--size 512]
               [--cols C] [--rows R]
"""

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
import concurrent.futures as cf

import rasterio
from rasterio.windows import Window

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pss  # noqa: E402


def read_window(args):
    """Runs in a worker (process or thread): open, read masked, reduce."""
    path, col_off, row_off, size, idx = args
    with rasterio.open(path) as src:
        band = src.read(1, window=Window(col_off, row_off, size, size), masked=True)
    valid = band.compressed()
    if valid.size == 0:
        return idx, None, 0.0
    return idx, float(valid.mean()), float(valid.std())


def main():
    ap = argparse.ArgumentParser(description="process/thread pool sweep probe")
    ap.add_argument("path")
    ap.add_argument("--executor", choices=("process", "thread"), required=True)
    ap.add_argument("--workers", type=int, required=True)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--cols", type=int, default=0, help="windows across (0: whole scene)")
    ap.add_argument("--rows", type=int, default=0, help="windows down (0: whole scene)")
    a = ap.parse_args()
    if a.workers < 1 or a.size < 1:
        ap.error("workers and size must be >= 1")
    with rasterio.open(a.path) as src:
        width, height = src.width, src.height
    cols = a.cols or width // a.size
    rows = a.rows or height // a.size
    tasks = [(a.path, c * a.size, r * a.size, a.size, i)
             for i, (r, c) in enumerate((r, c) for r in range(rows) for c in range(cols))]
    if not tasks:
        ap.error("no window fits")
    results = [None] * len(tasks)
    t0 = time.monotonic()
    if a.executor == "process":
        pool = cf.ProcessPoolExecutor(max_workers=a.workers, mp_context=mp.get_context("fork"))
    else:
        pool = cf.ThreadPoolExecutor(max_workers=a.workers)
    with pool:
        chunk = max(1, len(tasks) // (a.workers * 4)) if a.executor == "process" else 1
        for idx, mean, std in pool.map(read_window, tasks, chunksize=chunk):
            results[idx] = mean
        elapsed = time.monotonic() - t0
        # The workers' memory while they still hold what they read (PSS counts a
        # page shared by N processes 1/N in each: a shared cache counts once).
        procs = [os.getpid()] + list(getattr(pool, "_processes", None) or {})
        mem = pss.total(procs)
        mem["segment_bytes"] = pss.segment_bytes()
    print(json.dumps({"result": {
        "executor": a.executor, "workers": a.workers, "windows": len(tasks),
        "elapsed_s": elapsed, "windows_per_s": len(tasks) / elapsed,
        "pss": mem, "means": results}}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
