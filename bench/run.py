#!/usr/bin/python3
"""run.py: the one command that benchmarks vsitune against stock GDAL.

Starts the S3 lab (tests/lab, through tests/integration/lab_client.py), uploads
the fixture COG with its sibling keys, runs the scenarios with the three
contenders alternated (stock GDAL default, stock GDAL with TiTiler's recommended
environment, vsitune with no configuration), writes every run and every median/ratio to a JSON
results file, then renders a performance.md and its plots from that file alone
(bench/render.py). --quick runs each scenario once at small size: it checks that
numbers come out, not what they are.

Every run writes to a scratch folder of its own (<build>/bench-runs/<date>-<commit>/,
or --out/--docs). Only --publish changes the published numbers: after a full run
(every scenario, full size; refused with --quick, --only, --keep-others) in which
every scenario produced its numbers, it copies the results to
bench/results/results.json and renders docs/performance.md and docs/img/ from them,
so every number on the page comes from that one run.

Every child run has one watchdog (params "watchdog_s"); a run it kills, or one
slower than twice the median of its peers, is a stall, reported with its time
(bench/stalls.py).

usage: /usr/bin/python3 bench/run.py [--quick] [--only 1,3,...] [--build-dir DIR]
                                     [--out FILE] [--docs DIR] [--no-render] [--root SUITE]
                                     [--publish]
Exit status: 0 all scenarios produced results (and, with --publish, were published);
1 a scenario failed, a run gave wrong bytes, or --publish found the run unfit;
2 bad arguments or missing prerequisites (plugin not built, ...).
"""

import argparse
import datetime
import json
import os
import shutil
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import render  # noqa: E402
import scen_cold  # noqa: E402
import scen_local  # noqa: E402
import scen_many  # noqa: E402
import scen_mosaic  # noqa: E402
import scen_overview  # noqa: E402
import scen_pool  # noqa: E402
import scen_reach  # noqa: E402
import scen_shared  # noqa: E402
import scen_sidecars  # noqa: E402
import scen_tiles  # noqa: E402
import scen_versions  # noqa: E402
import stalls  # noqa: E402

# One watchdog for every child run of every scenario ("watchdog_s"): a run still
# going past it is killed and reported as a stall; a run that finishes but takes
# more than twice the median of its peers is a stall too (bench/stalls.py).
FULL = {
    "fixture": "s2", "window": [4096, 4096, 512], "watchdog_s": 900,
    "rtts_ms": [20, 100], "protocols": ["h1", "h2", "h1tls"],
    # 1 and 2: 8 runs a cell (with 4, two disturbed runs in one cell, a 200 ms TCP
    # retransmission and a slow import, moved its median by a quarter: run of 3d935be)
    "cold_reps": 8,
    # 3: 12 windows a thread at 1 and 4 threads (4 a thread made a 1-in-4 slow window
    # swing a cell by 10%); 16 threads keep the 32 windows issue 22's peak-RSS row is on
    "tile_threads": [1, 4, 16], "tile_requests": {"1": 12, "4": 48, "16": 32},
    "tile_reps": 3,
    "pool_workers": [1, 2, 3, 4, 6, 8], "pool_cols": 8, "pool_rows": 6,
    "pool_protocol": "h1tls", "pool_rtt_ms": 20, "pool_reps": 1,
    "soak_requests": 320, "soak_protocol": "h1tls", "soak_rtt_ms": 0, "soak_reps": 1,
    "cpu_windows": 8, "cpu_protocol": "h1tls", "cpu_reps": 1,
    "tunerd_runs": 200, "load_runs": 10,
    "versions_rtt_ms": 100, "versions_protocols": ["h1", "h2", "h1tls"], "versions_cold_reps": 3,
    "versions_stall_reps": 5,
    "shared_protocol": "h1tls", "shared_rtt_ms": 20,
    "dask_workers": 4, "dask_region": 8192, "dask_chunk": 1024, "dask_x0": 1024,
    "dask_y0": 1024,
    "tile_scenes": 4, "tile_count": 2000, "tile_concurrency": 16, "tile_workers": 4,
    "tile_workers_reps": 3, "tile_one_budget_mb": 32,  # VSITUNE_CACHE_SIZE's default
    "pool5_workers": 5, "pool5_cols": 0, "pool5_rows": 0,
    "sidecar_cases": None,  # every raster layout of the parity fixtures
    # 14-16, the workloads of issue 22, on the S3-like front (HTTPS, HTTP/1.1 only)
    "users_protocol": "h1tls", "users_rtt_ms": 20,
    "many_objects": 300, "many_threads": [1, 16, 64], "many_reps": 2,
    "mosaic_cog_px": 2048, "mosaic_threads": 4, "mosaic_reps": 5,
    "overview_fractions": [0.5, 0.25, 0.125], "overview_reps": 2,
    # 17, issue 20's backends: /vsigs/ and /vsiaz/ over h2+TLS, /vsicurl/ over HTTPS h1
    "reach_backends": ["gs", "curl", "az"], "reach_threads": 16, "reach_windows": 200,
    "reach_rtt_ms": 20, "reach_reps": 3,
}
QUICK = dict(FULL, **{
    "fixture": "small", "window": [1024, 1024, 512], "watchdog_s": 300,
    "rtts_ms": [20], "protocols": ["h1tls"], "cold_reps": 1,
    "tile_threads": [4], "tile_requests": {"4": 8}, "tile_reps": 1,
    "pool_workers": [2], "pool_cols": 2, "pool_rows": 2,
    "soak_requests": 16, "cpu_windows": 1, "tunerd_runs": 5, "load_runs": 2,
    "versions_cold_reps": 1, "versions_stall_reps": 1,
    "dask_workers": 2, "dask_region": 1024, "dask_chunk": 512, "dask_x0": 512, "dask_y0": 512,
    "tile_scenes": 2, "tile_count": 40, "tile_concurrency": 4,
    "tile_workers": 2, "tile_workers_reps": 1, "pool5_workers": 2, "pool5_cols": 2,
    "pool5_rows": 2,
    "sidecar_cases": ["cog", "tiled_ovr", "world_tfw"],
    "many_objects": 24, "many_threads": [1, 16], "many_reps": 1,
    "mosaic_cog_px": 1024, "mosaic_reps": 1, "overview_reps": 1,
    "reach_windows": 24, "reach_reps": 1,
})

