"""scen_versions.py: scenario 9, the headline on two GDAL releases in one run.

This machine's GDAL (3.6, Debian 12) and the GDAL of a Debian root made by
scripts/debroot.sh (sid: 3.13), each as stock, stock tuned (seed 001's variables)
and vsitune (the plugin built for that GDAL inside the root: <build>/in-<suite>),
against the same lab, runs alternated. Measured: the cold 512x512 window and
gdalinfo (requests as the lab saw them, LIST and HEAD among them; the time the
probe spent opening and reading, timed inside the process), and the tile server
with 16 threads over HTTP/1.1 and h2 (windows/s, connections, stalls).

Stalls: stock GDAL 3.6 with curl 7.88 multiplexing h2 could wait for nghttpx's
180 s idle timeout (issue 4). Here each run may take up to the run's watchdog
(`watchdog_s`, past 180 s), so a stall shows as what it costs, and the h2
16-thread cell is repeated `versions_stall_reps` times per contender: a run the
watchdog kills, or one slower than twice the median of the contender's other runs
in the cell, is a stall (bench/stalls.py); every wall time is recorded.

A run in the root goes through `scripts/debroot.sh --run` (private mount and PID
namespaces, chroot): the lab is the host's (same network), its CA file is bound
at the same path, the tree at /vt/src. Starting that costs some milliseconds of
wall time, so cold runs are compared on the probe's own open+read time, and the
launcher's own cost is measured and recorded beside them.
"""

import os
import time
from pathlib import Path

import common
import stalls
from common import PROBES, PYTHON, median

DEBROOT = common.REPO / "scripts" / "debroot.sh"
KINDS = ("stock", "tuned", "vsitune")


