"""tile_load.py: issue 11's uvicorn scenario: N workers serving random tiles.

Starts uvicorn with the TiTiler-shaped app (tile_app.py) and N worker processes,
requests TILES random tiles (seeded: the same sequence for every contender) of the
scenes at CONCURRENCY at once, checks every tile's bytes against the same tile read
from the local file, samples the workers' PSS while they still hold everything, stops
uvicorn, and prints {"result": {...}}: tiles/s, p50/p99 latency, errors, wrong tiles,
PSS (the total and each process's, by pid: the workers and uvicorn's helper), tiles
served by each worker (by pid).

Each tile is asked on a connection of its own, as a reverse proxy in front of uvicorn
asks by default (nginx proxies with HTTP/1.0, no keep-alive), so the kernel spreads the
tiles over the workers one by one. Over CONCURRENCY keep-alive connections the spread
was decided once per run, by which worker accepted which connection: one worker could
serve nearly every tile while the others idled, and the workers' total PSS moved by a
third between runs of the same contender (one busy worker's GDAL block cache against
four smaller ones holding some tiles twice).

usage: tile_load.py LOCAL REMOTE[,REMOTE...] [--workers 4] [--tiles 2000]
                    [--concurrency 16] [--seed 11]
"""

import argparse
import hashlib
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pss  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tile_list(n, scenes, seed):
    """The sequence: zooms weighted toward the detailed end, as map viewers ask."""
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        z = rnd.choices([0, 1, 2, 3, 4, 5], weights=[1, 2, 4, 8, 16, 32])[0]
        out.append((rnd.randrange(scenes), z, rnd.randrange(2 ** z), rnd.randrange(2 ** z)))
    return out


def reference(local, tiles):
    """sha1 of every distinct tile, read from the local file."""
    from tile_app import read_tile
    ref = {}
    for t in set((z, x, y) for _, z, x, y in tiles):
        ref[t] = hashlib.sha1(read_tile(local, *t).tobytes()).hexdigest()
    return ref


def percentile(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))] if v else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("local")
    ap.add_argument("remotes")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--tiles", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args()
    remotes = a.remotes.split(",")
    tiles = tile_list(a.tiles, len(remotes), a.seed)
    ref = reference(a.local, tiles)

    port = free_port()
    env = dict(os.environ, TILE_SCENES=a.remotes)
    srv = subprocess.Popen([sys.executable, "-m", "uvicorn", "--app-dir", HERE, "tile_app:app",
                            "--host", "127.0.0.1", "--port", str(port), "--workers",
                            str(a.workers), "--log-level", "warning"], env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/pid")
                c.getresponse().read()
                c.close()
                break
            except OSError:
                if time.monotonic() > deadline or srv.poll() is not None:
                    raise RuntimeError("uvicorn did not start")
                time.sleep(0.1)
        # every worker process up (with one worker uvicorn serves in-process)
        while a.workers > 1 and len(pss.children(srv.pid)) < a.workers and \
                time.monotonic() < deadline:
            time.sleep(0.1)

        lat, errors, wrong = [], [], 0
        lock = threading.Lock()
        nxt = [0]

        served = {}  # worker pid -> tiles it served

        def client():
            nonlocal wrong
            while True:
                with lock:
                    i = nxt[0]
                    nxt[0] += 1
                if i >= len(tiles):
                    break
                s, z, x, y = tiles[i]
                t0 = time.monotonic()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                try:
                    conn.request("GET", f"/tiles/{s}/{z}/{x}/{y}",
                                 headers={"Connection": "close"})
                    r = conn.getresponse()
                    body = r.read()
                    ok = r.status == 200
                    who = r.getheader("x-worker-pid")
                except (OSError, http.client.HTTPException) as e:
                    ok, body, who = False, str(e).encode(), None
                finally:
                    conn.close()
                dt = time.monotonic() - t0
                with lock:
                    lat.append(dt)
                    if who:
                        served[who] = served.get(who, 0) + 1
                    if not ok:
                        errors.append(f"{tiles[i]}: {body[:200]!r}")
                    elif hashlib.sha1(body).hexdigest() != ref[(z, x, y)]:
                        wrong += 1

        t0 = time.monotonic()
        ths = [threading.Thread(target=client) for _ in range(a.concurrency)]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        wall = time.monotonic() - t0
        mem = pss.total(pss.children(srv.pid) if a.workers > 1 else [srv.pid])
        mem["segment_bytes"] = pss.segment_bytes()
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(timeout=60)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
    print(json.dumps({"result": {
        "tiles": len(tiles), "distinct_tiles": len(ref), "workers": a.workers,
        "concurrency": a.concurrency, "wall_s": wall, "tiles_per_s": len(tiles) / wall,
        "p50_ms": percentile(lat, 0.50) * 1000, "p99_ms": percentile(lat, 0.99) * 1000,
        "errors": len(errors), "error_examples": errors[:3], "wrong_tiles": wrong,
        "pss": mem, "tiles_per_worker": served}}), flush=True)
    return 0 if not errors and not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