SCENARIOS = [
    ("1", "cold_window", scen_cold.cold_window),
    ("2", "gdalinfo_cold", scen_cold.gdalinfo_cold),
    ("3", "tile_server", scen_tiles.tile_server),
    ("4", "pool_sweep", scen_pool.pool_sweep),
    ("5", "memory_soak", scen_tiles.memory_soak),
    ("6", "cpu_per_window", scen_local.cpu_per_window),
    ("7", "tunerd_speed", scen_local.tunerd_speed),
    ("8", "plugin_load", scen_local.plugin_load),
    ("9", "gdal_versions", scen_versions.gdal_versions),
    ("10", "dask_twice", scen_shared.dask_twice),
    ("11", "tile_workers", scen_shared.tile_workers),
    ("12", "pool_fork5", scen_shared.pool_fork5),
    ("13", "sidecars", scen_sidecars.sidecars),
    ("14", "many_opens", scen_many.many_opens),
    ("15", "mosaic_tiles", scen_mosaic.mosaic_tiles),
    ("16", "overview_reads", scen_overview.overview_reads),
    ("17", "reach_backends", scen_reach.reach_backends),
]
PUBLISHED = common.BENCH / "results" / "results.json"
DOCS = common.REPO / "docs"


def parse_args(argv):
    ap = argparse.ArgumentParser(description="vsitune vs stock GDAL benchmarks")
    ap.add_argument("--quick", action="store_true",
                    help="each scenario once at small size (checks numbers come out)")
    ap.add_argument("--only", default="", help=f"comma-separated scenario numbers (1-{len(SCENARIOS)})")
    ap.add_argument("--build-dir", default=os.environ.get("VT_BUILD_DIR") or
                    str(common.REPO / "build"), help="CMake build dir holding vsiplugin/")
    ap.add_argument("--out", help="results JSON (default: results.json in a scratch folder "
                    "of its own, <build>/bench-runs/<date>-<commit>/)")
    ap.add_argument("--docs", help="where this run's performance.md and img/ go (default: "
                    "the scratch folder)")
    ap.add_argument("--publish", action="store_true",
                    help="after a full run with no problem, copy its results to "
                    f"{PUBLISHED.relative_to(common.REPO)} and render docs/performance.md "
                    "and docs/img/ from them (refused with --quick, --only, --keep-others)")
    ap.add_argument("--no-render", action="store_true", help="write the JSON only")
    ap.add_argument("--root-note", default="", help="scenario 9: a sentence on what the "
                    "root's plugin was built from (printed with its table)")
    ap.add_argument("--root", action="append", default=[], metavar="SUITE",
                    help="scenario 9: also measure the GDAL of this scripts/debroot.sh root "
                    "(e.g. sid; its plugin built by `VT_TEST_GDALS=SUITE scripts/test.sh`)")
    ap.add_argument("--stall-reps", type=int, metavar="N",
                    help="scenario 9: h2 tile-server runs per contender (default: 5; the "
                    "stall question wants many)")
    ap.add_argument("--keep-others", action="store_true",
                    help="with --only: keep the other scenarios of an earlier results file "
                    "(--out's if it exists, else the published one) in this run's scratch "
                    "results (each scenario records the commit and date it was measured at)")
    ap.add_argument("--snapshot", action="store_true",
                    help="measure the committed code: build the plugin and tunerd from "
                    "`git archive HEAD` in a directory of their own (ignores --build-dir)")
    a = ap.parse_args(argv)
    if a.keep_others and not a.only:
        ap.error("--keep-others needs --only")
    if a.publish:
        # Published numbers come from one full run: every scenario, full size.
        partial = [f for f, on in (("--quick", a.quick), ("--only", a.only),
                                   ("--keep-others", a.keep_others),
                                   ("--no-render", a.no_render)) if on]
        if partial:
            ap.error(f"--publish takes a full run only, not {' '.join(partial)}: a partial "
                     "run goes to a scratch folder, never to bench/results/ or docs/")
        if a.out or a.docs:
            ap.error("--publish writes bench/results/results.json and docs/; --out and "
                     "--docs name a scratch run's files")
        if not a.root:
            ap.error("--publish needs --root SUITE (e.g. --root sid): scenario 9 measures "
                     "that root's GDAL, and a page without it is not a full run")
    known = {n for n, _, _ in SCENARIOS}
    a.only = [s.strip() for s in a.only.split(",") if s.strip()]
    bad = [s for s in a.only if s not in known]
    if bad:
        ap.error(f"unknown scenario {', '.join(bad)}; known: 1-{len(SCENARIOS)}")
    for what, path in (("--out", a.out), ("--docs", a.docs)):
        if path and _published_place(Path(path)):
            ap.error(f"{what} {path} is where published numbers live: only --publish (after "
                     "a full run) writes there")
    a.scratch = None
    if not a.out or not a.docs:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        a.scratch = (Path(a.build_dir) / "bench-runs" /
                     f"{stamp}-{common.git_commit() or 'nocommit'}{'-quick' if a.quick else ''}")
    a.out = Path(a.out) if a.out else a.scratch / "results.json"
    a.docs = Path(a.docs) if a.docs else a.scratch
    return a