class Gdal:
    """One GDAL: this machine's (root None) or a debroot root's."""

    def __init__(self, name, root=None, build=None, version=None):
        self.name, self.root, self.build, self.version = name, root, build, version

    def argv(self, argv, env, binds=()):
        """(argv, env) that run `argv` (host paths) with `env` under this GDAL."""
        if self.root is None:
            return argv, env
        inside = [str(a).replace(str(common.REPO), "/vt/src") for a in argv]
        b = ["--bind", f"{common.REPO}:/vt/src", "--bind", f"{self.build}:/vt/build"]
        for d in binds:
            b += ["--bind", f"{d}:{d}"]
        pass_env = [f"{k}={v}" for k, v in env.items()
                    if k.startswith(("AWS_", "GDAL_", "CPL_", "VSI_", "CURL_", "SSL_",
                                     "VSITUNE_", "OMP_", "MALLOC_",
                                     "GS_", "GOOGLE_", "GO2A_", "GOA2_", "AZURE_"))]
        return ([DEBROOT, "--run", self.root, *b, "--", *pass_env, *inside],
                {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TERM")})

    def env(self, lab, kind, endpoint, host_build):
        env = common.contender_env(lab, "stock" if kind == "vsitune" else kind, endpoint,
                                   host_build)
        if kind == "vsitune":
            env["GDAL_DRIVER_PATH"] = (str(Path(host_build) / "vsiplugin") if self.root is None
                                       else "/vt/build/vsiplugin")
        return env


# The libcurl that GDAL's libgdal links, with its Debian package and version.
CURL_OF_GDAL = r"""
lib=$(ldd "$(command -v gdalinfo)" | awk '/libgdal\.so/{print $3}')
c=$(ldd "$lib" | awk '/libcurl/{print $3}' | head -1)
pkg=$(dpkg -S "$(readlink -f "$c")" 2>/dev/null | cut -d: -f1 | head -1)
echo "$(basename "$c") ($(dpkg-query -W -f='${Package} ${Version}' "$pkg" 2>/dev/null))"
"""


def _curl_of(g, watchdog):
    cp = common.run_child(*g.argv(["bash", "-c", CURL_OF_GDAL], {}), timeout=watchdog)
    return cp.stdout.strip() or None


def gdals(ctx):
    """This machine's GDAL and, per suite in ctx.roots, a root's (when built)."""
    out = [Gdal("host", version=common._version(["gdal-config", "--version"]))]
    # where scripts/test.sh keeps the roots and builds inside them (also with --snapshot)
    base = Path(os.environ.get("BUILD_DIR") or common.REPO / "build")
    for suite in ctx.roots:
        root = Path(os.environ.get("VT_ROOTS_DIR") or base / "roots") / suite
        build = base / f"in-{suite}"
        if not (build / "vsiplugin" / "gdal_vsitune.so").is_file():
            raise RuntimeError(f"no plugin built for {suite} in {build}: run "
                               f"VT_TEST_GDALS={suite} scripts/test.sh first")
        g = Gdal(suite, root=root, build=build)
        cp = common.run_child(*g.argv(["gdal-config", "--version"], {}),
                              timeout=ctx.p["watchdog_s"])
        g.version = cp.stdout.strip() or None
        out.append(g)
    for g in out:
        g.curl = _curl_of(g, ctx.p["watchdog_s"])
    return out


def _plugin_of(g, ctx):
    """Which plugin binary ran under g: its sha256 and the source tree it was built
    from (CMakeCache's CMAKE_HOME_DIRECTORY, as seen where it was configured)."""
    build = Path(ctx.build_dir) if g.root is None else Path(g.build)
    so = build / "vsiplugin" / "gdal_vsitune.so"
    return {"sha256": common.sha256(so), "source": str(common.source_dir(build)),
            "build_dir": str(build.resolve())}


def _launcher_cost(g, watchdog, reps=5):
    """Median wall seconds of `python3 -c pass` under g minus on the host: what
    entering the root adds to every run's wall time."""
    if g.root is None:
        return 0.0
    inside, host = [], []
    for _ in range(reps):
        t0 = time.monotonic()
        common.run_child(*g.argv([PYTHON, "-c", "pass"], {}), timeout=watchdog)
        inside.append(time.monotonic() - t0)
        t0 = time.monotonic()
        common.run_child([PYTHON, "-c", "pass"], dict(os.environ), timeout=watchdog)
        host.append(time.monotonic() - t0)
    return median(inside) - median(host)


def measure(ctx, g, kind, endpoint, rtt, argv, binds=()):
    """One run of `argv` as contender `kind` under GDAL g against the lab's `endpoint`
    at `rtt` ms: the log reset before, the delay set, one watchdog. Returns the run
    as the user-workload scenarios record it: wall, ok, error, killed, requests
    (bench/common.request_summary), how many were in flight at once (common.in_flight),
    connections accepted, and the probe's result."""
    lab = ctx.lab
    lab.reset()
    env = g.env(lab, kind, endpoint, ctx.build_dir)
    lab.set_delay(rtt // 2, endpoint)
    r = common.run_child(*g.argv(argv, env, binds=[lab.dir, *binds]),
                         timeout=ctx.p["watchdog_s"])
    log = lab.log()
    return {"wall_s": r.wall, "ok": r.ok, "error": r.error(), "killed": r.timed_out,
            "requests": common.request_summary(log),
            "in_flight": common.in_flight(log, rtt / 2000),
            "connections": lab.connections(endpoint)["accepted"], "result": r.result}


def cell_runs(rs):
    """(finished runs, the cell fields every user-workload cell starts with) for
    one contender's runs as measure() returned them (with "checksum_ok" where the
    scenario checks bytes): runs, failures, stalls (bench/stalls.py), wrong bytes."""
    marked = stalls.mark(rs)
    ok = [r for r in rs if r["ok"]]
    return ok, {"runs": rs, "failed": len(rs) - len(ok), **marked,
                "wrong_checksums": sum(1 for r in ok if r.get("checksum_ok") is False)}


def _cold(ctx, g, kind, endpoint, rtt, argv):
    lab = ctx.lab
    lab.reset()
    env = g.env(lab, kind, endpoint, ctx.build_dir)
    lab.set_delay(rtt // 2, endpoint)
    r = common.run_child(*g.argv(argv, env, binds=[lab.dir]), timeout=ctx.p["watchdog_s"])
    log = lab.log()
    run = {"wall_s": r.wall, "ok": r.rc == 0 and not r.timed_out, "error": r.error(),
           "killed": r.timed_out,
           "requests": common.request_summary(log),
           "connections": lab.connections(endpoint)["accepted"]}
    if r.result:
        run["inside"] = {k: r.result.get(k) for k in ("open_s", "read_s", "checksum")}
    elif "Size is" in r.stdout:
        run["inside"] = {}
    else:
        run["ok"] = False
    return run


def _tiles(ctx, g, kind, endpoint, rtt, threads, requests, seed):
    lab = ctx.lab
    lab.reset()
    env = g.env(lab, kind, endpoint, ctx.build_dir)
    lab.set_delay(rtt // 2, endpoint)
    argv = [PYTHON, PROBES / "tiles.py", ctx.remote_path, ctx.width, ctx.height,
            "--threads", threads, "--requests", requests, "--seed", seed]
    r = common.run_child(*g.argv(argv, env, binds=[lab.dir]), timeout=ctx.p["watchdog_s"])
    log = lab.log()
    done = max([ln["done"] for ln in r.lines if "done" in ln] or [0])
    run = {"wall_s": r.wall, "ok": r.ok, "error": r.error(), "killed": r.timed_out,
           "windows_done": done, "requests": common.request_summary(log),
           "connections": lab.connections(endpoint)["accepted"]}
    if r.result:
        run.update({k: r.result.get(k) for k in ("windows_per_s", "elapsed_s",
                                                  "latency_max_s", "checksum")})
    return run


def gdal_versions(ctx):
    p, prog = ctx.p, ctx.progress
    if not ctx.roots:
        return {"skipped": "no --root given (e.g. --root sid)"}
    gs = gdals(ctx)
    contenders = [(g, k) for g in gs for k in KINDS]
    names = {f"{k}@{g.name}": (g, k) for g, k in contenders}
    x, y, size = ctx.window
    rtt = p["versions_rtt_ms"]
    eps = p["versions_protocols"]
    threads, nreq, seed = 16, p["tile_requests"].get("16", 32), 3
    cold_reps, stall_reps = p["versions_cold_reps"], p["versions_stall_reps"]
    prog.start("9 GDAL versions", len(names) * (len(eps) * 2 * cold_reps + len(eps)
                                                + stall_reps - 1) + len(gs))
    launcher = {}
    for g in gs:
        launcher[g.name] = _launcher_cost(g, p["watchdog_s"])
        prog.step(f"{g.name}: entering the root costs {launcher[g.name] * 1000:.0f} ms")

    # the expected answers: the local file through this machine's GDAL
    local = common.run_child([PYTHON, PROBES / "cold_window.py", ctx.local_path, x, y, size],
                             common.lab_client.gdal_env({}), timeout=p["watchdog_s"])
    want = local.result.get("checksum") if local.ok else None
    ref = common.run_child([PYTHON, PROBES / "tiles.py", ctx.local_path, ctx.width, ctx.height,
                            "--threads", 2, "--requests", nreq, "--seed", seed],
                           common.lab_client.gdal_env({}), timeout=p["watchdog_s"])
    want_tiles = ref.result["checksum"] if ref.ok else None

    cold = {(w, ep, n): [] for w in ("window", "gdalinfo") for ep in eps for n in names}
    for rep in range(cold_reps):
        for ep in eps:
            for n, (g, k) in names.items():
                run = _cold(ctx, g, k, ep, rtt, [PYTHON, PROBES / "cold_window.py",
                                                 ctx.remote_path, x, y, size])
                run["checksum_ok"] = (run.get("inside") or {}).get("checksum") == want
                cold[("window", ep, n)].append(run)
                prog.step(f"{n} window {ep}: {run['requests']['total']} req")
                run = _cold(ctx, g, k, ep, rtt, ["gdalinfo", ctx.remote_path])
                cold[("gdalinfo", ep, n)].append(run)
                prog.step(f"{n} gdalinfo {ep}: {run['requests']['total']} req")

    tiles = {(ep, n): [] for ep in eps for n in names}
    for rep in range(stall_reps):
        for ep in eps:
            if ep != "h2" and rep > 0:
                continue  # the stall question is h2's; h1 once
            for n, (g, k) in names.items():
                run = _tiles(ctx, g, k, ep, rtt, threads, nreq, seed)
                run["checksum_ok"] = run.get("checksum") == want_tiles if run["ok"] else None
                tiles[(ep, n)].append(run)
                what = ("KILLED" if run["killed"] else
                        f"{run.get('windows_per_s') or 0:.1f} win/s" if run["ok"] else "FAILED")
                prog.step(f"{n} tiles {ep}: {what}, {run['wall_s']:.0f} s, "
                          f"{run['connections']} conn")

    out = {"rtt_ms": rtt, "window": {"x": x, "y": y, "size": size}, "threads": threads,
           "requests_per_run": nreq, "cold_reps": cold_reps, "stall_reps": stall_reps,
           "stall_rule": stalls.rule(p["watchdog_s"]),
           "expected_checksum": want, "expected_tiles_checksum": want_tiles,
           "gdals": {g.name: {"version": g.version, "curl": g.curl,
                              "root": str(g.root) if g.root else None,
                              "launcher_s": launcher[g.name], "plugin": _plugin_of(g, ctx)}
                     for g in gs},
           "contenders": {n: {"gdal": g.name, "kind": k} for n, (g, k) in names.items()},
           "cold": [], "tiles": []}
    for w in ("window", "gdalinfo"):
        for ep in eps:
            for n in names:
                rs = cold[(w, ep, n)]
                ok = [r for r in rs if r["ok"]]
                inside = [r["inside"]["open_s"] + r["inside"]["read_s"] for r in ok
                          if r.get("inside", {}).get("open_s") is not None]
                g = names[n][0]
                out["cold"].append({
                    "what": w, "protocol": ep, "contender": n, "runs": rs,
                    "failed": len(rs) - len(ok), **stalls.mark(rs),
                    "wrong_checksums": sum(1 for r in ok if w == "window" and not r["checksum_ok"]),
                    "requests": median([r["requests"]["total"] for r in ok]),
                    "lists": median([r["requests"].get("LIST", 0) for r in ok]),
                    "heads": median([r["requests"].get("HEAD", 0) for r in ok]),
                    "gets": median([r["requests"].get("GET_RANGE", 0) + r["requests"].get("GET", 0)
                                    for r in ok]),
                    "bytes": median([r["requests"]["bytes"] for r in ok]),
                    "connections": median([r["connections"] for r in ok]),
                    "open_read_s": median(inside),
                    "wall_s": median([r["wall_s"] for r in ok]),
                    "wall_less_launcher_s": (median([r["wall_s"] for r in ok]) - launcher[g.name]
                                             if ok else None),
                })
    for ep in eps:
        for n in names:
            rs = tiles[(ep, n)]
            ok = [r for r in rs if r["ok"]]
            out["tiles"].append({
                "protocol": ep, "contender": n, "runs": rs,
                "failed": sum(1 for r in rs if not r["ok"]),
                "killed": sum(1 for r in rs if r["killed"]),
                **stalls.mark(rs),
                "walls_s": [round(r["wall_s"], 1) for r in rs],
                "wrong_checksums": sum(1 for r in ok if r["checksum_ok"] is False),
                "windows_per_s": median([r["windows_per_s"] for r in ok]),
                "connections": median([r["connections"] for r in ok]),
                "latency_max_s": max([r["latency_max_s"] for r in ok] or [None],
                                     key=lambda v: -1 if v is None else v),
            })
    _speeds(out, gs[0].name)
    return out


def _speeds(out, host):
    """Each cell's speed against stock GDAL of this machine and against stock GDAL of
    its own release, measured side by side in this run (> 1: faster): cold window by
    the open + read time inside the process, gdalinfo by the wall time less the
    launcher's cost, the tile server by windows/s."""
    def ratio(num, den):
        return num / den if num and den else None

    def stock_of(cells, cell, gdal):
        name = f"stock@{gdal}"
        return next((c for c in cells if c["contender"] == name and
                     c["protocol"] == cell["protocol"] and c.get("what") == cell.get("what")), None)

    for c in out["cold"]:
        key = "open_read_s" if c["what"] == "window" else "wall_less_launcher_s"
        own = out["contenders"][c["contender"]]["gdal"]
        for label, gdal in (("speed_vs_stock_host", host), ("speed_vs_stock_same", own)):
            ref = stock_of(out["cold"], c, gdal)
            c[label] = ratio(ref and ref[key], c[key])
    for t in out["tiles"]:
        own = out["contenders"][t["contender"]]["gdal"]
        for label, gdal in (("speed_vs_stock_host", host), ("speed_vs_stock_same", own)):
            ref = stock_of(out["tiles"], t, gdal)
            t[label] = ratio(t["windows_per_s"], ref and ref["windows_per_s"])
