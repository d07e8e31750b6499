"""scen_many.py: scenario 14, many-object opens, and their floor (issue 22).

The shape of async-tiff's published benchmark: open hundreds of distinct COGs, each
once, read what gdalinfo reads (header + metadata, bench/probes/many_open.py), from
1, 16 and 64 threads. The objects are copies, under distinct keys, of one COG with
the s2 fixture's layout (so a Sentinel-2 band's header) and a sparse body
(bench/probes/make_cogs.py many). Every contender (stock, stock with TiTiler's
environment, vsitune) on every GDAL of the run (this machine's, and each --root's),
runs alternated, against the S3-like front (HTTPS, ALPN http/1.1 only) at the
scenario's RTT. Measured: opens/s, CPU per open (the probe process's user + system
time over the opening phase), wall per open, requests and bytes per open,
connections, peak RSS.

The floor: one plain libcurl ranged GET of the bytes the header needs (where the
first tile's data starts) per object, all over one connection, from one thread
(bench/probes/floor_get.c, compiled against this machine's libcurl at run time), on
the same front at the same RTT, of the same objects, signed (SigV4) as every
contender's GETs are, so the lab checks a signature for it as it does for them. The
1-thread wall per open is compared with it. Beside it, for reference, the same GETs
anonymous, of copies under the public bucket (no signature to check). floor_get is also
built and run inside each root, on the root's own libcurl and OpenSSL: its CPU per GET
there, added to GDAL's own open after a wait, is that GDAL's least CPU per open.

The handler alone: the same objects through each contender's VSI handler without a
dataset (many_open.py --read-only: VSIFOpenL, one VSIFReadL of the header's bytes,
VSIFCloseL), one thread: what a handler spends per object beside the floor's GET, and
that every contender read the same bytes.

Correctness (THE RULE): every open through vsitune reads what stock GDAL of the same
release reads (the probe's digest of size, georeferencing, overviews, metadata).
"""

import json
import os
import subprocess
from pathlib import Path

import common
import scen_versions
import stalls
from common import PROBES, PYTHON, median, ratio

KINDS = scen_versions.KINDS
PREFIX = "many/obj"


def _upload(ctx, path, count):
    """COUNT copies of `path` under lab/many/objNNNN.tif (for GDAL and the floor)
    and public/many/objNNNN.tif (for the anonymous reference GETs)."""
    data = Path(path).read_bytes()
    for i in range(count):
        for bucket in ("lab", "public"):
            ctx.lab.put_object(bucket, f"{PREFIX}{i:04d}.tif", data)


# floor_get's one build command: sh -c FLOOR_CC sh OUT SRC, against the libcurl where it runs
FLOOR_CC = ('mkdir -p "$(dirname "$1")" && '
            'cc -O2 -Wall -o "$1" "$2" $(curl-config --cflags --libs) -lcrypto')


def build_floor(ctx, g=None):
    """Compile bench/probes/floor_get.c (every run: cheap) into <build>/bench/ against this
    machine's libcurl, or, for g a root's GDAL (scen_versions.Gdal), inside that root
    against its own libcurl into <its build>/bench/. Returns the path where it runs."""
    src = str(PROBES / "floor_get.c")
    if g is None or g.root is None:
        out = str(Path(ctx.build_dir) / "bench" / "floor_get")
        argv, env = ["sh", "-c", FLOOR_CC, "sh", out, src], dict(os.environ)
    else:
        out = "/vt/build/bench/floor_get"
        argv, env = g.argv(["sh", "-c", FLOOR_CC, "sh", out, src], {})
    cp = subprocess.run(argv, env=env, capture_output=True, text=True)
    if cp.returncode != 0:
        raise RuntimeError(f"building bench/probes/floor_get.c" +
                           (f" in {g.name}" if g is not None and g.root is not None else "") +
                           f" failed: {cp.stderr.strip()[-600:]}")
    return out


