#!/usr/bin/python3
"""demo.py: the README's first command, end to end, showing what the SERVER saw.

Starts the S3 lab, uploads the Sentinel-2-like fixture COG with its sibling keys,
sets a 20 ms RTT (10 ms one-way) on the plain HTTP/1.1 endpoint, then for
  - a cold one-pixel read (gdallocationinfo, a fresh process), and
  - a cold gdalinfo,
runs stock GDAL with its default configuration and, when the plugin is built
(<build>/vsiplugin/gdal_vsitune.so), GDAL with GDAL_DRIVER_PATH pointing at it.
Prints, side by side, the lab's count of requests by kind, bytes, connections and
wall time, then each run's request sequence; checks that the pixel values agree
(with each other and with the local file); and checks a stock read over the h2 front.

Exit status: 0 when every run succeeded and all values agree, 1 otherwise, 2 on
bad arguments. Run with /usr/bin/python3 (needs osgeo for the fixture).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))
sys.path.insert(0, str(HERE))

import fixtures  # noqa: E402
import lab_client  # noqa: E402


def gdal_version():
    cp = subprocess.run(["gdalinfo", "--version"], capture_output=True, text=True)
    return cp.stdout.split(",")[0].replace("GDAL ", "").strip() or "?"


def measure(lab, args, endpoint, vsitune, repeat):
    """Run `args` `repeat` times, each as a cold process on a reset lab. Returns
    a dict: ok, stdout/stderr of the last run, median wall time, the last run's
    log, counts and connections, and whether all runs made the same requests."""
    walls, seqs = [], []
    out = {}
    for _ in range(repeat):
        lab.reset()
        env = lab_client.gdal_env(lab.env(endpoint), vsitune=vsitune)
        cp, wall = lab_client.run_tool(args, env, timeout=300)
        log = lab.log()
        walls.append(wall)
        seqs.append([(e["method"], e["path"], e["query"], e["range"]) for e in log])
        out = {"ok": cp.returncode == 0, "stdout": cp.stdout.strip(), "stderr": cp.stderr.strip(),
               "log": log, "counts": lab.counts(), "connections": lab.connections(endpoint)}
        if cp.returncode != 0:
            break
    out["wall"] = statistics.median(walls)
    out["walls"] = walls
    out["stable"] = all(s == seqs[0] for s in seqs)
    return out


def row_values(r):
    c = r["counts"]
    other = c["total"] - c["LIST"] - c["HEAD"] - c["GET_RANGE"]
    return [c["LIST"], c["HEAD"], c["GET_RANGE"], other, c["total"], f"{c['bytes']:,}",
            r["connections"]["accepted"], f"{r['wall']:.3f} s"]


def print_table(title, columns):
    labels = ["LIST", "HEAD", "GET range", "other", "requests", "bytes sent", "connections",
              "wall time (median)"]
    names = list(columns)
    width = max(22, *(len(n) + 2 for n in names))
    print(f"\n{title}")
    print(" " * 20 + "".join(f"{n:>{width}}" for n in names))
    cols = {n: (row_values(r) if r["ok"] else ["-"] * len(labels)) for n, r in columns.items()}
    for i, label in enumerate(labels):
        print(f"{label:20}" + "".join(f"{str(cols[n][i]):>{width}}" for n in names))
    for n, r in columns.items():
        if not r["ok"]:
            print(f"  {n}: FAILED: {r['stderr'][-500:]}")


def print_sequence(name, r):
    print(f"  {name}:")
    if not r["log"]:
        print("    (no request)")
    for e in r["log"]:
        target = e["path"] + ("?" + e["query"] if e["query"] else "")
        rng = f"  Range: {e['range']}" if e["range"] else ""
        print(f"    {e['seq']:>2}. {e['method']:4} {target}{rng}  -> {e['status']}, "
              f"{e['bytes_sent']:,} B, sig={e['sig']}")
    if not r["stable"]:
        print("    note: the request sequence differed between repeats")


def main(argv=None):
    ap = argparse.ArgumentParser(description="vsitune demo: what the server sees, stock GDAL vs vsitune")
    ap.add_argument("--fixture", choices=sorted(fixtures.FIXTURES), default="s2")
    ap.add_argument("--delay-ms", type=float, default=10.0, help="one-way delay (default 10: RTT 20 ms)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (median wall time)")
    ap.add_argument("--json", type=Path, help="also write the results to this file")
    ap.add_argument("--build-dir", type=Path,
                    help="CMake build directory holding vsiplugin/gdal_vsitune.so "
                         "(default: $VT_BUILD_DIR, else <repo>/build)")
    args = ap.parse_args(argv)
    if args.build_dir:
        os.environ["VT_BUILD_DIR"] = str(args.build_dir.resolve())
    if args.repeat < 1 or args.delay_ms < 0:
        ap.error("--repeat must be >= 1 and --delay-ms >= 0")

    print(f"generating the {args.fixture} fixture (cached after the first run)...", flush=True)
    local = fixtures.generate(args.fixture, verbose=True)
    with_plugin = lab_client.plugin_built()
    failures = []
    results = {}
    lab = lab_client.Lab()
    lab.start()
    try:
        print("uploading it to the lab with its sibling keys...", flush=True)
        up = fixtures.upload(lab, names=(args.fixture,))[args.fixture]
        path = f"/vsis3/lab/{up['key']}"
        size = fixtures.FIXTURES[args.fixture]["size"]
        px = py = size // 2
        # Warm the lab's own code paths once (not measured).
        lab_client.run_tool(["gdalinfo", path], lab_client.gdal_env(lab.env("h1")), timeout=300)

        truth = subprocess.run(["gdallocationinfo", "-valonly", str(local), str(px), str(py)],
                               capture_output=True, text=True).stdout.strip()
        runs = [("stock", False)] + ([("vsitune", True)] if with_plugin else [])
        tools = {
            "pixel": ["gdallocationinfo", "-valonly", path, str(px), str(py)],
            "info": ["gdalinfo", path],
        }
        lab.set_delay(args.delay_ms)
        for what, cmd in tools.items():
            for name, plugin in runs:
                lab.set_delay(args.delay_ms)
                results[(what, name)] = measure(lab, cmd, "h1", plugin, args.repeat)

        # h2 front: a stock read must work through nghttpx too.
        results[("pixel", "stock-h2")] = measure(lab, tools["pixel"], "h2", False, 1)

        ver = gdal_version()
        rtt = 2 * args.delay_ms
        names = {"stock": f"stock GDAL {ver}", "vsitune": "vsitune"}
        if not with_plugin:
            print(f"\nnote: {lab_client.plugin_dir()}/gdal_vsitune.so is not built: stock GDAL only")
        for what, title in (("pixel", f"cold one-pixel read: gdallocationinfo -valonly {path} {px} {py}"),
                            ("info", f"cold gdalinfo {path}")):
            cols = {names[n]: results[(what, n)] for n, _ in runs}
            print_table(f"{title}\n  (server-side counts; HTTP/1.1 endpoint, RTT {rtt:g} ms, "
                        f"{args.repeat} cold run(s) each)", cols)
        print("\nrequest sequences (as the server saw them):")
        for what in ("pixel", "info"):
            for n, _ in runs:
                print_sequence(f"{what}: {names[n]}", results[(what, n)])

        print()
        for key, r in results.items():
            if not r["ok"]:
                failures.append(f"{key[1]} {key[0]} run failed: {r['stderr'][-300:]}")
        values = {n: results[("pixel", n)]["stdout"] for n, _ in runs + [("stock-h2", False)]
                  if results[("pixel", n)]["ok"]}
        if values and all(v == truth for v in values.values()):
            print(f"pixel ({px}, {py}): every run printed {truth}, the local file's value: they agree")
        else:
            failures.append(f"pixel values disagree: local {truth!r}, " +
                            ", ".join(f"{n} {v!r}" for n, v in values.items()))
        h2 = results[("pixel", "stock-h2")]
        if h2["ok"] and all(e["sig"] == "ok" for e in h2["log"]):
            print(f"h2 front: stock GDAL read the pixel over HTTP/2+TLS (nghttpx): "
                  f"{h2['counts']['total']} requests, {h2['connections']['accepted']} connection(s), "
                  f"all signatures verified")
        else:
            failures.append("stock read over the h2 endpoint failed or was not verified")
        bad_sig = [(k, e) for k, r in results.items() for e in r["log"] if e["sig"] != "ok"]
        if bad_sig:
            failures.append(f"{len(bad_sig)} request(s) failed SigV4 verification")

        if args.json:
            args.json.write_text(json.dumps({f"{k[0]}/{k[1]}": v for k, v in results.items()},
                                            indent=2, default=str))
    finally:
        lab.stop()
    for f in failures:
        print(f"FAILED: {f}")
    if not failures:
        print("demo: OK")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
