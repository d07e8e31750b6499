"""test_bench_quick.py: the benchmark suite runs end to end and its numbers come out.

Runs `bench/run.py --quick` (each scenario once, small fixture, its own lab) into a
temporary directory and checks the results file and the rendered page: every
scenario produced values for every contender, the bytes read were right (the run
exits non-zero otherwise), the page and its plots exist and carry the JSON's
numbers, every cell carries its stalls (bench/stalls.py), and the published files
(bench/results/results.json, docs/performance.md) are untouched by the run. No timing
is asserted: timings belong to bench/, not to tests. Also checks that bad arguments
fail fast with a clear message, without measuring or writing anything.
Run with /usr/bin/python3 -m pytest tests/integration/test_bench_quick.py.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import lab_client

RUN = lab_client.REPO / "bench" / "run.py"
PUBLISHED = (lab_client.REPO / "bench" / "results" / "results.json",
             lab_client.REPO / "docs" / "performance.md")
CONTENDERS = ("stock", "tuned", "vsitune")


def _run(args, timeout):
    return subprocess.run([sys.executable, str(RUN)] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    if not lab_client.plugin_built():
        pytest.skip(f"gdal_vsitune.so not built in {lab_client.plugin_dir()}")
    out = tmp_path_factory.mktemp("bench")
    before = [p.read_bytes() for p in PUBLISHED]
    # 900 s: a liveness bound on a loaded 2-core machine, not a timing assertion.
    cp = _run(["--quick", "--build-dir", lab_client.build_dir(), "--out", out / "results.json",
               "--docs", out / "docs"], timeout=900)
    cp.published_before = before
    return cp, out


def test_quick_run_succeeds(quick):
    cp, out = quick
    assert cp.returncode == 0, cp.stderr[-3000:]
    assert "scenario 1 cold_window done" in cp.stderr  # the progress display ran
    assert [p.read_bytes() for p in PUBLISHED] == cp.published_before


def test_every_cell_carries_its_stalls(quick):
    cp, out = quick
    r = json.loads((out / "results.json").read_text())
    assert r["meta"]["stall_rule"] == {"watchdog_s": r["meta"]["params"]["watchdog_s"],
                                       "factor": 2.0}
    s = r["scenarios"]
    cells = [cell["contenders"][c] for key in ("cold_window", "gdalinfo_cold", "tile_server",
                                               "memory_soak")
             for cell in s[key]["cells"] for c in CONTENDERS]
    cells += [pt for series in s["pool_sweep"]["series"].values() for pt in series["points"]]
    for v in cells:
        assert v["stalls"] == len(v["stall_walls_s"]) and all("stall" in run for run in v["runs"])
    for key in ("dask_twice", "tile_workers", "pool_fork5"):
        assert all("stall" in run and "killed" in run for run in s[key]["runs"]), key
    tw = s["tile_workers"]  # scenario 11: every run in the results, one summary per variant
    assert len(tw["runs"]) == sum(v["reps"] for v in tw["variants"])
    assert max(v["reps"] for v in tw["variants"]) == r["meta"]["params"]["tile_workers_reps"]
    for v in tw["variants"]:
        assert v["stalls"] == len(v["stall_reps"]) == len(v["stall_walls_s"]), v
    for key in ("many_opens", "mosaic_tiles", "overview_reads"):
        for cell in s[key]["cells"]:
            for v in cell["contenders"].values():
                assert v["stalls"] == len(v["stall_walls_s"]) and all("stall" in run
                                                                      for run in v["runs"])


def test_every_scenario_has_numbers(quick):
    cp, out = quick
    r = json.loads((out / "results.json").read_text())
    assert r["meta"]["quick"] is True and r["meta"]["machine"]["nproc"] >= 1
    s = r["scenarios"]
    assert not [k for k, v in s.items() if "error" in v]
    for key, gets in (("cold_window", 2), ("gdalinfo_cold", 1)):
        for cell in s[key]["cells"]:
            assert cell["floor_s"] > 0
            # the wire floor: what the lab saw of the plain client, one new connection,
            # one GET per range, the bytes the ranges name
            fp = cell["floor_parts"]
            assert len(fp["wire_ranges"]) == gets and fp["wire_s"] > 0
            want = sum(int(b) - int(a) + 1 for a, b in (x.split("-") for x in fp["wire_ranges"]))
            for w in fp["wire_runs"]:
                assert w["ok"] and w["connections"] == 1, w
                assert w["requests"]["total"] == gets and w["requests"]["bytes"] == want, w
            assert cell["floor_s"] == fp["local_process_s"] + fp["wire_s"]
            for c in CONTENDERS:
                v = cell["contenders"][c]
                assert v["failed"] == 0 and v["requests"] >= 1 and v["wall_s"] > 0, (key, c, v)
                assert v["connections"] >= 1
    assert all(cell["contenders"][c]["wrong_checksums"] == 0
               for cell in s["cold_window"]["cells"] for c in CONTENDERS)
    for cell in s["tile_server"]["cells"]:
        for c in CONTENDERS:
            v = cell["contenders"][c]
            assert v["stalls"] or (v["windows_per_s"] > 0 and v["peak_rss_mb"] > 0), (c, v)
            assert v["wrong_checksums"] == 0
        assert cell["contenders"]["vsitune"]["windows_per_s"] > 0
    pool = s["pool_sweep"]["series"]
    assert set(pool) == {f"{e}/{c}" for e in ("process", "thread") for c in CONTENDERS}
    for key in ("process/vsitune", "thread/vsitune", "thread/stock"):
        assert all(p["windows_per_s"] > 0 and p["wrong_windows"] == 0 for p in pool[key]["points"])
    for cell in s["memory_soak"]["cells"]:
        for c in CONTENDERS:
            v = cell["contenders"][c]
            assert v["rss_before_mb"] > 0 and v["rss_after_mb"] > 0 and v["requests"] >= 1
    cpu = s["cpu_per_window"]
    if shutil.which("valgrind"):
        assert all(cpu["contenders"][c]["instructions_per_window"] > 0 for c in CONTENDERS)
    load = s["plugin_load"]
    assert load["plugin_registered"] is True
    assert all(load["arms"][a]["median_ms"] > 0 for a in ("with", "without"))
    if "skipped" not in s["tunerd_speed"]:
        assert s["tunerd_speed"]["failed"] == 0 and s["tunerd_speed"]["median_ms"] > 0
    # 10-12, many processes: every vsitune run (per-process and shared) has its numbers
    for run in s["dask_twice"]["runs"]:
        if run["contender"] != "stock":
            assert run["ok"] and run["wrong_chunks"] == 0, run
            assert run["pass1"]["get"] >= 1 and run["pss_after_pass2"]["pss"] > 0, run
    assert {run["contender"] for run in s["tile_workers"]["runs"]} >= {"stock", "tuned"}
    for run in s["tile_workers"]["runs"]:
        if run["contender"] not in ("stock", "tuned"):
            assert run["ok"] and run["tiles_per_s"] > 0 and run["wrong_tiles"] == 0, run
            assert run["requests"]["total"] >= 1 and run["pss"]["pss"] > 0, run
    for run in s["pool_fork5"]["runs"]:
        if run["contender"] != "stock":
            assert run["ok"] and run["wrong_windows"] == 0 and run["pss"]["pss"] > 0, run
    # 13: the sibling question per layout, stock GDAL beside vsitune, outputs identical
    side = s["sidecars"]["cases"]
    assert set(side) == {"cog", "tiled_ovr", "world_tfw"}
    for name, row in side.items():
        assert row["identical"] and row["stock"]["rc"] == 0, (name, row)
        assert row["stock"]["requests"].get("LIST", 0) >= 1, (name, row)
    assert side["cog"]["vsitune"]["requests"].get("LIST", 0) == 0, side["cog"]
    # 14-16, issue 22's workloads on the S3-like front: requests as the lab saw them
    many = s["many_opens"]
    assert many["protocol"] == "h1tls" and many["floor"]["per_get_s"] > 0
    assert many["floor"]["requests_per_get"] == 1 and many["floor"]["connections"] == 1
    assert many["floor"]["cpu_per_get_s"] > 0  # floor_get's CPU per GET on its connection
    for cell in many["cells"]:
        for c in CONTENDERS:
            v = cell["contenders"][c]
            assert v["failed"] == 0 and v["same_as_stock"], (cell["threads"], c, v)
            assert v["opens_per_s"] > 0 and v["cpu_per_open_s"] > 0 and v["requests_per_open"] >= 1
        assert cell["contenders"]["vsitune"]["lists"] == 0
        if cell["threads"] == 1:  # GDAL alone: the probe on the local file
            alone = cell["gdal_alone"]
            assert alone["failed"] == 0 and alone["cpu_per_open_s"] > 0, alone
            idle = alone["idle"]  # the same after a sleep of one RTT before each open
            assert idle["idle_ms"] == many["rtt_ms"] and idle["cpu_per_open_s"] > 0, idle
            assert idle["floor_plus_open_over_floor"] > 1, idle
            # the least CPU per open over this endpoint: GDAL's after a wait + the floor's
            assert idle["plus_floor_cpu_s"] > idle["cpu_per_open_s"], idle
            # the floor on this GDAL's own libcurl (this machine's here: no root in --quick)
            own = cell["floor_own"]
            assert own["failed"] == 0 and own["cpu_per_get_s"] > 0, own
            assert idle["plus_floor_cpu_s"] == idle["cpu_per_open_s"] + own["cpu_per_get_s"]
            # each handler alone: the header's bytes without a dataset, the same bytes as stock
            h = cell["handler_alone"]
            assert h["bytes"] == many["header_bytes"]
            for c in CONTENDERS:
                assert h[c]["failed"] == 0 and h[c]["same_as_stock"], (c, h[c])
                assert h[c]["cpu_per_object_s"] > 0 and h[c]["cpu_over_floor"] > 0, (c, h[c])
            assert h["vsitune"]["requests_per_object"] == 1, h["vsitune"]
    assert "**Each handler alone**" in (out / "docs" / "performance.md").read_text()
    for cell in s["mosaic_tiles"]["cells"]:
        for c in CONTENDERS:
            v = cell["contenders"][c]
            assert v["failed"] == 0 and v["wrong_checksums"] == 0 and v["tiles_per_s"] > 0, (c, v)
    for cell in s["overview_reads"]["cells"]:
        for c in CONTENDERS:
            v = cell["contenders"][c]
            assert v["failed"] == 0 and v["wrong_checksums"] == 0 and v["bytes"] > 0, (c, v)
        assert cell["level"]["bytes"] > 0


def test_reach_backends_from_the_lab(quick):
    """Scenario 17 (issue 20's backends): every backend, every contender has numbers, and
    they are the lab's: each run's requests are the log's, split by User-Agent; stock
    sides carry none of vsitune's; a vsitune side either served every request (/vsigs/,
    /vsiaz/ with their knobs set) or is reported as not serving, without a ratio."""
    cp, out = quick
    r = json.loads((out / "results.json").read_text())
    res = r["scenarios"]["reach_backends"]
    assert "error" not in res, res
    assert {c["backend"] for c in res["cells"]} == {"gs", "curl", "az"}
    assert res["threads"] == 16 and res["knobs"]["gs"] == "VSITUNE_TAKEOVER_GS"
    assert res["local_windows_per_s"] > 0  # the no-network ceiling, same windows
    for cell in res["cells"]:
        where = cell["backend"]
        for k in CONTENDERS:
            v = cell["contenders"][k]
            assert v["stalls"] == len(v["stall_walls_s"]) and v["wrong_checksums"] == 0
            if k != "vsitune" and v["stalls"] == v["failed"] == len(v["runs"]):
                continue  # stock GDAL 3.6's h2 stall (issue 4), killed: recorded as such
            assert v["failed"] == 0, (where, k, v)
            assert v["windows_per_s"] > 0 and v["requests"] >= 1 and v["connections"] >= 1
            for run in v["runs"]:
                assert run["requests"]["total"] == run["vsitune_requests"] + run["other_requests"]
                if k != "vsitune":
                    assert run["vsitune_requests"] == 0, (where, k, run)
        v = cell["contenders"]["vsitune"]
        runs = v["runs"]  # who served, as the log's User-Agents say
        assert (v["served"] == "vsitune") == all(
            run["vsitune_requests"] == run["requests"]["total"] for run in runs), (where, v)
        assert (v["served"] == "stock") == all(run["vsitune_requests"] == 0 for run in runs)
        if where in ("gs", "az"):
            assert v["served"] == "vsitune", (where, v)
            for o in ("stock", "tuned"):  # a ratio wherever the other side finished
                assert (cell[f"vsitune_vs_{o}"] or 0) > 0 or \
                    cell["contenders"][o]["windows_per_s"] is None, (where, o)
        elif v["served"] != "vsitune":
            assert cell["vsitune_vs_stock"] is None and not cell["acceptance"]["met"]
            assert "did not serve" in cell["acceptance"]["why"] or v["served"] == "partly"
    page = (out / "docs" / "performance.md").read_text()
    assert "## 17. Issue 20 backends" in page and "Issue 20's acceptance" in page
    gs = next(c for c in res["cells"] if c["backend"] == "gs")
    assert (f"{gs['vsitune_vs_stock']:.2f}×" if gs["vsitune_vs_stock"] else
            "no stock run finished") in page
    assert ("**met**" if gs["acceptance"]["met"] else "**not met**") in page


def test_page_and_plots_come_from_the_json(quick):
    cp, out = quick
    r = json.loads((out / "results.json").read_text())
    page = (out / "docs" / "performance.md").read_text()
    for heading in ("## Machine", "## Headline", "## 1. Cold window", "## 2. gdalinfo",
                    "## 3. Tile server", "## 4. Process-pool sweep", "## 5. Memory soak",
                    "## 6. CPU per window", "## 8. Plugin load cost", "## 10. Dask",
                    "## 11. Tile server", "## 12. Seed 000", "## 14. Many-object opens",
                    "## 15. STAC mosaic tiles", "## 16. Overview reads"):
        assert heading in page
    # a number of the JSON, as the page formats it, is in the page
    v = r["scenarios"]["cold_window"]["cells"][0]["contenders"]["vsitune"]
    assert f"{v['wall_s'] * 1000:,.0f}" in page
    assert r["meta"]["machine"]["gdal"] in page
    for png in ("cold_window", "tile_server", "pool_sweep", "memory_soak"):
        p = out / "docs" / "img" / f"{png}.png"
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", p
        assert f"img/{png}.png" in page


def test_bad_arguments_fail_fast(tmp_path):
    # a build directory that does not exist: were 99 ever a scenario, the run would
    # stop at "not built" instead of measuring (commit 9207200 published such a run)
    cp = _run(["--only", "99", "--build-dir", tmp_path / "nowhere"], timeout=60)
    assert cp.returncode == 2 and "unknown scenario 99" in cp.stderr, cp.stderr
    cp = _run(["--quick", "--build-dir", tmp_path / "nowhere"], timeout=60)
    assert cp.returncode == 2 and "is not built" in cp.stderr
