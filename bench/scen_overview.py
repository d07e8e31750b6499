"""scen_overview.py: scenario 16, overview reads at 50/25/12.5% (issue 22).

A fresh process opens the fixture COG and reads the whole band into a buffer of
that fraction of its size (bench/probes/overview_read.py): GDAL serves it from an
overview level, so the bytes it needs are that level's tiles (listed from the local
file beside the results). Every contender on every GDAL of the run, runs
alternated, against the S3-like front at the scenario's RTT: bytes and requests as
the lab saw them, bytes against stock GDAL of the same release and against the
level's own bytes, open + read time inside the process. Every run's checksum must
equal the local file's.
"""

import common
import scen_versions
import stalls
from common import PROBES, PYTHON, median, ratio

KINDS = scen_versions.KINDS


def overview_reads(ctx):
    p, prog = ctx.p, ctx.progress
    ep, rtt = p["users_protocol"], p["users_rtt_ms"]
    gs = scen_versions.gdals(ctx)
    fracs = p["overview_fractions"]
    want, levels = {}, None
    for fr in fracs:
        r = common.run_child([PYTHON, PROBES / "overview_read.py", ctx.local_path, fr, "--levels"],
                             common.lab_client.gdal_env({}), timeout=p["watchdog_s"])
        if not r.ok:
            raise RuntimeError(f"reference overview read failed: {r.error()}")
        want[fr], levels = r.result, r.result["levels"]
    prog.start("16 overview reads", p["overview_reps"] * len(fracs) * len(gs) * len(KINDS))
    runs = {}
    for rep in range(p["overview_reps"]):
        for fr in fracs:
            for g in gs:
                for k in KINDS:
                    run = scen_versions.measure(ctx, g, k, ep, rtt, [
                        PYTHON, PROBES / "overview_read.py", ctx.remote_path, fr])
                    run["rep"] = rep
                    run["checksum_ok"] = ((run["result"] or {}).get("checksum") ==
                                          want[fr]["checksum"]) if run["ok"] else None
                    runs.setdefault((fr, g.name, k), []).append(run)
                    prog.step(f"{k}@{g.name} {fr:g}: {run['requests']['bytes']:,} bytes, "
                              f"{run['requests']['total']} req" if run["ok"] else
                              f"{k}@{g.name} {fr:g}: {(run['error'] or '')[:80]}")
    cells = []
    for fr in fracs:
        w = want[fr]["buf"][0]
        # the level GDAL reads: the smallest at least as wide as the buffer
        level = min((lv for lv in levels if lv["width"] >= w), key=lambda lv: lv["width"])
        for g in gs:
            row = {"fraction": fr, "buf": want[fr]["buf"], "level": level, "gdal": g.name,
                   "version": g.version, "contenders": {}}
            for k in KINDS:
                ok, base = scen_versions.cell_runs(runs[(fr, g.name, k)])
                row["contenders"][k] = {
                    **base,
                    "bytes": median([r["requests"]["bytes"] for r in ok]),
                    "requests": median([r["requests"]["total"] for r in ok]),
                    "lists": median([r["requests"].get("LIST", 0) for r in ok]),
                    "connections": median([r["connections"] for r in ok]),
                    "open_read_s": median([r["result"]["open_s"] + r["result"]["read_s"]
                                           for r in ok]),
                }
            stock = row["contenders"]["stock"]
            for k in KINDS:
                c = row["contenders"][k]
                c["bytes_vs_stock"] = ratio(c["bytes"], stock["bytes"])
                c["bytes_vs_level"] = ratio(c["bytes"], level["bytes"])
                c["time_vs_stock"] = ratio(c["open_read_s"], stock["open_read_s"])
            cells.append(row)
    return {"fractions": fracs, "levels": levels, "protocol": ep, "rtt_ms": rtt,
            "reps": p["overview_reps"], "stall_rule": stalls.rule(p["watchdog_s"]),
            "cells": cells}
