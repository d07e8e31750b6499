"""scen_pool.py: scenario 4, seed 000's process-pool sweep on this machine.

The window-statistics handler (bench/probes/pool.py) over a block-aligned region
of the scene, through ProcessPoolExecutor (fork) and ThreadPoolExecutor at each
worker count, for every contender; worker counts are the outer loop and the
contenders alternate inside it. Reports windows/s, the speedup over one worker,
where the curve flattens (the first count whose gain over the previous is below
10%), and whether every window's mean equals the local file's.
"""

import math
import os

import common
import stalls
from common import CONTENDERS, PROBES, PYTHON, median, ratio

EXECUTORS = ("process", "thread")


def _argv(ctx, path, executor, workers):
    p = ctx.p
    return [PYTHON, PROBES / "pool.py", path, "--executor", executor, "--workers", workers,
            "--cols", p["pool_cols"], "--rows", p["pool_rows"]]


def _same(a, b):
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def knee(points):
    """First worker count whose windows/s gain over the previous count is < 10%
    (the curve has flattened there), or None if it never flattens."""
    prev = None
    for w, v in points:
        if v is None:
            continue
        if prev is not None and prev[1] and v < prev[1] * 1.10:
            return prev[0]
        prev = (w, v)
    return None


def pool_sweep(ctx):
    p, prog, lab = ctx.p, ctx.progress, ctx.lab
    ref = common.run_child(_argv(ctx, ctx.local_path, "thread", 2), common.lab_client.gdal_env({}),
                           timeout=p["watchdog_s"])
    if not ref.ok:
        raise RuntimeError(f"reference pool run failed: {ref.error()}")
    want = ref.result["means"]
    workers = p["pool_workers"]
    prog.start("4 pool sweep", p["pool_reps"] * len(workers) * len(EXECUTORS) * len(CONTENDERS))
    runs = {(e, w, c): [] for e in EXECUTORS for w in workers for c in CONTENDERS}
    for rep in range(p["pool_reps"]):
        for w in workers:
            for e in EXECUTORS:
                for c in CONTENDERS:
                    lab.reset()
                    env = common.contender_env(lab, c, p["pool_protocol"], ctx.build_dir)
                    lab.set_delay(p["pool_rtt_ms"] // 2, p["pool_protocol"])
                    r = common.run_child(_argv(ctx, ctx.remote_path, e, w), env,
                                         timeout=p["watchdog_s"])
                    log = lab.log()
                    run = {"rep": rep, "ok": r.ok, "error": r.error(), "wall_s": r.wall,
                           "killed": r.timed_out,
                           "requests": common.request_summary(log),
                           "connections": lab.connections(p["pool_protocol"])["accepted"]}
                    if r.ok:
                        got = r.result["means"]
                        run["windows_per_s"] = r.result["windows_per_s"]
                        run["wrong_windows"] = sum(1 for a, b in zip(got, want) if not _same(a, b)) \
                            + abs(len(got) - len(want))
                    runs[(e, w, c)].append(run)
                    what = f"{run.get('windows_per_s', 0):.1f} win/s" if r.ok else "FAILED"
                    prog.step(f"{c} {e} x{w}: {what}")
    series = {}
    for e in EXECUTORS:
        for c in CONTENDERS:
            pts = []
            for w in workers:
                ok = [x for x in runs[(e, w, c)] if x["ok"]]
                pts.append({"workers": w, "windows_per_s": median([x["windows_per_s"] for x in ok]),
                            "runs": runs[(e, w, c)],
                            "failed": len(runs[(e, w, c)]) - len(ok),
                            **stalls.mark(runs[(e, w, c)]),
                            "wrong_windows": sum(x["wrong_windows"] for x in ok),
                            "requests_per_window": median([x["requests"]["total"] / len(want)
                                                           for x in ok])})
            base = pts[0]["windows_per_s"]
            for pt in pts:
                pt["speedup"] = ratio(pt["windows_per_s"], base)
            series[f"{e}/{c}"] = {"executor": e, "contender": c, "points": pts,
                                  "knee_workers": knee([(pt["workers"], pt["windows_per_s"])
                                                        for pt in pts])}
    return {"windows": len(want), "window": 512, "cols": p["pool_cols"], "rows": p["pool_rows"],
            "protocol": p["pool_protocol"], "rtt_ms": p["pool_rtt_ms"], "reps": p["pool_reps"],
            "workers": workers, "cpus": os.cpu_count(), "series": series}
