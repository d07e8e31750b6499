"""scen_tiles.py: scenarios 3 and 5, many tile requests in one process.

3. Tile server (seeds 000, 003; issue 4's benchmark): open per request, random
   256x256 windows, 1/4/16 threads, over RTT x protocol: windows/s, requests,
   connections (the lab's counter), peak RSS (VmHWM). Stock GDAL with HTTP/2
   multiplexing can stall for nghttpx's 180 s read timeout (issue 4): a run the
   watchdog kills is a stall (with how many windows were done) and the same
   contender is not re-run in that cell; a run slower than twice the median of
   the contender's other runs in the cell is a stall too (bench/stalls.py).
5. Memory soak (seed 003): many tile requests at concurrency 16 through the same
   threaded reader, RSS before (after imports) and after, with glibc's default
   malloc arenas and with MALLOC_ARENA_MAX=2, for each contender.
Every run's checksum is compared with the same windows read from the local file.
"""

import common
import stalls
from common import CONTENDERS, PROBES, PYTHON, median, ratio


def _argv(ctx, path, threads, requests, seed):
    return [PYTHON, PROBES / "tiles.py", path, ctx.width, ctx.height, "--threads", threads,
            "--requests", requests, "--seed", seed]


def _reference(ctx, requests, seed):
    """Checksum of the same windows read from the local file (no lab)."""
    r = common.run_child(_argv(ctx, ctx.local_path, 2, requests, seed),
                         common.lab_client.gdal_env({}), timeout=ctx.p["watchdog_s"])
    if not r.ok:
        raise RuntimeError(f"reference tile run failed: {r.error()}")
    return r.result["checksum"]


