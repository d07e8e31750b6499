"""dask_region.py: issue 11's Dask case: chunk means of a region, twice.

A dask.distributed LocalCluster of N worker processes (one thread each) computes the
mean of every CHUNKxCHUNK chunk of a REGIONxREGION region of a COG opened with
rioxarray, then again. Between the passes it prints {"phase": "pass1", ...} and waits
for a line on stdin, so the caller can mark the lab's request log. Prints
{"result": {...}}: wall time of each pass, the chunk means (for the caller to compare
with the local file's), and the workers' total PSS after each pass.

usage: dask_region.py PATH [--workers 4] [--region 8192] [--chunk 1024]
                          [--x0 1024] [--y0 1024] [--no-wait]
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pss  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--region", type=int, default=8192)
    ap.add_argument("--chunk", type=int, default=1024)
    ap.add_argument("--x0", type=int, default=1024)
    ap.add_argument("--y0", type=int, default=1024)
    ap.add_argument("--no-wait", action="store_true")
    ap.add_argument("--reference", action="store_true",
                    help="compute the chunk means in this process with rasterio (no Dask): "
                    "the values the Dask runs must match")
    a = ap.parse_args()
    if a.reference:
        import rasterio
        from rasterio.windows import Window
        means = []
        with rasterio.open(a.path) as src:
            for y in range(a.y0, a.y0 + a.region - a.chunk + 1, a.chunk):
                for x in range(a.x0, a.x0 + a.region - a.chunk + 1, a.chunk):
                    means.append(float(src.read(1, window=Window(x, y, a.chunk, a.chunk))
                                       .astype("float64").mean()))
        print(json.dumps({"result": {"means": means}}), flush=True)
        return

    import dask
    import rioxarray
    from dask.distributed import Client, LocalCluster

    dask.config.set({"distributed.worker.daemon": False})
    cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    try:
        da = rioxarray.open_rasterio(a.path, chunks={"x": a.chunk, "y": a.chunk}, lock=False)
        region = da.isel(band=0, x=slice(a.x0, a.x0 + a.region),
                         y=slice(a.y0, a.y0 + a.region))
        passes = []
        means = None
        for n in range(2):
            t0 = time.monotonic()
            m = region.coarsen(x=a.chunk, y=a.chunk, boundary="trim").mean().compute()
            wall = time.monotonic() - t0
            pids = list(client.run(os.getpid).values())
            mem = pss.total(pids)
            mem["segment_bytes"] = pss.segment_bytes()
            passes.append({"wall_s": wall, "pss": mem})
            means = [float(v) for v in m.values.ravel()]
            if n == 0:
                print(json.dumps({"phase": "pass1", "wall_s": wall}), flush=True)
                if not a.no_wait:
                    sys.stdin.readline()
        print(json.dumps({"result": {"passes": passes, "means": means,
                                     "workers": a.workers, "region": a.region,
                                     "chunk": a.chunk}}), flush=True)
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