def _published_place(path):
    """Is `path` the published results file or inside the published docs?"""
    path = path.resolve()
    return any(path == d or d in path.parents
               for d in (PUBLISHED.parent.resolve(), DOCS.resolve()))


def snapshot_build():
    """Export HEAD (git archive) to /tmp/vtbench-snapshot-<commit>/src and build
    gdal_vsitune and tunerd there, so work in progress in the work tree is not
    what gets measured. Returns (build dir, commit). Raises RuntimeError with the
    failing command's output."""
    import subprocess
    commit = subprocess.run(["git", "-C", str(common.REPO), "rev-parse", "HEAD"], check=True,
                            capture_output=True, text=True).stdout.strip()
    root = Path(f"/tmp/vtbench-snapshot-{commit[:12]}")
    src, build = root / "src", root / "build"
    steps = []
    if not (src / "CMakeLists.txt").is_file():
        src.mkdir(parents=True, exist_ok=True)
        steps.append(f"git -C {common.REPO} archive {commit} | tar -x -C {src}")
    steps.append(f"cmake -S {src} -B {build} -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null")
    steps.append(f"cmake --build {build} -j2 --target gdal_vsitune tunerd >/dev/null")
    for cmd in steps:
        cp = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True)
        if cp.returncode != 0:
            raise RuntimeError(f"{cmd}: {(cp.stdout + cp.stderr)[-2000:]}")
    return build, commit


