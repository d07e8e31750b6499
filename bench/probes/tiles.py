"""tiles.py: the tile-server shape (seeds 000 and 003) in one process.

A thread pool serves N tile requests; each request opens the COG, reads one
256x256 window with rasterio (as TiTiler does: open per request) and closes it.
The windows come from a seeded generator, so every contender reads the same
windows in the same order of submission. Used by two scenarios:
  tile server  (throughput, requests, connections, peak RSS)
  memory soak  (RSS before and after many requests; MALLOC_ARENA_MAX set by the caller)
Run against the local file it gives the reference checksum of the same windows.

Prints {"done": n} after each request (so a run killed by the caller's watchdog
still says how far it got) and, at the end, {"result": {...}}.

usage: tiles.py PATH WIDTH HEIGHT --threads N --requests N [--size 256] [--seed S]
"""

import argparse
import json
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor


def status_kb(field):
    """VmRSS / VmHWM of this process in kB, from /proc/self/status."""
    with open("/proc/self/status") as f:
        for ln in f:
            if ln.startswith(field + ":"):
                return int(ln.split()[1])
    return None


def windows(width, height, size, count, seed):
    rng = random.Random(seed)
    return [(rng.randrange(0, width - size + 1), rng.randrange(0, height - size + 1))
            for _ in range(count)]


def main():
    ap = argparse.ArgumentParser(description="tile-server probe")
    ap.add_argument("path")
    ap.add_argument("width", type=int)
    ap.add_argument("height", type=int)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--requests", type=int, required=True)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--seed", type=int, default=6)
    a = ap.parse_args()
    if a.threads < 1 or a.requests < 1 or a.size < 1 or a.size > min(a.width, a.height):
        ap.error("threads, requests and size must be >= 1 and size must fit the raster")

    import rasterio
    from rasterio.windows import Window

    wins = windows(a.width, a.height, a.size, a.requests, a.seed)
    lock = threading.Lock()
    done = [0]

    def serve(i):
        x, y = wins[i]
        t = time.monotonic()
        with rasterio.open(a.path) as src:
            arr = src.read(1, window=Window(x, y, a.size, a.size))
        s = int(arr.sum(dtype="uint64"))
        lat = time.monotonic() - t
        with lock:
            done[0] += 1
            print(json.dumps({"done": done[0]}), flush=True)
        return s, lat

    rss_start = status_kb("VmRSS")
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=a.threads) as pool:
        out = list(pool.map(serve, range(len(wins))))
    elapsed = time.monotonic() - t0
    lats = sorted(lat for _, lat in out)
    print(json.dumps({"result": {
        "requests": len(out), "threads": a.threads, "elapsed_s": elapsed,
        "windows_per_s": len(out) / elapsed if elapsed > 0 else None,
        "latency_median_s": lats[len(lats) // 2], "latency_max_s": lats[-1],
        "checksum": sum(s for s, _ in out),
        "rss_start_kb": rss_start, "rss_end_kb": status_kb("VmRSS"),
        "vmhwm_kb": status_kb("VmHWM")}}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
