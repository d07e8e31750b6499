#!/usr/bin/python3
"""test_tunerd_asgi.py: tunerd's plan applied to a FastAPI tile server
(tunerd/python/tunerd_plan.py), as TiTiler runs: sync endpoints reading COG
windows through GDAL (and vsitune) on anyio's thread pool, under uvicorn.

Both arms run the same app under `tunerd exec --workload tiles` (plan: one
uvicorn worker, TUNERD_THREADS=4, GDAL_CACHEMAX sized for that) with uvicorn
started as `--workers "$TUNERD_WORKERS"`, and serve the same tile requests from
16 concurrent clients against the lab (20 ms one-way delay, so requests
overlap as they do against S3). Only one arm calls tunerd_plan.install(app):

- with it, anyio's pool has 4 threads (the plan) and at most 4 tile reads run
  at once; without it, the pool has anyio's default of 40 and more than 4 run
  at once (16 clients): the ledger's 4 x 16 MB of working arrays is exceeded;
- every tile's pixels equal a local read of the same window (both arms);
- the peak RSS (VmHWM) of both arms is printed: the measurement quoted in
  docs/tuning.md ("Wiring the plan into the server").

Run: /usr/bin/python3 -m pytest tests/integration/test_tunerd_asgi.py -s
Needs Debian's python3-fastapi and python3-uvicorn (scripts/setup.sh).
"""
import hashlib
import json
import os
import socket
import subprocess
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import lab_client

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("VT_BINARY_DIR") or lab_client.build_dir())
TUNERD = BUILD / "tunerd" / "tunerd"
REQUESTS, CLIENTS, TILE = 192, 16, 256

APP = r'''
import hashlib, os, threading
from fastapi import FastAPI
from osgeo import gdal
import tunerd_plan

gdal.UseExceptions()
app = FastAPI()
if os.environ.get("APPLY_PLAN") == "1":
    tunerd_plan.install(app)
PATH, TILE = os.environ["COG"], int(os.environ["TILE"])
lock, inside, peak = threading.Lock(), 0, 0

def window(i, w, h):
    return (i * 389) % (w - TILE), (i * 211) % (h - TILE)

@app.get("/tile/{i}")
def tile(i: int):
    global inside, peak
    with lock:
        inside += 1
        peak = max(peak, inside)
    try:
        ds = gdal.Open(PATH)
        x, y = window(i, ds.RasterXSize, ds.RasterYSize)
        data = ds.GetRasterBand(1).ReadAsArray(x, y, TILE, TILE)
        return {"x": x, "y": y, "sha256": hashlib.sha256(data.tobytes()).hexdigest()}
    finally:
        with lock:
            inside -= 1

@app.get("/plan")
async def plan():
    import anyio.to_thread
    status = open("/proc/self/status").read()
    kb = lambda k: int(status.split(k + ":")[1].split()[0])
    return {"tokens": anyio.to_thread.current_default_thread_limiter().total_tokens,
            "peak": peak, "threads": threading.active_count(),
            "vmhwm_kb": kb("VmHWM"), "rss_kb": kb("VmRSS"),
            "env": {k: os.environ.get(k) for k in ("TUNERD_WORKERS", "TUNERD_THREADS",
                                                   "GDAL_CACHEMAX", "MALLOC_ARENA_MAX")}}
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=120):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def local_tiles(path, n):
    from osgeo import gdal
    ds = gdal.Open(str(path))
    b = ds.GetRasterBand(1)
    out = {}
    for i in range(n):
        x, y = (i * 389) % (ds.RasterXSize - TILE), (i * 211) % (ds.RasterYSize - TILE)
        out[i] = hashlib.sha256(b.ReadAsArray(x, y, TILE, TILE).tobytes()).hexdigest()
    return out


def serve(tmp_path, lab, cog, apply_plan):
    (tmp_path / "app.py").write_text(APP)
    port = free_port()
    env = lab_client.gdal_env(lab.env("h1"), vsitune=True, extra={
        "COG": f"/vsis3/lab/{cog['key']}", "TILE": str(TILE), "APPLY_PLAN": apply_plan,
        "PYTHONPATH": f"{tmp_path}:{REPO / 'tunerd' / 'python'}",
        "TUNERD_PROFILES_DIR": str(REPO / "profiles")})
    for k in ("GDAL_DRIVER_PATH",):  # tunerd's choice (the build's plugin), not the test's
        env.pop(k, None)
    cmd = [str(TUNERD), "exec", "--platform", "host", "--memory", "4096", "--cpus", "1",
           "--workload", "tiles", "--", "sh", "-c",
           'exec /usr/bin/python3 -m uvicorn app:app --host 127.0.0.1 --port "$0" '
           '--workers "$TUNERD_WORKERS" --log-level warning', str(port)]
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            get(f"http://127.0.0.1:{port}/plan", timeout=5)
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.2)


def load(base):
    with ThreadPoolExecutor(CLIENTS) as ex:
        return dict(zip(range(REQUESTS), ex.map(lambda i: get(f"{base}/tile/{i}"),
                                                 range(REQUESTS))))


@pytest.mark.parametrize("apply_plan", ["1", "0"])
def test_fastapi_thread_pool_follows_the_plan(lab, small_cog, tmp_path, apply_plan):
    want = local_tiles(small_cog["path"], REQUESTS)
    lab.set_delay(20, "h1")
    proc, base = serve(tmp_path, lab, small_cog, apply_plan)
    try:
        got = load(base)
        plan = get(f"{base}/plan")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        lab.set_delay(0, "h1")
    assert {i: t["sha256"] for i, t in got.items()} == want
    assert plan["env"]["TUNERD_THREADS"] == "4" and plan["env"]["TUNERD_WORKERS"] == "1"
    print(f"\nplan applied={apply_plan}: anyio threads {plan['tokens']}, peak concurrent "
          f"reads {plan['peak']}, threads alive {plan['threads']}, VmHWM "
          f"{plan['vmhwm_kb'] / 1024:.1f} MiB, RSS {plan['rss_kb'] / 1024:.1f} MiB "
          f"({REQUESTS} tiles, {CLIENTS} clients)")
    if apply_plan == "1":
        assert plan["tokens"] == 4
        assert 1 <= plan["peak"] <= 4
    else:
        assert plan["tokens"] == 40  # anyio's default: the plan is not applied
        assert plan["peak"] > 4