def main(argv=None):
    a = parse_args(argv)
    commit = None
    if a.snapshot:
        try:
            a.build_dir, commit = snapshot_build()
        except (RuntimeError, OSError) as e:
            print(f"bench: --snapshot build failed: {e}", file=sys.stderr)
            return 2
    plugin = Path(a.build_dir) / "vsiplugin" / "gdal_vsitune.so"
    if not plugin.is_file():
        print(f"bench: {plugin} is not built; build first (scripts/setup.sh, or cmake "
              f"--build {a.build_dir}), or name the build with --build-dir", file=sys.stderr)
        return 2
    if not Path(common.PYTHON).is_file():
        print(f"bench: {common.PYTHON} is missing (it must have osgeo, rasterio, numpy)",
              file=sys.stderr)
        return 2
    os.environ["VT_BUILD_DIR"] = str(Path(a.build_dir).resolve())
    p = dict(QUICK if a.quick else FULL)
    if a.stall_reps:
        p["versions_stall_reps"] = a.stall_reps
    prog = common.Progress()
    t_start = time.monotonic()
    results = {
        "meta": {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                 "quick": a.quick, "commit": (commit[:7] if commit else common.git_commit()),
                 "snapshot": a.snapshot, "machine": common.machine(),
                 "params": p, "contenders": {c: common.LABELS[c] for c in common.CONTENDERS},
                 "root_note": a.root_note, "only": a.only,
                 "stall_rule": stalls.rule(p["watchdog_s"]),
                 "tuned_env": common.TUNED, "tuned_env_h2": common.TITILER_H2,
                 "tuned_source": common.TUNED_SOURCE, "build_dir": str(Path(a.build_dir).resolve()),
                 "plugin_sha256": common.sha256(plugin)},
        "scenarios": {},
    }
    kept = {}
    earlier = a.out if a.out.is_file() else PUBLISHED
    if a.keep_others and earlier.is_file():
        # Scenarios not run now keep their results (and say when they were
        # measured); the scratch page is rendered from the merged file, which
        # --publish never takes.
        old = json.loads(earlier.read_text())
        ran = {name for num, name, _ in SCENARIOS if num in a.only}
        for name, res in old.get("scenarios", {}).items():
            if name not in ran:
                res.setdefault("measured", {"commit": old["meta"].get("commit"),
                                            "date": old["meta"].get("date")})
                kept[name] = res
        results["meta"]["kept_from"] = {"file": str(earlier), "commit": old["meta"].get("commit"),
                                        "date": old["meta"].get("date"),
                                        "scenarios": sorted(kept)}
        results["scenarios"].update(kept)
    import fixtures  # tests/lab/fixtures.py (on sys.path through common)
    prog.note(f"generating/finding fixture '{p['fixture']}' and starting the lab")
    lab = common.lab_client.Lab()
    failed = False
    try:
        local = fixtures.generate(p["fixture"])
        lab.start()
        up = fixtures.upload(lab, names=(p["fixture"],), siblings=True)[p["fixture"]]
        size = fixtures.FIXTURES[p["fixture"]]["size"]
        ctx = types.SimpleNamespace(
            lab=lab, p=p, progress=prog, build_dir=Path(a.build_dir).resolve(),
            local_path=str(local), remote_path=f"/vsis3/{up['bucket']}/{up['key']}",
            width=size, height=size, window=tuple(p["window"]), rate=None, roots=a.root)
        ctx.rate = scen_cold.loopback_rate(lab)
        results["meta"]["fixture"] = {"name": p["fixture"], "key": up["key"], "bytes": up["size"],
                                      "width": size, "height": size, "siblings": True,
                                      "loopback_bytes_per_s": ctx.rate}
        for num, name, fn in SCENARIOS:
            if a.only and num not in a.only:
                continue
            t0 = time.monotonic()
            try:
                res = fn(ctx)
            except Exception as e:  # record and go on: one scenario must not lose the rest
                res = {"error": f"{type(e).__name__}: {e}"}
                prog.note(f"scenario {num} {name} failed: {res['error']}")
            res["duration_s"] = time.monotonic() - t0
            res["measured"] = {"commit": results["meta"]["commit"],
                               "date": results["meta"]["date"]}
            results["scenarios"][name] = res
            prog.note(f"scenario {num} {name} done in {res['duration_s']:.0f} s")
            _write(a.out, results, t_start)  # keep what we have if interrupted later
    finally:
        lab.stop()
    _write(a.out, results, t_start)
    problems = check(results)
    for msg in problems:
        prog.note(f"PROBLEM: {msg}")
    failed = bool(problems)
    if not a.no_render:
        written = render.render(results, a.docs, source=str(_shown(a.out)))
        prog.note("wrote " + ", ".join(str(w) for w in written))
    prog.note(f"results in {a.out} ({results['meta']['duration_s']:.0f} s)")
    if a.publish:
        unfit = problems + unpublishable(results)
        if unfit:
            prog.note(f"NOT PUBLISHED (bench/results/ and docs/ unchanged): "
                      f"{'; '.join(unfit)[:2000]}")
            return 1
        publish(a.out, results)
        prog.note(f"published: {PUBLISHED} and {DOCS / 'performance.md'}")
    return 1 if failed else 0


