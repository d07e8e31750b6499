"""scen_local.py: scenarios 6, 7 and 8, measured on this machine alone.

6. CPU per window: instructions counted by valgrind's callgrind for warm window
   reads (bench/probes/cpu_window.py switches instrumentation on around them), per
   contender, through the lab's TLS HTTP/1.1 endpoint at no added delay.
   Instruction counts do not depend on the machine's load, so one run each.
7. tunerd profile speed: per-run wall time of `tunerd profile` (if built).
8. Plugin load cost: wall time and peak RSS of `gdalinfo --version` with and
   without GDAL_DRIVER_PATH pointing at the plugin, alternated.
"""

import glob
import os
import re
import shutil
import tempfile
from pathlib import Path

import common
import stalls
from common import CONTENDERS, PROBES, PYTHON, median, ratio


def _callgrind_total(outfile_prefix):
    """Sum of the `totals:` lines of every dump callgrind wrote for one run."""
    total = 0
    for f in glob.glob(outfile_prefix + "*"):
        with open(f) as fh:
            for ln in fh:
                m = re.match(r"totals:\s+(\d+)", ln)
                if m:
                    total += int(m.group(1))
    return total


def cpu_per_window(ctx):
    p, prog, lab = ctx.p, ctx.progress, ctx.lab
    if not shutil.which("valgrind") or not shutil.which("callgrind_control"):
        return {"skipped": "valgrind (callgrind) is not installed"}
    n, ep = p["cpu_windows"], p["cpu_protocol"]
    prog.start("6 CPU per window", p["cpu_reps"] * len(CONTENDERS))
    out = {c: [] for c in CONTENDERS}
    tmp = tempfile.mkdtemp(prefix="vtbench-cg-")
    try:
        for rep in range(p["cpu_reps"]):
            for c in CONTENDERS:
                lab.reset()
                env = common.contender_env(lab, c, ep, ctx.build_dir)
                prefix = os.path.join(tmp, f"cg-{c}-{rep}.out")
                argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                        f"--callgrind-out-file={prefix}", PYTHON, PROBES / "cpu_window.py",
                        ctx.remote_path, n]
                r = common.run_child(argv, env, timeout=p["watchdog_s"])
                instr = _callgrind_total(prefix) if r.ok else None
                out[c].append({"ok": r.ok, "error": r.error(), "killed": r.timed_out,
                               "instructions": instr,
                               "windows": n, "wall_s": r.wall,
                               "requests": common.request_summary(lab.log())})
                prog.step(f"{c}: {instr / n / 1e6:.1f} M instr/window" if instr else f"{c}: FAILED")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res = {"windows": n, "protocol": ep, "reps": p["cpu_reps"], "contenders": {}}
    for c in CONTENDERS:
        per = median([x["instructions"] / n for x in out[c] if x["ok"] and x["instructions"]])
        res["contenders"][c] = {"runs": out[c], "instructions_per_window": per,
                                **stalls.mark(out[c])}
    v = res["contenders"]["vsitune"]["instructions_per_window"]
    for c in ("stock", "tuned"):
        res["contenders"][c]["vsitune_ratio"] = ratio(v, res["contenders"][c]["instructions_per_window"])
    return res


def tunerd_speed(ctx):
    p, prog = ctx.p, ctx.progress
    exe = Path(ctx.build_dir) / "tunerd" / "tunerd"
    if not os.access(exe, os.X_OK):
        return {"skipped": f"{exe} is not built"}
    argv = [exe, "profile", "--platform", "lambda", "--memory", "10240", "--format", "json"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GDAL_", "TUNERD_"))}
    env["TUNERD_PROFILES_DIR"] = str(common.source_dir(ctx.build_dir) / "profiles")
    n = p["tunerd_runs"]
    prog.start("7 tunerd", n)
    true = shutil.which("true") or "/bin/true"
    walls, rss, bad, base, errors = [], [], 0, [], set()
    for _ in range(n):
        wall, maxrss, rc, out, err = common.run_rusage(argv, env, timeout=p["watchdog_s"])
        if rc == 0 and out.strip():
            walls.append(wall)
            rss.append(maxrss)
        else:
            bad += 1
            errors.add(f"exit status {rc}: {err.strip()[-300:]}")
        # the cost of fork+exec alone on this machine, alternated with tunerd
        base.append(common.run_rusage([true], env, timeout=p["watchdog_s"])[0])
        prog.step(f"{wall * 1000:.1f} ms")
    walls.sort()
    return {"argv": [str(a) for a in argv[1:]], "runs": n, "failed": bad,
            "errors": sorted(errors), "profiles_dir": env["TUNERD_PROFILES_DIR"],
            "median_ms": median(walls) * 1000 if walls else None,
            "p95_ms": walls[max(0, int(len(walls) * 0.95) - 1)] * 1000 if walls else None,
            "min_ms": walls[0] * 1000 if walls else None,
            "true_median_ms": median(base) * 1000 if base else None,
            "peak_rss_kb": median(rss)}


def plugin_load(ctx):
    p, prog = ctx.p, ctx.progress
    base = common.lab_client.gdal_env({})
    with_plugin = dict(base, GDAL_DRIVER_PATH=str(Path(ctx.build_dir) / "vsiplugin"))
    arms = [("without", base), ("with", with_plugin)]
    n = p["load_runs"]
    prog.start("8 plugin load", n * len(arms))
    data = {a: {"wall": [], "rss": [], "failed": 0} for a, _ in arms}
    for _ in range(n):
        for a, env in arms:
            wall, maxrss, rc, out, _err = common.run_rusage(["gdalinfo", "--version"], env,
                                                            timeout=p["watchdog_s"])
            if rc == 0 and out.startswith("GDAL"):
                data[a]["wall"].append(wall)
                data[a]["rss"].append(maxrss)
            else:
                data[a]["failed"] += 1
            prog.step(f"{a} plugin: {wall * 1000:.0f} ms")
    res = {"runs": n, "arms": {}}
    for a, _ in arms:
        d = data[a]
        res["arms"][a] = {"median_ms": median(d["wall"]) * 1000 if d["wall"] else None,
                          "peak_rss_mb": median(d["rss"]) / 1024 if d["rss"] else None,
                          "failed": d["failed"], "walls_s": d["wall"], "rss_kb": d["rss"]}
    w, wo = res["arms"]["with"], res["arms"]["without"]
    res["added_ms"] = (w["median_ms"] - wo["median_ms"]) if w["median_ms"] and wo["median_ms"] else None
    res["added_rss_mb"] = ((w["peak_rss_mb"] - wo["peak_rss_mb"])
                           if w["peak_rss_mb"] and wo["peak_rss_mb"] else None)
    # Was the plugin really loaded in the "with" arm? Its driver shows in --formats.
    cp = common.run_child(["gdalinfo", "--formats"], with_plugin, timeout=p["watchdog_s"])
    res["plugin_registered"] = "vsitune" in cp.stdout.lower()
    return res
