"""test_bench_honest.py: the published benchmark numbers can be trusted (issue 22, item 5).

Pure Python, no lab: bench/ is imported and run only as far as its argument checks.
- the stall rule (bench/stalls.py): a run the watchdog killed, or one slower than
  twice the median of its peers (the same contender's other runs in its cell), is a
  stall with its time; a 181 s run among 3 s runs is one, under any watchdog;
- the watchdog is one value: bench/run.py's parameters hold one bound
  ("watchdog_s"), no key twice, and every scenario's child runs take it;
- a run writes to a scratch folder; only --publish writes bench/results/ and docs/,
  and it refuses --quick, --only, --keep-others (exit 2, saying why);
- on the committed docs: every README link into docs/performance.md resolves to a
  section that holds numbers, the page is the rendering of the committed results
  file, and a page merged from several runs says so.
Run with /usr/bin/python3 -m pytest tests/integration/test_bench_honest.py.
"""

import ast
import importlib.util
import json
import re
import subprocess
import sys

import pytest

import lab_client

REPO = lab_client.REPO
BENCH = REPO / "bench"
README = REPO / "README.md"
PAGE = REPO / "docs" / "performance.md"
RESULTS = BENCH / "results" / "results.json"
sys.path.insert(0, str(BENCH))
import render  # noqa: E402  (bench/render.py)
import render_shared  # noqa: E402
import render_users  # noqa: E402
import scen_shared  # noqa: E402
import scen_tiles  # noqa: E402
import stalls  # noqa: E402
import common  # noqa: E402


