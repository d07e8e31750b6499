"""scen_cold.py: scenarios 1 and 2, a cold process against the lab.

1. cold window (seed 001): a fresh Python process opens the COG on /vsis3/ and
   reads one 512x512 window; 2. gdalinfo cold. Both over the grid RTT x protocol,
   every contender, runs alternated A B C A B C and repeated. For each run: the
   wall time of the whole process (start to exit, timed here), the requests and
   connections the lab saw. Beside them, the floor: the same process against the
   local file (process start, imports, decode) plus the wire's part no client can
   avoid, measured on the same endpoint at the same RTT: a plain libcurl client
   (bench/probes/floor_get.c --ranges) connects and GETs, signed as the contenders'
   GETs are, the header's bytes, then (for a window) the tile's bytes of the same
   object, alternated with the contenders' runs. Also
   shown, the arithmetic floor the wire term replaces: connect round trips +
   request round trips + the transfer at the lab's loopback rate, which leaves out
   what every request costs the lab's servers and TLS its CPU.
"""

import http.client
import os
import time

import common
import scen_many
import stalls
from common import CONTENDERS, PROBES, PYTHON, median, ratio

WINDOW = (4096, 4096, 512)  # x, y, size: one internal tile of the s2 fixture


def connect_rtts(endpoint):
    """Round trips a new connection costs through the lab before the first
    request: the delay proxy does not delay TCP's own handshake (see
    tests/lab/lib/delayproxy.js), TLS 1.3 (nghttpx) costs one."""
    return 0 if endpoint == "h1" else 1


def loopback_rate(lab):
    """Bytes per second of one plain GET through the h1 endpoint at delay 0:
    the transfer term of the floor. Uses an anonymous read of a public object."""
    payload = os.urandom(8 << 20)
    lab.put_object("public", "bench/rate.bin", payload)
    lab.reset()
    port = lab.info["endpoints"]["h1"]["port"]
    best = None
    for _ in range(3):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        t0 = time.monotonic()
        conn.request("GET", "/public/bench/rate.bin")
        body = conn.getresponse().read()
        dt = time.monotonic() - t0
        conn.close()
        if len(body) == len(payload):
            best = dt if best is None else min(best, dt)
    lab.delete_object("public", "bench/rate.bin")
    return len(payload) / best if best else None


def _grid(ctx):
    return [(rtt, ep) for rtt in ctx.p["rtts_ms"] for ep in ctx.p["protocols"]]


def wire_ranges(ctx, tile):
    """The ranges the wire floor GETs, as "FIRST-LAST": the header's bytes (where
    the first tile's data starts), then, if `tile`, the window's internal tile as
    the TIFF's offsets place it (bench/probes/cog_ranges.py on the local file)."""
    x, y, _ = ctx.window
    r = common.run_child([PYTHON, PROBES / "cog_ranges.py", ctx.local_path, x, y],
                         common.lab_client.gdal_env({}), timeout=ctx.p["watchdog_s"])
    if not r.ok or not r.result:
        raise RuntimeError(f"reading the fixture's layout failed: {r.error()}")
    out = [f"0-{r.result['header_bytes'] - 1}"]
    if tile:
        off = r.result["tile_offset"]
        out.append(f"{off}-{off + r.result['tile_bytes'] - 1}")
    return out


def _wire(ctx, exe, ep, rtt, ranges):
    """One wire-floor run: floor_get --ranges, signed, of the contenders' own object,
    on a new connection through `ep` at `rtt`."""
    key = ctx.remote_path[len("/vsis3"):]
    w = scen_many.run_floor(ctx, exe, ep, rtt,
                            lambda url, ca: ["--ranges", url + key, ca or "-", *ranges])
    return {**w, "elapsed_s": (w["result"] or {}).get("elapsed_s")}