def floor_env(lab, endpoint, signed):
    """floor_get's environment: the lab's credentials (it signs) or none (anonymous)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    if signed:
        le = lab.env(endpoint)
        env.update({k: le[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                       "AWS_REGION") if k in le})
    return env


def run_floor(ctx, exe, endpoint, rtt, args, signed=True, g=None):
    """One floor_get run, a fresh process on a new connection through `endpoint` at `rtt`:
    args(url, ca) gives its arguments from the endpoint's URL and CA bundle (None on
    plain HTTP). Signed with the lab's credentials, or anonymous; ok only when the lab
    logged every GET as checked (`sig: ok`) or as anonymous accordingly. With g (a
    scen_versions.Gdal of a root), exe is a path inside that root and runs there."""
    lab = ctx.lab
    lab.reset()
    lab.set_delay(rtt // 2, endpoint)
    ca = lab.env(endpoint).get("CURL_CA_BUNDLE")
    argv, env = [exe, *args(lab.endpoint_url(endpoint), ca)], floor_env(lab, endpoint, signed)
    if g is not None and g.root is not None:
        argv, env = g.argv(argv, env, binds=[lab.dir])
    r = common.run_child(argv, env, timeout=ctx.p["watchdog_s"])
    log = lab.log()
    ok = r.ok and bool(r.result) and r.result.get("signed") is signed and \
        all(e.get("sig") == ("ok" if signed else "anonymous") for e in log)
    return {"wall_s": r.wall, "ok": ok, "error": r.error(), "killed": r.timed_out,
            "signed": signed, "requests": common.request_summary(log),
            "connections": lab.connections(endpoint)["accepted"], "result": r.result}


def _floor(ctx, exe, count, nbytes, endpoint, rtt, signed=True, g=None):
    """Signed (or anonymous) GETs of the first nbytes of `count` objects, one connection."""
    bucket = "lab" if signed else "public"
    return run_floor(ctx, exe, endpoint, rtt,
                     lambda url, ca: [f"{url}/{bucket}/{PREFIX}", count, nbytes] +
                     ([ca] if ca else []), signed, g)


def many_opens(ctx):
    p, prog = ctx.p, ctx.progress
    ep, rtt, n = p["users_protocol"], p["users_rtt_ms"], p["many_objects"]
    gs = scen_versions.gdals(ctx)
    scratch = Path(ctx.build_dir) / "bench"
    scratch.mkdir(parents=True, exist_ok=True)
    cog = scratch / "many.tif"
    made = common.run_child([PYTHON, PROBES / "make_cogs.py", "many", cog, ctx.local_path],
                            common.lab_client.gdal_env({}), timeout=p["watchdog_s"])
    if not made.ok:
        raise RuntimeError(f"making the many-object COG failed: {made.error()}")
    header = made.result["header_bytes"]
    exes = {g.name: build_floor(ctx, g) for g in gs}
    exe = next(exes[g.name] for g in gs if g.root is None)  # the floor of every wall ratio
    prog.start("14 many-object opens", 1 + p["many_reps"] * (1 + len(gs) * len(KINDS) *
                                                             (1 + len(p["many_threads"]))))
    _upload(ctx, cog, n)
    prog.step(f"uploaded {n} copies of a {made.result['bytes']:,}-byte COG "
              f"(header {header:,} bytes)")
    floors, anons, runs, alone = [], [], {}, {g.name: [] for g in gs}
    own_floors, handler = {g.name: [] for g in gs}, {}
    for rep in range(p["many_reps"]):
        fl = _floor(ctx, exe, n, header, ep, rtt)
        floors.append(fl)
        anons.append(_floor(ctx, exe, n, header, ep, rtt, signed=False))
        prog.step(f"floor: {fl['result']['per_get_s'] * 1000:.1f} ms per GET" if fl["ok"]
                  else f"floor FAILED: {fl['error']}")
        for g in gs:  # the floor on each root's own libcurl (this machine's is `fl`)
            own_floors[g.name].append(fl if g.root is None else
                                      _floor(ctx, exes[g.name], n, header, ep, rtt, g=g))
            for k in KINDS:  # each handler alone: no dataset, the header's bytes
                run = scen_versions.measure(
                    ctx, g, k, ep, rtt, [PYTHON, PROBES / "many_open.py",
                                         f"/vsis3/lab/{PREFIX}", n, "--threads", 1,
                                         "--read-only", header])
                handler.setdefault((g.name, k), []).append(run)
                prog.step(f"{k}@{g.name} handler alone: " +
                          (f"{run['result']['cpu_per_open_s'] * 1000:.2f} ms CPU per object"
                           if run["ok"] and run["result"] else (run["error"] or "")[:80]))
        for g in gs:  # GDAL's own CPU per open: the same probe, the local file,
            for idle in (0, rtt):  # back to back, then idle one RTT before each open
                run = scen_versions.measure(
                    ctx, g, "stock", ep, rtt,
                    [PYTHON, PROBES / "many_open.py", "--local", cog, n, "--threads", 1,
                     "--idle-ms", idle], binds=[cog.parent])
                alone[g.name].append(run)
        for t in p["many_threads"]:
            for g in gs:
                for k in KINDS:
                    argv = [PYTHON, PROBES / "many_open.py", f"/vsis3/lab/{PREFIX}", n,
                            "--threads", t]
                    run = scen_versions.measure(ctx, g, k, ep, rtt, argv)
                    run["rep"] = rep
                    runs.setdefault((t, g.name, k), []).append(run)
                    res = run["result"] or {}
                    prog.step(f"{k}@{g.name} x{t}: " +
                              (f"{res.get('opens_per_s', 0):.1f} opens/s, "
                               f"{run['requests']['total']} req" if run["ok"] else
                               (run["error"] or "")[:80]))
    fl_ok = [f for f in floors if f["ok"]]
    floor = {"runs": floors, "header_bytes": header, "signed": True,
             "per_get_s": median([f["result"]["per_get_s"] for f in fl_ok]),
             "cpu_per_get_s": median([f["result"].get("cpu_per_get_s") for f in fl_ok]),
             "anonymous_runs": anons,
             "anonymous_per_get_s": median([f["result"]["per_get_s"] for f in anons if f["ok"]]),
             "requests_per_get": median([f["requests"]["total"] / n for f in fl_ok]),
             "connections": median([f["connections"] for f in fl_ok]),
             "curl": fl_ok[0]["result"]["curl"] if fl_ok else None}
    cells = []
    for t in p["many_threads"]:
        for g in gs:
            row = {"threads": t, "gdal": g.name, "version": g.version, "contenders": {}}
            for k in KINDS:
                row["contenders"][k] = _cell(runs[(t, g.name, k)], n)
            stock = set(row["contenders"]["stock"]["digests"] or [])
            for k in KINDS:
                c = row["contenders"][k]
                c["same_as_stock"] = bool(stock) and set(c["digests"] or []) == stock
            v, tu = row["contenders"]["vsitune"], row["contenders"]["tuned"]
            row["vsitune_vs_tuned"] = {
                "opens_per_s": ratio(v["opens_per_s"], tu["opens_per_s"]),
                "cpu_per_open": ratio(v["cpu_per_open_s"], tu["cpu_per_open_s"]),
                "requests_per_open": ratio(v["requests_per_open"], tu["requests_per_open"]),
                "peak_rss": ratio(v["peak_rss_mb"], tu["peak_rss_mb"])}
            for k in KINDS:
                row["contenders"][k]["wall_per_open_over_floor"] = (
                    ratio(row["contenders"][k]["wall_per_open_s"], floor["per_get_s"])
                    if t == 1 else None)
            if t == 1:
                own = _own_floor(own_floors[g.name])
                row["floor_own"] = own
                row["gdal_alone"] = _alone(alone[g.name], tu["cpu_per_open_s"],
                                           floor["per_get_s"], own["cpu_per_get_s"])
                row["handler_alone"] = _handler(
                    {k: handler[(g.name, k)] for k in KINDS}, n, header, own)
            cells.append(row)
    return {"objects": n, "protocol": ep, "rtt_ms": rtt, "reps": p["many_reps"],
            "object_bytes": made.result["bytes"], "header_bytes": header,
            "gdals": {g.name: {"version": g.version, "curl": g.curl} for g in gs},
            "stall_rule": stalls.rule(p["watchdog_s"]), "floor": floor, "cells": cells}


def _alone(rs, tuned_cpu, floor_s, floor_cpu=None):
    """GDAL's own CPU per open: the probe opening the same COG from a local file
    (no network, no plugin) on one thread, beside tuned stock's over the network:
    what no VSI handler can take away from a single thread's CPU per open. Also
    measured idle one RTT before each open ("idle"), as an open over the network
    waits: the same work then costs more here, and that open's own wall added to
    the floor is the least a single thread's wall per open can be; that open's CPU
    added to the floor's CPU per GET (one plain libcurl GET on an open connection)
    is the least a single thread's CPU per open can be over this endpoint."""
    ok = [r["result"] for r in rs if r["ok"] and r["result"]]
    back = [x for x in ok if not x.get("idle_ms")]
    idle = [x for x in ok if x.get("idle_ms")]
    cpu = median([x["cpu_per_open_s"] for x in back])
    out = {"runs": len(rs), "failed": len(rs) - len(ok), "cpu_per_open_s": cpu,
           "wall_per_open_s": median([x["wall_per_open_s"] for x in back]),
           "over_tuned": ratio(cpu, tuned_cpu)}
    if idle:
        icpu = median([x["cpu_per_open_s"] for x in idle])
        iwall = median([x["open_wall_per_open_s"] for x in idle])
        out["idle"] = {"idle_ms": idle[0]["idle_ms"], "cpu_per_open_s": icpu,
                       "open_wall_per_open_s": iwall, "over_tuned": ratio(icpu, tuned_cpu),
                       "floor_plus_open_over_floor":
                           ratio(floor_s + iwall, floor_s) if floor_s and iwall else None}
        if floor_cpu is not None and icpu is not None:
            out["idle"]["plus_floor_cpu_s"] = icpu + floor_cpu
            out["idle"]["plus_floor_cpu_over_tuned"] = ratio(icpu + floor_cpu, tuned_cpu)
    return out