def _shown(path):
    """A path as the page cites it: relative to the repository when inside it."""
    try:
        return path.resolve().relative_to(common.REPO)
    except ValueError:
        return path


def unpublishable(results):
    """Why a results dict may not become the published page (empty: it may): it
    must be one full run in which every scenario produced its numbers."""
    m = results["meta"]
    out = []
    if m.get("quick") or m.get("only") or m.get("kept_from"):
        out.append("not a full run (--quick, --only or --keep-others)")
    for num, name, _ in SCENARIOS:
        res = results["scenarios"].get(name)
        if res is None:
            out.append(f"scenario {num} {name} has no results")
        elif "error" in res or "skipped" in res:
            out.append(f"scenario {num} {name}: {res.get('error') or res.get('skipped')}")
        elif (res.get("measured") or {}).get("date") != m["date"]:
            out.append(f"scenario {num} {name} was measured in another run")
    return out


def publish(scratch_results, results):
    """Copy one full run's results file to bench/results/results.json and render
    docs/performance.md and docs/img/ from the copy (plots of an earlier page
    that this render did not draw are removed, so none outlives its numbers)."""
    PUBLISHED.parent.mkdir(parents=True, exist_ok=True)
    tmp = PUBLISHED.with_suffix(".tmp")
    shutil.copyfile(scratch_results, tmp)
    os.replace(tmp, PUBLISHED)
    written = render.render(results, DOCS, source=str(_shown(PUBLISHED)))
    for png in (DOCS / "img").glob("*.png"):
        if png not in written and png.stem in render.PLOTS:
            png.unlink()


def _write(path, results, t_start):
    results["meta"]["duration_s"] = time.monotonic() - t_start
    results["meta"]["loadavg_at_end"] = [round(v, 2) for v in os.getloadavg()]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=1, sort_keys=False) + "\n")
    os.replace(tmp, path)


def check(results):
    """What makes the run a failure: a scenario error, or vsitune reading wrong
    bytes. (Stock GDAL reading wrong bytes is a finding, shown in the report.)"""
    out = []
    for name, res in results["scenarios"].items():
        if "error" in res:
            out.append(f"{name}: {res['error']}")
        if name in ("dask_twice", "tile_workers", "pool_fork5"):
            out += scen_shared.problems(name, res)
            continue
        if name == "many_opens":
            out += scen_many.problems(res)
            continue
        if res.get("wrong_checksums_vsitune"):
            out.append(f"{name}: {res['wrong_checksums']} runs read wrong bytes")
        for cell in res.get("cells", []):
            v = cell.get("contenders", {}).get("vsitune", {})
            if v.get("wrong_checksums"):
                out.append(f"{name}: vsitune read wrong bytes in {v['wrong_checksums']} runs")
            if v.get("failed"):
                out.append(f"{name}: {v['failed']} vsitune run(s) failed in {_cell_name(cell)}: "
                           f"{next((r['error'] for r in v['runs'] if r.get('error')), '')[:300]}")
        for t in res.get("cold", []) + res.get("tiles", []):  # scenario 9
            if res["contenders"][t["contender"]]["kind"] == "vsitune":
                if t.get("wrong_checksums"):
                    out.append(f"{name}: {t['contender']} read wrong bytes")
                if t.get("failed"):
                    out.append(f"{name}: {t['failed']} {t['contender']} run(s) failed: "
                               f"{next((r['error'] for r in t['runs'] if r.get('error')), '')[:300]}")
        for key, s in res.get("series", {}).items():
            for pt in s["points"]:
                if s["contender"] == "vsitune" and pt.get("wrong_windows"):
                    out.append(f"{name}: {key} x{pt['workers']}: {pt['wrong_windows']} wrong windows")
                if s["contender"] == "vsitune" and pt.get("failed"):
                    out.append(f"{name}: {key} x{pt['workers']} failed: "
                               f"{next((r['error'] for r in pt['runs'] if r.get('error')), '')[:300]}")
    return out


def _cell_name(cell):
    return ", ".join(f"{k}={v}" for k, v in cell.items() if k not in ("contenders", "floor_parts"))


if __name__ == "__main__":
    sys.exit(main())