def _measure(ctx, name, argv_for, local_argv, reps, ranges, check):
    """Run one cold scenario: argv_for(path) builds the command; local_argv is
    the floor's command, `ranges` the wire floor's GETs (one request round trip
    each). Returns the scenario's results dict."""
    lab, prog = ctx.lab, ctx.progress
    grid = _grid(ctx)
    request_rtts = len(ranges)
    exe = scen_many.build_floor(ctx)
    prog.start(name, reps * (1 + len(grid) * (1 + len(CONTENDERS))))
    local, local_inside = [], []
    runs = {(rtt, ep, c): [] for rtt, ep in grid for c in CONTENDERS}
    wires = {(rtt, ep): [] for rtt, ep in grid}
    for rep in range(reps):
        # the floor's process (same program, local file), alternated with the rest
        env = common.lab_client.gdal_env({}, vsitune=False)
        r = common.run_child(local_argv, env, timeout=ctx.p["watchdog_s"])
        local.append(r.wall if check(r) else None)
        if check(r) and r.result:
            local_inside.append(r.result["open_s"] + r.result["read_s"])
        prog.step(f"local file {r.wall:.2f} s")
        for rtt, ep in grid:
            w = _wire(ctx, exe, ep, rtt, ranges)
            wires[(rtt, ep)].append(w)
            prog.step(f"wire floor {ep} RTT {rtt} ms: " +
                      (f"{w['elapsed_s'] * 1000:.1f} ms" if w["ok"] else f"FAILED {w['error']}"))
            for c in CONTENDERS:
                lab.reset()
                env = common.contender_env(lab, c, ep, ctx.build_dir)
                lab.set_delay(rtt // 2, ep)
                r = common.run_child(argv_for(ctx.remote_path), env, timeout=ctx.p["watchdog_s"])
                log = lab.log()
                run = {"rep": rep, "wall_s": r.wall, "ok": check(r), "error": r.error(),
                       "killed": r.timed_out,
                       "requests": common.request_summary(log),
                       "connections": lab.connections(ep)["accepted"]}
                if r.result:
                    run["inside"] = {k: r.result.get(k) for k in
                                     ("import_s", "open_s", "read_s", "checksum")}
                runs[(rtt, ep, c)].append(run)
                prog.step(f"{c} {ep} RTT {rtt} ms: {r.wall:.2f} s, {len(log)} requests")
    # the floor's process part: the fastest local run (a floor, not a typical run)
    local_wall = min((v for v in local if v is not None), default=None)
    cells = []
    for rtt, ep in grid:
        min_bytes = min((run["requests"]["bytes"] for c in CONTENDERS
                         for run in runs[(rtt, ep, c)] if run["ok"]), default=None)
        transfer = min_bytes / ctx.rate if (min_bytes and ctx.rate) else 0.0
        # the wire's part: the fastest plain libcurl connect + GETs (a floor, not a
        # typical run); the arithmetic one beside it (round trips + transfer only)
        ws = wires[(rtt, ep)]
        wire = min((w["elapsed_s"] for w in ws if w["ok"]), default=None)
        rtt_wire = (connect_rtts(ep) + request_rtts) * rtt / 1000 + transfer
        floor = local_wall + wire if local_wall is not None and wire is not None else None
        rtt_floor = local_wall + rtt_wire if local_wall is not None else None
        # open + read of the local file (driver registration, header parse, decode),
        # plus what the network adds at the least
        net_floor = min(local_inside) + wire if local_inside and wire is not None else None
        row = {"rtt_ms": rtt, "protocol": ep, "floor_s": floor, "network_floor_s": net_floor,
               "rtt_floor_s": rtt_floor,
               "floor_parts": {"local_process_s": local_wall, "wire_s": wire,
                               "wire_median_s": median([w["elapsed_s"] for w in ws if w["ok"]]),
                               "wire_runs": ws, "wire_ranges": ranges,
                               "connect_rtts": connect_rtts(ep),
                               "request_rtts": request_rtts, "transfer_bytes": min_bytes,
                               "transfer_s": transfer},
               "contenders": {}}
        for c in CONTENDERS:
            rs = runs[(rtt, ep, c)]
            ok = [x for x in rs if x["ok"]]
            wall = median([x["wall_s"] for x in ok])
            inside = [x["inside"]["open_s"] + x["inside"]["read_s"] for x in ok if "inside" in x]
            row["contenders"][c] = {
                "runs": rs, "failed": len(rs) - len(ok),
                "wall_s": wall,
                # open + read as timed inside the process (no interpreter start, no
                # imports): the part the network decides. None for gdalinfo.
                "open_read_s": median(inside),
                "open_read_rtt": (median(inside) / (rtt / 1000)
                                  if inside and rtt else None),
                "wall_rtt": wall / (rtt / 1000) if wall is not None and rtt else None,
                "requests": median([x["requests"]["total"] for x in ok]),
                "lists": median([x["requests"].get("LIST", 0) for x in ok]),
                "heads": median([x["requests"].get("HEAD", 0) for x in ok]),
                "connections": median([x["connections"] for x in ok]),
                "bytes": median([x["requests"]["bytes"] for x in ok]),
                "over_floor": ratio(wall, floor),
                "over_rtt_floor": ratio(wall, rtt_floor),
                "open_read_over_network_floor": ratio(median(inside), net_floor),
                **stalls.mark(rs),
            }
        for c in ("stock", "tuned"):
            row["contenders"][c]["vsitune_speedup"] = ratio(row["contenders"][c]["wall_s"],
                                                            row["contenders"]["vsitune"]["wall_s"])
        cells.append(row)
    return {"reps": reps, "local_runs_s": local, "local_wall_s": local_wall,
            "local_median_s": median(local), "local_open_read_s": local_inside, "cells": cells}


def cold_window(ctx):
    x, y, size = ctx.window

    def check(r):
        return r.ok and r.result.get("shape") == [size, size]

    def argv(path):
        return [PYTHON, PROBES / "cold_window.py", path, x, y, size]

    res = _measure(ctx, "1 cold window", argv, argv(ctx.local_path), ctx.p["cold_reps"],
                   ranges=wire_ranges(ctx, tile=True), check=check)
    # byte-exactness: every remote run's checksum equals the local file's
    local = common.run_child(argv(ctx.local_path), common.lab_client.gdal_env({}),
                             timeout=ctx.p["watchdog_s"])
    want = local.result.get("checksum") if local.ok else None
    for cell in res["cells"]:
        for c in CONTENDERS:
            v = cell["contenders"][c]
            v["wrong_checksums"] = sum(1 for run in v["runs"] if run["ok"] and
                                       run.get("inside", {}).get("checksum") != want)
    res.update({"window": {"x": x, "y": y, "size": size}, "expected_checksum": want})
    return res


def gdalinfo_cold(ctx):
    def check(r):
        return r.rc == 0 and not r.timed_out and "Size is" in r.stdout

    def argv(path):
        return ["gdalinfo", path]

    return _measure(ctx, "2 gdalinfo cold", argv, argv(ctx.local_path), ctx.p["cold_reps"],
                    ranges=wire_ranges(ctx, tile=False), check=check)
