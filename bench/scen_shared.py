"""scen_shared.py: scenarios 10-12, many processes on one host (issue 11).

Each runs one workload of several worker processes three ways, side by side in the
same run: stock GDAL, vsitune with its per-process cache (the default), and vsitune
with the host-wide shared cache (VSITUNE_SHARED_CACHE=YES, a pool of the run's own).
Requests, bytes and connections come from the lab's log; memory is the workers'
total PSS (a page shared by N processes counts 1/N in each, so a shared cache counts
once); every chunk, tile or window is compared with the local file.

10 dask_twice   a dask.distributed LocalCluster (4 worker processes) computes chunk
                means of a region through rioxarray, twice; the second pass is what
                the shared cache saves. Shared runs with a budget that holds the
                region and with one of half the region (LRU would keep none of it).
11 tile_workers a TiTiler-shaped FastAPI app under uvicorn with 4 workers serves
                random tiles of 4 scenes at concurrency 16 (stock GDAL also with
                TiTiler's environment); and the same sequence
                with 1 worker (shared), the baseline for "4 workers cost what 1 does".
                The rows the acceptance compares (stock, per-process and shared at
                tile_workers) run tile_workers_reps times, interleaved (rep 1 of every
                variant, then rep 2, ...), the others once; the page shows medians.
12 pool_fork5   seed 000's handler: ProcessPoolExecutor (fork), 5 workers, every
                512x512 window of the scene.
"""

import json
import os
import statistics
import subprocess
import time

import common
import stalls
from common import PROBES, PYTHON

LABELS = {"stock": "stock GDAL", "tuned": "stock GDAL, TiTiler's environment",
          "vsitune": "vsitune, per-process cache",
          "shared": "vsitune, shared cache"}


def _env(ctx, contender, extra=None):
    """stock/tuned/vsitune as common.contender_env; shared = vsitune + the shared cache."""
    p = ctx.p
    base = contender if contender in ("stock", "tuned") else "vsitune"
    env = common.contender_env(ctx.lab, base, p["shared_protocol"], ctx.build_dir)
    if contender.startswith("shared"):
        env.update({"VSITUNE_SHARED_CACHE": "YES",
                    "VSITUNE_SHARED_CACHE_NAME": f"bench{os.getpid()}"})
    env.update(extra or {})
    return env


def _requests(log):
    s = common.request_summary(log)
    return {"total": s["total"], "get": s.get("GET_RANGE", 0) + s.get("GET", 0),
            "bytes": s["bytes"]}


def _close(a, b, tol=1e-6):
    if a is None or b is None:
        return a is b
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


# ---- 9: dask, the same region twice -----------------------------------------------------

def _dask_argv(ctx, path, no_wait=False):
    p = ctx.p
    argv = [PYTHON, PROBES / "dask_region.py", path, "--workers", p["dask_workers"],
            "--region", p["dask_region"], "--chunk", p["dask_chunk"],
            "--x0", p["dask_x0"], "--y0", p["dask_y0"]]
    return argv + (["--no-wait"] if no_wait else [])