def _own_floor(rs):
    """One GDAL's floor (floor_get built on its own libcurl), from its runs."""
    ok = [r for r in rs if r["ok"]]
    return {"runs": len(rs), "failed": len(rs) - len(ok),
            "per_get_s": median([r["result"]["per_get_s"] for r in ok]),
            "cpu_per_get_s": median([r["result"].get("cpu_per_get_s") for r in ok]),
            "curl": ok[0]["result"]["curl"] if ok else None}


def _handler(by_kind, n, nbytes, own):
    """Each contender's handler alone (many_open.py --read-only runs), 1 thread: CPU and
    wall per object, requests per object, and whether every object read the same
    `nbytes` bytes as through stock GDAL; CPU over the floor's CPU per GET."""
    out = {}
    for k, rs in by_kind.items():
        ok = [r for r in rs if r["ok"] and r["result"] and not r["result"].get("errors")]
        res = [r["result"] for r in ok]
        cpu = median([x["cpu_per_open_s"] for x in res])
        out[k] = {"runs": len(rs), "failed": len(rs) - len(ok),
                  "cpu_per_object_s": cpu,
                  "wall_per_object_s": median([x["wall_per_open_s"] for x in res]),
                  "requests_per_object": median([r["requests"]["total"] / n for r in ok]),
                  "digests": sorted({d for x in res for d in x["digests"]}) or None,
                  "cpu_over_floor": ratio(cpu, own.get("cpu_per_get_s"))}
    stock = set(out["stock"]["digests"] or [])
    for k in out:
        out[k]["same_as_stock"] = bool(stock) and set(out[k]["digests"] or []) == stock
    out["bytes"] = nbytes
    return out