def _one(ctx, contender, endpoint, rtt, threads, requests, seed, extra=None):
    lab = ctx.lab
    lab.reset()
    env = common.contender_env(lab, contender, endpoint, ctx.build_dir, extra=extra)
    lab.set_delay(rtt // 2, endpoint)
    r = common.run_child(_argv(ctx, ctx.remote_path, threads, requests, seed), env,
                         timeout=ctx.p["watchdog_s"])
    log = lab.log()
    done = max([ln["done"] for ln in r.lines if "done" in ln] or [0])
    run = {"wall_s": r.wall, "ok": r.ok, "error": r.error(), "killed": r.timed_out,
           "windows_done": done, "requests": common.request_summary(log),
           "connections": lab.connections(endpoint)["accepted"]}
    if r.result:
        run.update({k: r.result.get(k) for k in
                    ("windows_per_s", "elapsed_s", "latency_median_s", "latency_max_s",
                     "checksum", "rss_start_kb", "rss_end_kb", "vmhwm_kb")})
    return run


def tile_server(ctx):
    p, prog = ctx.p, ctx.progress
    seed = 3
    reqs = {t: p["tile_requests"][str(t)] for t in p["tile_threads"]}
    refs = {t: _reference(ctx, reqs[t], seed) for t in p["tile_threads"]}
    grid = [(rtt, ep, t) for rtt in p["rtts_ms"] for ep in p["protocols"]
            for t in p["tile_threads"]]
    prog.start("3 tile server", p["tile_reps"] * len(grid) * len(CONTENDERS))
    runs = {(g, c): [] for g in grid for c in CONTENDERS}
    for rep in range(p["tile_reps"]):
        for g in grid:
            rtt, ep, t = g
            for c in CONTENDERS:
                if any(x["killed"] for x in runs[(g, c)]):
                    prog.step(f"{c} {ep} RTT {rtt} {t} threads: skipped (killed before)")
                    continue
                run = _one(ctx, c, ep, rtt, t, reqs[t], seed)
                run["rep"] = rep
                run["checksum_ok"] = run.get("checksum") == refs[t] if run["ok"] else None
                runs[(g, c)].append(run)
                what = ("KILLED" if run["killed"] else
                        f"{run.get('windows_per_s') or 0:.1f} win/s" if run["ok"] else "FAILED")
                prog.step(f"{c} {ep} RTT {rtt} ms {t} thr: {what}, "
                          f"{run['requests']['total']} req, {run['connections']} conn")
    cells = []
    for g in grid:
        rtt, ep, t = g
        row = {"rtt_ms": rtt, "protocol": ep, "threads": t, "requests_per_run": reqs[t],
               "contenders": {}}
        for c in CONTENDERS:
            row["contenders"][c] = tile_cell(runs[(g, c)], reqs[t])
        v = row["contenders"]["vsitune"]["windows_per_s"]
        for c in ("stock", "tuned"):
            row["contenders"][c]["vsitune_speedup"] = ratio(v, row["contenders"][c]["windows_per_s"])
        cells.append(row)
    return {"reps": p["tile_reps"], "seed": seed, "window": 256,
            "stall_rule": stalls.rule(p["watchdog_s"]),
            "reference_checksums": {str(k): v for k, v in refs.items()}, "cells": cells}


def tile_cell(rs, requests):
    """One contender's cell of scenario 3 from its runs (each as _one returns it):
    medians over the runs that finished, stalls by bench/stalls.py's rule."""
    ok = [x for x in rs if x["ok"]]
    return {
        "runs": rs, "failed": sum(1 for x in rs if not x["ok"] and not x["killed"]),
        **stalls.mark(rs),
        "wrong_checksums": sum(1 for x in ok if x["checksum_ok"] is False),
        "windows_per_s": median([x["windows_per_s"] for x in ok]),
        "requests_per_window": median([x["requests"]["total"] / requests for x in ok]),
        "connections": median([x["connections"] for x in ok]),
        "peak_rss_mb": median([x["vmhwm_kb"] / 1024 for x in ok]),
        "latency_max_s": median([x["latency_max_s"] for x in ok]),
    }


def memory_soak(ctx):
    p, prog = ctx.p, ctx.progress
    seed, n, conc = 5, p["soak_requests"], 16
    ref = _reference(ctx, n, seed)
    arenas = [("default", None), ("2", {"MALLOC_ARENA_MAX": "2"})]
    prog.start("5 memory soak", p["soak_reps"] * len(arenas) * len(CONTENDERS))
    runs = {(a, c): [] for a, _ in arenas for c in CONTENDERS}
    for rep in range(p["soak_reps"]):
        for a, extra in arenas:
            for c in CONTENDERS:
                run = _one(ctx, c, p["soak_protocol"], p["soak_rtt_ms"], conc, n, seed,
                           extra=extra)
                run["rep"] = rep
                run["checksum_ok"] = run.get("checksum") == ref if run["ok"] else None
                runs[(a, c)].append(run)
                what = (f"RSS {run['rss_start_kb'] / 1024:.0f} -> {run['rss_end_kb'] / 1024:.0f} MB"
                        if run["ok"] else ("KILLED" if run["killed"] else "FAILED"))
                prog.step(f"{c} MALLOC_ARENA_MAX={a}: {what}")
    cells = []
    for a, _ in arenas:
        row = {"malloc_arena_max": a, "contenders": {}}
        for c in CONTENDERS:
            rs = runs[(a, c)]
            ok = [x for x in rs if x["ok"]]
            before = median([x["rss_start_kb"] / 1024 for x in ok])
            after = median([x["rss_end_kb"] / 1024 for x in ok])
            row["contenders"][c] = {
                "runs": rs, "failed": len(rs) - len(ok), **stalls.mark(rs),
                "wrong_checksums": sum(1 for x in ok if x["checksum_ok"] is False),
                "rss_before_mb": before, "rss_after_mb": after,
                "growth_mb": median([(x["rss_end_kb"] - x["rss_start_kb"]) / 1024 for x in ok]),
                "peak_rss_mb": median([x["vmhwm_kb"] / 1024 for x in ok]),
                "windows_per_s": median([x["windows_per_s"] for x in ok]),
                "requests": median([x["requests"]["total"] for x in ok]),
                "connections": median([x["connections"] for x in ok]),
            }
        cells.append(row)
    return {"requests": n, "requests_seed": 2880, "concurrency": conc, "seed": seed,
            "protocol": p["soak_protocol"], "rtt_ms": p["soak_rtt_ms"], "reps": p["soak_reps"],
            "reference_checksum": ref, "cells": cells,
            "cache_default_mb": common.plugin_cache_default_mb(ctx.build_dir)}