def _dask_run(ctx, contender, extra):
    """One run; the lab's log is split at the probe's pass1 marker."""
    lab, p = ctx.lab, ctx.p
    lab.reset()
    lab.set_delay(p["shared_rtt_ms"] // 2, p["shared_protocol"])
    env = _env(ctx, contender, extra)
    t0 = time.monotonic()
    proc = subprocess.Popen([str(a) for a in _dask_argv(ctx, ctx.remote_path)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    run = {"contender": contender, "extra": extra, "ok": False, "killed": False}
    try:
        first = json.loads(proc.stdout.readline() or "{}")
        if first.get("phase") != "pass1":
            raise RuntimeError("no pass1 marker")
        log1 = lab.log()
        mark = log1[-1]["seq"] if log1 else 0
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=p["watchdog_s"])
        res = next((json.loads(ln)["result"] for ln in out.splitlines()
                    if ln.startswith('{"result"')), None)
        if proc.returncode != 0 or res is None:
            raise RuntimeError(f"exit {proc.returncode}: {err.strip().splitlines()[-1:]}")
        log2 = [e for e in lab.log() if e["seq"] > mark]
        run.update(ok=True, wall_s=time.monotonic() - t0, pass1=_requests(log1),
                   pass2=_requests(log2), pass1_wall_s=res["passes"][0]["wall_s"],
                   pass2_wall_s=res["passes"][1]["wall_s"],
                   pss_after_pass1=res["passes"][0]["pss"],
                   pss_after_pass2=res["passes"][1]["pss"], means=res["means"])
        g1, g2 = run["pass1"]["get"], run["pass2"]["get"]
        run["pass2_gets_pct_of_pass1"] = 100.0 * g2 / g1 if g1 else None
        b1, b2 = run["pass1"]["bytes"], run["pass2"]["bytes"]
        run["pass2_bytes_saved_pct"] = 100.0 * (1 - b2 / b1) if b1 else None
    except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as e:
        run["error"] = f"{type(e).__name__}: {e}"
        run["killed"] = isinstance(e, subprocess.TimeoutExpired)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()
    run.setdefault("wall_s", time.monotonic() - t0)
    return run


def dask_twice(ctx):
    p, prog = ctx.p, ctx.progress
    ref = common.run_child(_dask_argv(ctx, ctx.local_path, no_wait=True) + ["--reference"],
                           common.lab_client.gdal_env({}), timeout=p["watchdog_s"])
    if not ref.ok:
        raise RuntimeError(f"reference dask run failed: {ref.error()}")
    want = ref.result["means"]
    region = _region_bytes(ctx)
    if not region:
        raise RuntimeError("cannot size the region from the local file")
    # A budget that holds the region (twice its compressed bytes) and one of half
    # of it; never under the shared cache's 8 MiB minimum (quick mode).
    full, half = max(2 * region, 16 << 20), max(region // 2, 16 << 20)
    variants = [("stock", {}, None), ("vsitune", {}, None),
                ("shared", {"VSITUNE_SHARED_CACHE_SIZE": str(full)}, "holds the region"),
                ("shared", {"VSITUNE_SHARED_CACHE_SIZE": str(half)}, "half the region")]
    prog.start("10 dask twice", len(variants))
    runs = []
    for contender, extra, budget in variants:
        r = _dask_run(ctx, contender, extra)
        r["budget"] = budget
        stalls.mark([r])  # one run per variant: a stall only by the watchdog
        if r["ok"]:
            r["wrong_chunks"] = sum(1 for a, b in zip(r["means"], want) if not _close(a, b)) \
                + abs(len(r["means"]) - len(want))
            del r["means"]
        runs.append(r)
        prog.step(f"{contender} {extra.get('VSITUNE_SHARED_CACHE_SIZE', '')}: "
                  + (f"{r['pass1']['get']} + {r['pass2']['get']} GETs" if r["ok"]
                     else r["error"][:80]))
    return {"labels": LABELS, "workers": p["dask_workers"], "region": p["dask_region"],
            "chunk": p["dask_chunk"], "rtt_ms": p["shared_rtt_ms"],
            "protocol": p["shared_protocol"], "chunks": len(want),
            "region_bytes": region, "budget_full": full, "budget_half": half, "runs": runs}


def _region_bytes(ctx):
    """Compressed bytes of the tiles the region covers (from the local file's layout)."""
    p = ctx.p
    code = ("import sys, json\nfrom osgeo import gdal\n"
            "ds = gdal.Open(sys.argv[1]); b = ds.GetRasterBand(1); bs = b.GetBlockSize()[0]\n"
            "x0, y0, n = map(int, sys.argv[2:5]); t = 0\n"
            "for ty in range(y0 // bs, (y0 + n - 1) // bs + 1):\n"
            "    for tx in range(x0 // bs, (x0 + n - 1) // bs + 1):\n"
            "        t += int(b.GetMetadataItem(f'BLOCK_SIZE_{tx}_{ty}', 'TIFF') or 0)\n"
            "print(t)\n")
    cp = subprocess.run([PYTHON, "-c", code, ctx.local_path, str(p["dask_x0"]),
                         str(p["dask_y0"]), str(p["dask_region"])], capture_output=True,
                        text=True, env=common.lab_client.gdal_env({}))
    return int(cp.stdout.strip()) if cp.returncode == 0 else None


# ---- 10: a tile server with N uvicorn workers -------------------------------------------

def _scenes(ctx):
    """The fixture under TILE_SCENES keys of its own (4 objects, 4 identities)."""
    lab = ctx.lab
    keys = []
    for i in range(ctx.p["tile_scenes"]):
        key = f"scenes/tileapp/scene{i}.tif"
        lab.put_object("lab", key, ctx.local_path)
        keys.append(f"/vsis3/lab/{key}")
    return keys


def _tile_run(ctx, scenes, contender, workers, extra):
    """One run of the tile app: one variant, one repetition."""
    p, lab = ctx.p, ctx.lab
    lab.reset()
    lab.set_delay(p["shared_rtt_ms"] // 2, p["shared_protocol"])
    argv = [PYTHON, PROBES / "tile_load.py", ctx.local_path, ",".join(scenes),
            "--workers", workers, "--tiles", p["tile_count"],
            "--concurrency", p["tile_concurrency"], "--seed", 11]
    r = common.run_child(argv, _env(ctx, contender, extra), timeout=p["watchdog_s"])
    run = {"contender": contender, "workers": workers, "extra": extra, "ok": r.ok,
           "error": r.error(), "killed": r.timed_out,
           "wall_s": r.wall, "requests": _requests(lab.log()),
           "connections": lab.connections(p["shared_protocol"])["accepted"]}
    if r.result:
        run.update({k: r.result[k] for k in ("tiles", "distinct_tiles", "tiles_per_s",
                                             "p50_ms", "p99_ms", "errors", "wrong_tiles",
                                             "pss", "tiles_per_worker")})
    return run


def _median(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def tile_variant(runs):
    """The summary of one variant's repetitions (its runs, in run order): the stalls
    among them (bench/stalls.py: the watchdog, or more than twice the median wall
    time of the variant's other reps), with their rep and time, and the median over
    the reps that produced numbers of what the page shows. Errors and wrong tiles
    are summed over every rep: one wrong tile in any rep is one too many."""
    head = runs[0]
    cell = stalls.mark(runs)
    done = [r for r in runs if r.get("tiles_per_s") is not None]
    pss = [r["pss"] for r in done if r.get("pss")]
    med = {"tiles_per_s": _median([r["tiles_per_s"] for r in done]),
           "p50_ms": _median([r["p50_ms"] for r in done]),
           "p99_ms": _median([r["p99_ms"] for r in done]),
           "requests": _median([r["requests"]["total"] for r in done]),
           "bytes": _median([r["requests"]["bytes"] for r in done]),
           "connections": _median([r["connections"] for r in done]),
           "wall_s": _median([r["wall_s"] for r in done]),
           "pss": {k: _median([q.get(k) for q in pss])
                   for k in ("pss", "pss_shmem", "segment_bytes")} if pss else None}
    return {"contender": head["contender"], "workers": head["workers"],
            "extra": head["extra"], "reps": len(runs), "finished": len(done),
            "failed": sum(1 for r in runs if not r["ok"]),
            "first_error": next((r["error"] for r in runs if r.get("error")), None),
            "tiles_per_s_each": [r.get("tiles_per_s") for r in runs],
            "stall_reps": [{"rep": r["rep"], **r["stall"]} for r in runs if r["stall"]],
            "errors": sum(r.get("errors") or 0 for r in done),
            "wrong_tiles": sum(r.get("wrong_tiles") or 0 for r in done),
            "median": med, **cell}


def tile_workers(ctx):
    p, prog = ctx.p, ctx.progress
    scenes = _scenes(ctx)
    one = f"{p['tile_one_budget_mb']}M"   # one per-process budget, for the host
    variants = [("stock", p["tile_workers"], {}), ("tuned", p["tile_workers"], {}),
                ("vsitune", p["tile_workers"], {}),
                ("shared", p["tile_workers"], {}),
                ("shared", p["tile_workers"], {"VSITUNE_SHARED_CACHE_SIZE": one}),
                ("vsitune", 1, {}), ("shared", 1, {})]
    reps = p["tile_workers_reps"]
    # The rows issue 22's acceptance compares (bench/render_users.py _acc_workers: stock,
    # per-process and shared caches at tile_workers workers) run `reps` times; the
    # others once (the whole scenario stays near 8 minutes).
    repeated = {v for v, (c, w, x) in enumerate(variants)
                if w == p["tile_workers"] and not x and c in ("stock", "vsitune", "shared")}
    prog.start("11 tile workers", len(variants) + len(repeated) * (reps - 1))
    runs = []
    # Interleaved: rep 1 of every variant, then rep 2 of every repeated one, ... so that
    # a slow phase of the machine falls on several variants, not on all reps of one.
    for rep in range(1, reps + 1):
        for v, (contender, workers, extra) in enumerate(variants):
            if rep > 1 and v not in repeated:
                continue
            run = _tile_run(ctx, scenes, contender, workers, extra)
            run.update(variant=v, rep=rep)
            runs.append(run)
            prog.step(f"rep {rep} {contender} x{workers}: "
                      + (f"{run['requests']['total']} requests, "
                         f"{run['tiles_per_s']:.1f} tiles/s, p99 {run['p99_ms']:.0f} ms"
                         if run.get("tiles_per_s") is not None
                         else (run["error"] or "")[:80]))
    summary = [tile_variant([r for r in runs if r["variant"] == v])
               for v in range(len(variants))]
    return {"labels": LABELS, "scenes": len(scenes), "tiles": p["tile_count"],
            "concurrency": p["tile_concurrency"], "workers": p["tile_workers"],
            "rtt_ms": p["shared_rtt_ms"], "protocol": p["shared_protocol"], "reps": reps,
            "cache_default_mb": common.plugin_cache_default_mb(ctx.build_dir),
            "one_budget_mb": p["tile_one_budget_mb"],
            "stall_rule": stalls.rule(p["watchdog_s"]), "variants": summary, "runs": runs}


# ---- 11: seed 000's fork pool -------------------------------------------------------------

def pool_fork5(ctx):
    p, prog, lab = ctx.p, ctx.progress, ctx.lab
    argv = lambda path: [PYTHON, PROBES / "pool.py", path, "--executor", "process",  # noqa
                         "--workers", p["pool5_workers"], "--cols", p["pool5_cols"],
                         "--rows", p["pool5_rows"]]
    ref = common.run_child(argv(ctx.local_path), common.lab_client.gdal_env({}),
                           timeout=p["watchdog_s"])
    if not ref.ok:
        raise RuntimeError(f"reference pool run failed: {ref.error()}")
    want = ref.result["means"]
    prog.start("12 pool fork x5", 3)
    runs = []
    for contender in ("stock", "vsitune", "shared"):
        lab.reset()
        lab.set_delay(p["shared_rtt_ms"] // 2, p["shared_protocol"])
        r = common.run_child(argv(ctx.remote_path), _env(ctx, contender),
                             timeout=p["watchdog_s"])
        run = {"contender": contender, "ok": r.ok, "error": r.error(), "wall_s": r.wall,
               "killed": r.timed_out,
               "requests": _requests(lab.log())}
        if r.result:
            got = r.result["means"]
            run.update(windows=len(got), windows_per_s=r.result["windows_per_s"],
                       pss=r.result.get("pss"),
                       wrong_windows=sum(1 for a, b in zip(got, want) if not _close(a, b))
                       + abs(len(got) - len(want)))
        stalls.mark([run])  # one run per variant: a stall only by the watchdog
        runs.append(run)
        prog.step(f"{contender}: " + (f"{run['requests']['total']} requests"
                                      if r.ok else (run["error"] or "")[:80]))
    return {"labels": LABELS, "workers": p["pool5_workers"], "windows": len(want),
            "rtt_ms": p["shared_rtt_ms"], "protocol": p["shared_protocol"], "runs": runs}


def problems(name, res):
    """vsitune (either cache) reading wrong bytes or failing fails the run."""
    out = []
    for r in res.get("runs", []):
        if r["contender"] in ("stock", "tuned"):  # stock GDAL: a finding, not a failure
            continue
        if not r.get("ok"):
            out.append(f"{name}: {r['contender']} failed: {(r.get('error') or '')[:300]}")
        for k in ("wrong_chunks", "wrong_tiles", "wrong_windows", "errors"):
            if r.get(k):
                out.append(f"{name}: {r['contender']}: {r[k]} {k.replace('_', ' ')}")
    return out