def _bench_run():
    """bench/run.py as a module (its name, 'run', is too common to import bare)."""
    spec = importlib.util.spec_from_file_location("bench_run", BENCH / "run.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# -- the stall rule --------------------------------------------------------------------
def _walls(*walls, killed=()):
    return [{"wall_s": w, "killed": i in killed} for i, w in enumerate(walls)]


def test_a_run_twice_its_peers_median_is_a_stall_with_its_time():
    runs = _walls(3.0, 181.0)
    assert stalls.mark(runs) == {"stalls": 1, "stall_walls_s": [181.0]}
    assert runs[0]["stall"] is None
    assert runs[1]["stall"] == {"how": "slow", "wall_s": 181.0, "peers_median_s": 3.0}


def test_peers_are_the_median_of_the_other_runs():
    runs = _walls(2.0, 2.5, 3.0, 182.0, 2.2, 182.0)
    assert stalls.mark(runs) == {"stalls": 2, "stall_walls_s": [182.0, 182.0]}
    # exactly twice the median is not "more than twice"; ordinary noise is no stall
    assert stalls.mark(_walls(2.0, 4.0))["stalls"] == 0
    assert stalls.mark(_walls(3.0, 4.0, 5.0, 5.9))["stalls"] == 0


def test_a_killed_run_is_a_stall_and_no_peer():
    runs = _walls(3.0, 900.0, 7.0, killed=(1,))
    assert stalls.mark(runs) == {"stalls": 2, "stall_walls_s": [900.0, 7.0]}
    assert runs[1]["stall"]["how"] == "watchdog"
    assert runs[2]["stall"] == {"how": "slow", "wall_s": 7.0, "peers_median_s": 3.0}


def test_a_lone_run_is_a_stall_only_by_the_watchdog():
    assert stalls.mark(_walls(181.0))["stalls"] == 0
    assert stalls.mark(_walls(300.0, killed=(0,)))["stalls"] == 1


def _tile_run(wall, wps):
    return {"wall_s": wall, "ok": True, "killed": False, "checksum_ok": True,
            "windows_per_s": wps, "requests": {"total": 40}, "connections": 16,
            "vmhwm_kb": 200 * 1024, "latency_max_s": wall / 2}


def test_a_stock_tile_server_run_of_181_s_shows_as_a_stall_on_the_page():
    """The run that stalled 181 s under a 900 s watchdog was reported '0 stall(s)'."""
    stock = scen_tiles.tile_cell([_tile_run(3.1, 11.0), _tile_run(181.2, 0.2)], 32)
    assert stock["stalls"] == 1 and stock["stall_walls_s"] == [181.2]
    others = {c: scen_tiles.tile_cell([_tile_run(3.0, 11.0), _tile_run(3.2, 10.0)], 32)
              for c in ("tuned", "vsitune")}
    stock["vsitune_speedup"] = others["tuned"]["vsitune_speedup"] = 1.0
    cell = {"rtt_ms": 20, "protocol": "h2", "threads": 16, "requests_per_run": 32,
            "contenders": {"stock": stock, **others}}
    res = {"reps": 2, "seed": 3, "window": 256, "stall_rule": stalls.rule(900),
           "cells": [cell]}
    page = render.sec_tiles({"meta": {}, "scenarios": {"tile_server": res}}, None)
    assert "1 stall(s) in this run: stock, h2 (TLS), RTT 20 ms, 16 thread(s): 1 (181 s)" in page
    row = next(ln for ln in page.splitlines() if "| stock |" in ln)
    assert row.endswith("| 1 (181 s) / 0 |"), row
    results = {"meta": {"date": "d", "commit": "c"}, "scenarios": {"tile_server": res}}
    assert "(stalls: 1 (181 s))" in render.sec_headline(results)


# -- scenario 11: reps, their medians and their stalls ------------------------------------
def _worker_run(contender, workers, rep, wall, tps, p99, requests, pss, extra=None):
    run = {"contender": contender, "workers": workers, "extra": extra or {}, "rep": rep,
           "ok": tps is not None, "error": None if tps else "killed", "killed": tps is None,
           "wall_s": wall, "requests": {"total": requests, "get": requests,
                                        "bytes": requests << 20},
           "connections": 16}
    if tps is not None:
        run.update(tiles=2000, distinct_tiles=957, tiles_per_s=tps, p50_ms=tps + 100,
                   p99_ms=p99, errors=0, wrong_tiles=0,
                   pss={"pss": pss << 20, "pss_shmem": 0, "rss": pss << 21, "processes": 5,
                        "segment_bytes": None})
    return run


def _workers_results():
    """Scenario 11 with 3 reps: per-process x4 stalls in rep 2 (44 tiles/s, p99 6 s,
    50 s among runs of 20-25 s), shared x4 is even, stock's rep 3 the watchdog killed."""
    reps = {("stock", 4): [(20.0, 120.0, 430, 3100, 840), (21.0, 118.0, 440, 3150, 850),
                           (900.0, None, None, 500, None)],
            ("vsitune", 4): [(25.0, 95.0, 410, 2600, 660), (50.0, 43.9, 6166, 2589, 662),
                             (20.0, 120.0, 390, 2500, 650)],
            ("shared", 4): [(30.0, 72.0, 500, 1700, 560), (31.0, 70.9, 1307, 1666, 564),
                            (29.0, 71.0, 520, 1680, 570)]}
    runs = [_worker_run(c, w, rep + 1, *reps[(c, w)][rep])
            for rep in range(3) for (c, w) in reps]
    variants = [scen_shared.tile_variant([r for r in runs if (r["contender"], r["workers"]) == k])
                for k in reps]
    res = {"labels": scen_shared.LABELS, "scenes": 4, "tiles": 2000, "concurrency": 16,
           "workers": 4, "rtt_ms": 20, "protocol": "h1tls", "reps": 3,
           "stall_rule": stalls.rule(900), "variants": variants, "runs": runs}
    return {"meta": {}, "scenarios": {"tile_workers": res}}


def _row(page, start):
    return next(ln for ln in page.splitlines() if ln.startswith(start)).split(" | ")


def test_scenario_11_shows_the_median_of_its_reps_and_every_reps_stall():
    results = _workers_results()
    v = {x["contender"]: x for x in results["scenarios"]["tile_workers"]["variants"]}
    assert v["vsitune"]["median"]["tiles_per_s"] == 95.0 and v["vsitune"]["stalls"] == 1
    assert v["vsitune"]["stall_reps"] == [{"rep": 2, "how": "slow", "wall_s": 50.0,
                                           "peers_median_s": 22.5}]
    assert v["shared"]["stalls"] == 0 and v["shared"]["median"]["p99_ms"] == 520
    # the killed rep is a stall and no part of the median (of the two that finished)
    assert v["stock"]["stall_reps"][0]["how"] == "watchdog" and v["stock"]["finished"] == 2
    assert v["stock"]["median"]["tiles_per_s"] == 119.0
    page = render_shared.sec_tile_workers(results)
    assert "the median of 3 runs" in page
    row = _row(page, "| vsitune, per-process cache, 4 workers |")
    # requests, MiB, tiles/s, p50, p99, PSS: the medians, not rep 2's 43.9 tiles/s, 6,166 ms
    assert row[1:7] == ["2589", "2,589.0", "95.0", "195", "410", "660 MiB"], row
    assert row[9] == "95.0, 43.9, 120.0"
    assert row[10] == "rep 2: slow, 50 s (others' median 22 s) |", row
    assert _row(page, "| vsitune, shared cache, 4 workers |")[10] == "0 |"
    stock = _row(page, "| stock GDAL, 4 workers |")
    assert stock[3] == "119.0" and stock[9] == "120.0, 118.0, –"
    assert stock[10].startswith("rep 3: watchdog, 900 s"), stock
    rows = []
    render_users._acc_workers(results["scenarios"], rows)
    assert rows[0][0] == ("uvicorn, 4 workers: shared cache tiles/s / per-process caches' "
                          "(median of 3 runs each)")
    assert rows[0][2] == render_users.x(71.0 / 95.0) and rows[0][3] == "**no**"


def test_scenario_11_runs_its_variants_interleaved(monkeypatch):
    seen = []

    def one(ctx, scenes, contender, workers, extra):
        seen.append((contender, workers, bool(extra)))
        return _worker_run(contender, workers, 0, 20.0, 100.0, 400, 2000, 600, extra)

    class Progress:
        start = step = staticmethod(lambda *a: None)

    class Ctx:
        p = dict(_bench_run().FULL)
        progress = Progress()
        build_dir = None  # the repo's sources

    monkeypatch.setattr(scen_shared, "_scenes", lambda ctx: ["/vsis3/lab/a.tif"])
    monkeypatch.setattr(scen_shared, "_tile_run", one)
    res = scen_shared.tile_workers(Ctx())
    assert Ctx.p["tile_workers_reps"] == 3 and _bench_run().QUICK["tile_workers_reps"] == 1
    # the three rows the acceptance compares (stock, per-process, shared at 4 workers)
    # three times, interleaved; the other four once
    assert len(seen) == 13 and seen[7:10] == seen[10:13] == [seen[0], seen[2], seen[3]]
    assert [r["rep"] for r in res["runs"]] == [1] * 7 + [2] * 3 + [3] * 3
    assert [v["reps"] for v in res["variants"]] == [3, 1, 3, 3, 1, 1, 1]
    # the shared row "with one process's budget for the host" gets the plugin's default
    # per-process budget, and the page says both as measured
    default = common.plugin_cache_default_mb(None)
    assert Ctx.p["tile_one_budget_mb"] == default == res["cache_default_mb"]
    assert res["variants"][4]["extra"] == {"VSITUNE_SHARED_CACHE_SIZE": f"{default}M"}


# -- one watchdog ------------------------------------------------------------------------
def _param_dicts():
    """The dict literals of bench/run.py's FULL and QUICK, as AST nodes."""
    tree = ast.parse((BENCH / "run.py").read_text())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id in ("FULL", "QUICK"):
            out[node.targets[0].id] = next(n for n in ast.walk(node.value)
                                           if isinstance(n, ast.Dict))
    return out


def test_the_watchdog_is_one_parameter_and_no_key_is_set_twice():
    dicts = _param_dicts()
    assert set(dicts) == {"FULL", "QUICK"}
    for name, d in dicts.items():
        keys = [k.value for k in d.keys]
        assert sorted({k for k in keys if keys.count(k) > 1}) == [], f"{name} sets a key twice"
        bounds = [k for k in keys if "timeout" in k or "watchdog" in k or k.endswith("stall_s")]
        assert bounds == ["watchdog_s"], f"{name}: {bounds}"
    run = _bench_run()
    assert run.FULL["watchdog_s"] > 180  # past nghttpx's idle timeout: a stall costs its time
    assert "watchdog_s" in run.QUICK


def test_every_scenario_run_takes_the_watchdog():
    """Every child run of every scenario module is bounded by params['watchdog_s']."""
    seen = 0
    for path in sorted(BENCH.glob("scen_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = ast.unparse(node.func)
            if func.endswith("HTTPConnection"):
                continue  # a socket's timeout (scen_cold's loopback rate), not a run
            for kw in node.keywords:
                if kw.arg == "timeout":
                    seen += 1
                    assert "watchdog" in ast.unparse(kw.value), \
                        f"{path.name}:{node.lineno} {func}(timeout={ast.unparse(kw.value)})"
    assert seen >= 15


# -- scratch folder and --publish ------------------------------------------------------------
def _run(*args):
    """bench/run.py with args and a build directory that does not exist: should the
    argument check ever let the run through, it stops at "not built" (exit 2, a
    different message) before measuring or writing anything."""
    return subprocess.run([sys.executable, str(BENCH / "run.py"), "--build-dir",
                           str(REPO / "build" / "no-such-build"), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args", [["--quick"], ["--only", "1,3"],
                                  ["--only", "9", "--keep-others"]])
def test_publish_refuses_a_partial_run(args):
    before = RESULTS.read_bytes(), PAGE.read_bytes()
    cp = _run("--publish", "--root", "sid", *args)
    assert cp.returncode == 2, cp.stderr
    assert "--publish takes a full run only" in cp.stderr, cp.stderr
    assert args[0] in cp.stderr.split("--publish takes a full run only")[1]
    assert (RESULTS.read_bytes(), PAGE.read_bytes()) == before


def test_publish_needs_the_root_of_scenario_9():
    cp = _run("--publish")
    assert cp.returncode == 2 and "--publish needs --root SUITE" in cp.stderr, cp.stderr


@pytest.mark.parametrize("flag,where", [("--out", "bench/results/results.json"),
                                        ("--docs", "docs")])
def test_a_run_without_publish_cannot_write_the_published_files(flag, where):
    cp = _run("--quick", flag, str(REPO / where))
    assert cp.returncode == 2 and "only --publish" in cp.stderr, cp.stderr


def test_a_run_writes_to_a_scratch_folder_by_default(tmp_path):
    run = _bench_run()
    for argv in ([], ["--quick"], ["--only", "13"]):
        a = run.parse_args(["--build-dir", str(tmp_path)] + argv)
        assert a.out.parent == a.docs and tmp_path / "bench-runs" in a.out.parents, argv
        assert not run._published_place(a.out) and not run._published_place(a.docs)


def _full_results(run):
    date = "2026-12-02T00:00:00+00:00"
    return {"meta": {"date": date, "quick": False, "only": []},
            "scenarios": {name: {"measured": {"commit": "c", "date": date}}
                          for _, name, _ in run.SCENARIOS}}


def test_only_one_full_run_is_publishable():
    run = _bench_run()
    r = _full_results(run)
    assert run.unpublishable(r) == []
    r["scenarios"]["sidecars"]["measured"]["date"] = "earlier"
    assert run.unpublishable(r) == ["scenario 13 sidecars was measured in another run"]
    r = _full_results(run)
    r["scenarios"]["gdal_versions"] = {"skipped": "no --root given (e.g. --root sid)"}
    assert run.unpublishable(r) == ["scenario 9 gdal_versions: no --root given (e.g. --root sid)"]
    r = _full_results(run)
    r["meta"]["quick"] = True
    assert run.unpublishable(r) == ["not a full run (--quick, --only or --keep-others)"]


def test_publish_copies_the_run_and_renders_the_page_from_the_copy(tmp_path, monkeypatch):
    run = _bench_run()
    monkeypatch.setattr(run, "PUBLISHED", tmp_path / "results" / "results.json")
    monkeypatch.setattr(run, "DOCS", tmp_path / "docs")
    stale = tmp_path / "docs" / "img" / "cold_window.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"a plot of an earlier page")
    other = stale.with_name("diagram.png")  # not a plot of the page: left alone
    other.write_bytes(b"kept")
    scratch = tmp_path / "scratch" / "results.json"
    scratch.parent.mkdir()
    results = json.loads(RESULTS.read_text())
    del results["scenarios"]["cold_window"]  # so its plot is not drawn again
    scratch.write_text(json.dumps(results))
    run.publish(scratch, results)
    assert run.PUBLISHED.read_bytes() == scratch.read_bytes()
    page = (run.DOCS / "performance.md").read_text()
    assert f"from `{run.PUBLISHED}`" in page and "## 1. Cold window" not in page
    assert not stale.exists() and other.read_bytes() == b"kept"


def test_the_published_results_are_one_full_run():
    assert _bench_run().unpublishable(json.loads(RESULTS.read_text())) == []


# -- the committed page ---------------------------------------------------------------------
def _slug(heading, seen):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to
    hyphens; a repeated anchor gets -1, -2, ..."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
    n = seen.get(s, 0)
    seen[s] = n + 1
    return s if n == 0 else f"{s}-{n}"


def _sections(md):
    """{anchor: the section's text up to the next heading of its level or above}."""
    lines = md.splitlines()
    heads, seen, fence = [], {}, False
    for i, ln in enumerate(lines):
        if ln.startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"(#{1,6}) (.*)", ln)
        if m:
            heads.append((i, len(m.group(1)), _slug(m.group(2), seen)))
    out = {}
    for k, (i, level, anchor) in enumerate(heads):
        end = next((j for j, lv, _ in heads[k + 1:] if lv <= level), len(lines))
        out[anchor] = lines[i + 1:end]
    return out


def _holds_numbers(lines):
    """A table data row (not a header, not a separator) with a digit in it."""
    sep = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")
    for i, ln in enumerate(lines):
        if not ln.startswith("|") or sep.match(ln):
            continue
        header = i + 1 < len(lines) and sep.match(lines[i + 1])
        if not header and re.search(r"\d", ln):
            return True
    return False


def _readme_links():
    return re.findall(r"\]\(docs/performance\.md(#[^)\s]*)?\)", README.read_text())


def test_every_readme_link_into_the_page_resolves_to_a_section_with_numbers():
    links = _readme_links()
    assert links, "README.md links to docs/performance.md"
    sections = _sections(PAGE.read_text())
    for anchor in links:
        assert anchor, "a README link into docs/performance.md names no section"
        body = sections.get(anchor[1:])
        assert body is not None, f"README links {anchor}: no such section in docs/performance.md"
        assert _holds_numbers(body), f"README links {anchor}: that section holds no numbers"


def test_the_link_check_sees_an_empty_headline_and_a_missing_section():
    page = ("# P\n\n## Headline\n\nNo scenario produced a headline number in this run.\n\n"
            "## 13. The sibling question\n\n| a | b |\n| --- | --- |\n| cog | 1 |\n")
    s = _sections(page)
    assert not _holds_numbers(s["headline"]) and "9-gdal-313-beside-gdal-36" not in s
    assert _holds_numbers(s["13-the-sibling-question"])
    assert _slug("9. GDAL 3.13 beside GDAL 3.6", {}) == "9-gdal-313-beside-gdal-36"


def test_the_page_is_the_rendering_of_the_published_results(tmp_path):
    results = json.loads(RESULTS.read_text())
    render.render(results, tmp_path, source="bench/results/results.json")
    assert (tmp_path / "performance.md").read_text() == PAGE.read_text()


def test_a_page_merged_from_several_runs_says_so():
    results = json.loads(RESULTS.read_text())
    runs = {json.dumps(res.get("measured") or {}, sort_keys=True)
            for res in results["scenarios"].values()}
    merged = "**This page is not one benchmark run.**" in PAGE.read_text()
    assert merged == (len(runs) > 1)


def _req(t, dur_ms):
    return {"time": t, "dur_ms": dur_ms}


def test_in_flight_tells_requests_one_at_a_time_from_requests_side_by_side():
    """Scenario 15's "in flight" (bench/common.in_flight): spans widened by the one-way
    delay each side; one after another is 1 at a time, two together 2."""
    one_way = 0.010
    # arrivals 50 ms apart, 10 ms at the lab: spans of 30 ms that never meet
    serial = [_req(t, 10) for t in (100.0, 100.05, 100.10)]
    got = common.in_flight(serial, one_way)
    assert got["most"] == 1 and got["mean"] == pytest.approx(1.0)
    assert got["busy_s"] == pytest.approx(0.090)
    # two arriving together, then one alone: 2 at most, 60 ms of spans over 30 + 30 ms
    mixed = [_req(200.0, 10), _req(200.0, 10), _req(200.5, 10)]
    got = common.in_flight(mixed, one_way)
    assert got["most"] == 2 and got["busy_s"] == pytest.approx(0.060)
    assert got["mean"] == pytest.approx(0.090 / 0.060)
    # the delay is what makes them meet: 25 ms apart at the lab, 30 ms spans overlap
    assert common.in_flight([_req(300.0, 10), _req(300.025, 10)], one_way)["most"] == 2
    assert common.in_flight([_req(300.0, 10), _req(300.025, 10)], 0)["most"] == 1
    assert common.in_flight([], one_way) is None