def _cell(rs, n):
    """One contender's cell from its runs (as scen_versions.measure returns them)."""
    marked = stalls.mark(rs)
    ok = [r for r in rs if r["ok"] and not (r["result"] or {}).get("errors")]
    res = [r["result"] for r in ok]
    return {
        "runs": rs, "failed": len(rs) - len(ok), **marked,
        "digests": sorted({d for x in res for d in x["digests"]}) or None,
        "opens_per_s": median([x["opens_per_s"] for x in res]),
        "wall_per_open_s": median([x["wall_per_open_s"] for x in res]),
        "cpu_per_open_s": median([x["cpu_per_open_s"] for x in res]),
        "requests_per_open": median([r["requests"]["total"] / n for r in ok]),
        "lists": median([r["requests"].get("LIST", 0) for r in ok]),
        "heads": median([r["requests"].get("HEAD", 0) for r in ok]),
        "bytes_per_open": median([r["requests"]["bytes"] / n for r in ok]),
        "connections": median([r["connections"] for r in ok]),
        "peak_rss_mb": median([x["vmhwm_kb"] / 1024 for x in res]),
    }


def problems(res):
    """vsitune failing, or reading other than stock GDAL of its release, fails the run."""
    out = []
    for cell in res.get("cells", []):
        v = cell["contenders"]["vsitune"]
        where = f"many_opens {cell['gdal']} x{cell['threads']}"
        if v["failed"]:
            out.append(f"{where}: {v['failed']} vsitune run(s) failed: " +
                       json.dumps([r.get("error") or (r.get("result") or {}).get("first_error")
                                   for r in v["runs"]])[:300])
        elif not v["same_as_stock"]:
            out.append(f"{where}: vsitune read other than stock GDAL")
        h = (cell.get("handler_alone") or {}).get("vsitune")
        if h and (h["failed"] or not h["same_as_stock"]):
            out.append(f"{where}: vsitune's handler alone " +
                       ("failed" if h["failed"] else "read other bytes than stock GDAL's"))
    return out
