#!/usr/bin/python3
"""render.py: results JSON -> docs/performance.md and docs/img/*.png.

Reads nothing but the results file bench/run.py wrote: every number in the page
is a value of that file (medians and ratios were computed when it was written),
formatted here. Re-render without re-measuring:
    /usr/bin/python3 bench/render.py bench/results/results.json docs/
Plots use matplotlib's Agg backend (Debian's python3-matplotlib); without it the
page is still written, with a note instead of the pictures.
"""

import json
import sys
from pathlib import Path

import render_reach
import render_shared
import render_users
from render_cells import _section, f, table, x

CONTENDERS = ("stock", "tuned", "vsitune")
SHORT = {"stock": "stock", "tuned": "stock, TiTiler env", "vsitune": "vsitune"}
# Results written before the tuned contender took TiTiler's environment (no
# meta "tuned_source") measured seed 001's variables: their page says so.
SEED001 = {"short": "stock tuned", "version": "tuned",
           "words": "stock tuned (seed 001's variables)"}
TITILER = {"short": "stock, TiTiler env", "version": "TiTiler env",
           "words": "stock with TiTiler's environment"}
TUNED_LABEL = dict(TITILER)


def _labels(meta):
    """Name the tuned contender as the results file measured it (render() calls
    this first; the module's labels then hold for that one rendering)."""
    TUNED_LABEL.clear()
    TUNED_LABEL.update(TITILER if meta.get("tuned_source") else SEED001)
    SHORT["tuned"] = TUNED_LABEL["short"]
COLORS = {"stock": "#9e9e9e", "tuned": "#5b8fd6", "vsitune": "#e07b24"}
PROTO = {"h1": "HTTP/1.1", "h2": "h2 (TLS)", "h1tls": "HTTP/1.1 (TLS)"}
PLOTS = ("cold_window", "gdalinfo_cold", "tile_server", "pool_sweep", "memory_soak")
PUBLISH = "bench/run.sh --publish --root trixie --root sid"
TITLES = {"cold_window": "1. Cold window", "gdalinfo_cold": "2. gdalinfo, cold",
          "tile_server": "3. Tile server", "pool_sweep": "4. Process-pool sweep",
          "memory_soak": "5. Memory soak", "cpu_per_window": "6. CPU per window",
          "tunerd_speed": "7. tunerd profile speed", "plugin_load": "8. Plugin load cost",
          "gdal_versions": "9. GDAL 3.13 beside GDAL 3.6", "dask_twice": "10. Dask",
          "tile_workers": "11. Tile server: uvicorn workers",
          "pool_fork5": "12. Seed 000's process pool", "sidecars": "13. The sibling question",
          "many_opens": "14. Many-object opens", "mosaic_tiles": "15. STAC mosaic tiles",
          "overview_reads": "16. Overview reads"}


def _plt():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


# -- sections ----------------------------------------------------------------------
def sec_machine(r):
    m = r["meta"]["machine"]
    fx = r["meta"].get("fixture", {})
    rows = [("CPUs (nproc)", m.get("nproc")), ("CPU model", m.get("cpu_model")),
            ("memory", f"{m.get('memory_mb'):,} MB" if m.get("memory_mb") else "–"),
            ("kernel", m.get("kernel")), ("OS", m.get("os")), ("GDAL", m.get("gdal")),
            ("curl", m.get("curl")), ("nghttpx (lab TLS front)", m.get("nghttpx")),
            ("Python", m.get("python")),
            ("load average at start (1/5/15 min)", " / ".join(str(v) for v in m.get("loadavg_at_start", []))),
            ("load average at end", " / ".join(str(v) for v in r["meta"].get("loadavg_at_end", [])) or "–"),
            ("date (UTC)", r["meta"]["date"]),
            ("code measured", f"commit {r['meta'].get('commit') or '–'}" +
             (", built from a clean `git archive` (`--snapshot`)" if r["meta"].get("snapshot") else
              f", build dir {r['meta'].get('build_dir', '–')}")),
            ("suite duration", f(r["meta"].get("duration_s"), 0, " s")),
            ("fixture", f"{fx.get('name')} COG {fx.get('width')}x{fx.get('height')} uint16, 512x512 "
                        f"DEFLATE tiles, {f(fx.get('bytes'))} bytes, beside 224 sibling keys")]
    return "## Machine\n\n" + table(["", ""], rows)


def sec_headline(r):
    s = r["scenarios"]
    rows, used = [], []
    cw = s.get("cold_window", {})
    for cell in cw.get("cells", []):
        if cell["rtt_ms"] != max(c["rtt_ms"] for c in cw["cells"]):
            continue
        cs = cell["contenders"]
        rows.append([f"cold 512x512 window, RTT {cell['rtt_ms']} ms, {PROTO[cell['protocol']]}: "
                     "requests / wall ms"] +
                    [f"{f(cs[c]['requests'])} / {f(_ms(cs[c]['wall_s']))}{_stall_note(cs[c])}"
                     for c in CONTENDERS])
        used.append("cold_window")
    ts = s.get("tile_server", {})
    for cell in ts.get("cells", []):
        if cell["threads"] == max(c["threads"] for c in ts["cells"]) and \
                cell["rtt_ms"] == max(c["rtt_ms"] for c in ts["cells"]):
            cs = cell["contenders"]
            rows.append([f"tile server, {cell['threads']} threads, RTT {cell['rtt_ms']} ms, "
                         f"{PROTO[cell['protocol']]}: windows/s / connections"] +
                        [f"{_tile_wps(cs[c])} / {f(cs[c]['connections'])}{_stall_note(cs[c])}"
                         for c in CONTENDERS])
            used.append("tile_server")
    so = s.get("memory_soak", {})
    for cell in so.get("cells", []):
        if cell["malloc_arena_max"] == "default":
            cs = cell["contenders"]
            rows.append([f"memory soak, {so['requests']} tiles at concurrency 16: RSS growth MB"] +
                        [f(cs[c]["growth_mb"]) for c in CONTENDERS])
            used.append("memory_soak")
    cpu = s.get("cpu_per_window", {})
    if cpu.get("contenders"):
        rows.append(["CPU per warm 512x512 window (callgrind): million instructions"] +
                     [f(_mega(cpu["contenders"][c]["instructions_per_window"]), 1) for c in CONTENDERS])
        used.append("cpu_per_window")
    if not rows:
        return "## Headline\n\nNo scenario produced a headline number in this run."
    return ("## Headline\n\nMedians from " + _runs_of(r, used) +
            " (details and every repeat below).\n\n" +
            table(["measure"] + [SHORT[c] for c in CONTENDERS], rows))


def _flags(meta):
    """The partial-run flags a results file was made with, as the page names them."""
    return ((" --quick" if meta.get("quick") else "") +
            (f" --only {','.join(meta['only'])}" if meta.get("only") else "") +
            (" --keep-others" if meta.get("kept_from") else ""))


def sec_regenerate(results):
    took = sum(v.get("duration_s") or 0 for v in results["scenarios"].values())
    return ("## How to regenerate\n\n"
            f"`{PUBLISH}` builds everything (scripts/setup.sh), runs every scenario at full "
            f"size (this run's scenarios took {took / 60:.0f} minutes here, each stock stall "
            "costing its time; scenarios 9, 14-16 and 17 need each root's plugin: "
            "`VT_TEST_GDALS='trixie sid' scripts/test.sh`) and, only when every scenario produced its numbers, replaces "
            "`bench/results/results.json`, this page and `docs/img/` with that one run, so every "
            "number here, headlines included, comes from it. `--publish` refuses `--quick`, "
            "`--only` and `--keep-others` (exit status 2). Any other run (`bench/run.sh --quick`, "
            "`--only 1,3`, `--only 9 --keep-others`, ...) writes its results file and its page "
            "into a scratch folder of its own (`build/bench-runs/<date>-<commit>/`, or `--out` "
            "and `--docs`), never here. Every child run of every scenario has one watchdog "
            "(`watchdog_s` in bench/run.py); a run it kills, or a run slower than "
            "twice the median of its peers (the same contender's other runs in the same cell), "
            "is reported as a stall with its time. Re-render this page from the published file "
            "without measuring: `/usr/bin/python3 bench/render.py bench/results/results.json "
            "docs/`.")


def _measured(r, key):
    """(commit, date) of the run that measured scenario `key`: its own record,
    else the file's (results written before scenarios recorded it)."""
    m = r["scenarios"][key].get("measured") or r["meta"]
    return m.get("commit"), m.get("date")


def _runs_of(r, keys):
    """'the run of DATE (commit C)', or the runs, when `keys` were measured in several."""
    runs = sorted({_measured(r, k) for k in keys}, key=lambda cd: cd[1] or "")
    words = [f"the run of {d} (commit {c or '–'})" for c, d in runs]
    if len(words) == 1:
        return words[0]
    return "separate runs, " + "; ".join(words)


def sec_provenance(r):
    """Said plainly when the page is not one run: which run measured each scenario."""
    keys = list(r["scenarios"])
    if len({_measured(r, k) for k in keys}) <= 1:
        return ""
    keys.sort(key=lambda k: list(TITLES).index(k) if k in TITLES else len(TITLES))
    rows = [[TITLES.get(k, k), c or "–", d or "–"] for k in keys for c, d in [_measured(r, k)]]
    return ("## Not one run\n\n**This page is not one benchmark run.** Its scenarios come from "
            f"{len({_measured(r, k) for k in keys})} separate runs, merged in one results file "
            "by `--only ... --keep-others` (what `--publish` now refuses), at the commits and dates "
            "below; numbers of different sections were not measured side by side, and the "
            "machine description below is the last run's. Within a section, the contenders were "
            "measured side by side in one run. Issue 22 asks for a full run to replace it.\n\n" +
            table(["scenario", "commit measured", "date (UTC)"], rows))


def _each(res):
    """(cell, contender, that contender's values) over a scenario's cells."""
    for cell in res["cells"]:
        for c in CONTENDERS:
            yield cell, c, cell["contenders"][c]


def _ms(v):
    return None if v is None else v * 1000


def _mega(v):
    return None if v is None else v / 1e6


def _stalls(v):
    """'2 (181 s, 900 s killed)': a cell's stalls with each one's time; '0' without.
    Results written before bench/stalls.py counted only killed runs ('stalls')."""
    n = v.get("stalls") or 0
    if not n:
        return "0"
    timed = [(run["stall"]["wall_s"], run["stall"]["how"]) if run.get("stall") else
             (run["wall_s"], "watchdog") for run in v.get("runs", [])
             if run.get("stall") or run.get("stalled")]
    if not timed:
        return str(n)
    return f"{n} (" + ", ".join(f"{w:,.0f} s" + (" killed" if how == "watchdog" else "")
                                for w, how in timed) + ")"


def _stall_note(v):
    """' (stalls: 1 (181 s))' after a headline value whose cell had stalls."""
    s = _stalls(v)
    return "" if s == "0" else f" (stalls: {s})"


def _rule_words(res):
    """What counted as a stall in this scenario's results, in words."""
    rule = res.get("stall_rule")
    if rule:
        return (f"A run is a stall when the watchdog killed it ({rule['watchdog_s']} s, the "
                "one bound of every run of the suite) or when it took more than "
                f"{rule['factor']:g} times the median wall time of the same contender's other "
                "runs in its cell; each stall is shown with its time (bench/stalls.py)")
    if res.get("timeout_s") is not None:
        return (f"A run still going after {res['timeout_s']} s is killed and counted as a stall "
                "(these results predate the rule that also counts a run slower than twice its "
                "peers' median)")
    return (f"A run of {res['stall_s']} s or more counts as stalled (these results predate "
            "the rule of bench/stalls.py)")


def _tile_wps(c):
    if c.get("stalls") and c.get("windows_per_s") is None:
        return "stalled"
    return f(c.get("windows_per_s"), 1)


def sec_cold(r, key, title, intro, img):
    res, why = _section(r, key, title)
    if res is None:
        return why
    rows = []
    for cell, c, v in _each(res):
        rows.append([cell["rtt_ms"], PROTO[cell["protocol"]], SHORT[c],
                     f"{f(v['requests'])} ({f(v['lists'])} LIST)", f(v["connections"]),
                     f(v["bytes"]), f(_ms(v["wall_s"])), f(v["wall_rtt"], 1),
                     f(_ms(cell["floor_s"])), x(v["over_floor"]), x(v.get("over_rtt_floor")),
                     x(v.get("vsitune_speedup")) if c != "vsitune" else "",
                     f"{v['failed']}" + (f", {v['wrong_checksums']} wrong" if v.get("wrong_checksums") else "")
                     + ("" if _stalls(v) == "0" else f"; stalls: {_stalls(v)}")])
    fl = res["cells"][0]["floor_parts"] if res["cells"] else {}
    inside = ""
    if any(v.get("open_read_s") is not None for _, _, v in _each(res)):
        irows = [[cell["rtt_ms"], PROTO[cell["protocol"]], SHORT[c], f(_ms(v["open_read_s"])),
                  f(v["open_read_rtt"], 1), f(_ms(cell.get("network_floor_s"))),
                  x(v.get("open_read_over_network_floor"))] for cell, c, v in _each(res)]
        inside = ("\n\nThe network's part alone: open + read as timed inside the process (no "
                  "interpreter start, no imports, which dominate the wall time above on this "
                  "loaded machine), against its floor: the fastest open + read of the local file "
                  f"({f(_ms(min(res.get('local_open_read_s') or [0])))} ms: driver registration, "
                  "header parse, decode) + the wire floor above, as below:\n\n" +
                  table(["RTT ms", "protocol", "contender", "open+read ms", "in RTTs",
                         "floor ms", "× floor"], irows))
    wires = "; ".join(f"{cell['rtt_ms']} ms {PROTO[cell['protocol']]} "
                      f"{f(_ms(cell['floor_parts'].get('wire_s')), 1)} ms"
                      for cell in res["cells"] if cell["floor_parts"].get("wire_s") is not None)
    ranges = fl.get("wire_ranges") or []
    note = (f"Floor = the same program against the local file (fastest of {res['reps']} runs: "
            f"{f(_ms(res.get('local_wall_s')))} ms, median {f(_ms(res.get('local_median_s')))} ms: "
            "interpreter start, imports, open, decode) + the wire floor: a plain libcurl client "
            "(bench/probes/floor_get.c --ranges) that connects through the same endpoint at the "
            "same RTT and GETs, signed (SigV4) as the contenders' GETs are, of the same object, "
            "over HTTP/1.1 on every front (on the h2 front ALPN then picks HTTP/1.1: the same "
            "round trips for requests sent one after the other), "
            f"{' then '.join('bytes ' + x for x in ranges)} (the header up to the first tile's "
            "data" + (", then the window's internal tile" if len(ranges) > 1 else "") +
            f", one request each), fastest of {res['reps']} runs, alternated with the contenders: "
            f"{wires}. × RTT floor: the same local part + only the round trips and the transfer "
            f"(connect round trips: 0 for plain HTTP, the lab's delay proxy does not delay TCP's "
            f"handshake, 1 for TLS 1.3; {fl.get('request_rtts')} request round trip(s); the "
            f"smallest byte count any contender moved at the lab's loopback rate, "
            f"{f((r['meta'].get('fixture', {}).get('loopback_bytes_per_s') or 0) / 1e6)} MB/s), "
            "which no client reaches: it leaves out the time each request costs the lab's servers "
            "(signature check, storage, the delay proxy, TLS) on this machine's two cores. "
            f"{res['reps']} runs per cell, alternated; medians. " +
            (_rule_words(res) + "." if res.get("stall_rule") else ""))
    return (f"## {title}\n\n{intro}\n\n" +
            table(["RTT ms", "protocol", "contender", "requests", "conn.", "bytes", "wall ms",
                   "wall / RTT", "floor ms", "× floor", "× RTT floor", "vsitune faster by",
                   "failed runs"], rows) +
            f"\n\n{note}" + inside + _img(title, img))


def _img(alt, img):
    return f"\n\n![{alt}](img/{img})\n" if img else ""


def sec_tiles(r, img):
    res, why = _section(r, "tile_server", "3. Tile server")
    if res is None:
        return why
    rows = []
    for cell, c, v in _each(res):
        rows.append([cell["rtt_ms"], PROTO[cell["protocol"]], cell["threads"], SHORT[c],
                     _tile_wps(v), f(v["requests_per_window"], 2), f(v["connections"]),
                     f(v["peak_rss_mb"]), f(v["latency_max_s"], 2),
                     x(v.get("vsitune_speedup")) if c != "vsitune" else "",
                     f"{_stalls(v)} / {v['failed']}" +
                     (f" / {v['wrong_checksums']} wrong" if v["wrong_checksums"] else "")])
    stalls = sum(cell["contenders"][c]["stalls"] for cell in res["cells"] for c in CONTENDERS)
    where = [f"{SHORT[c]}, {PROTO[cell['protocol']]}, RTT {cell['rtt_ms']} ms, "
             f"{cell['threads']} thread(s): {_stalls(cell['contenders'][c])}"
             for cell in res["cells"] for c in CONTENDERS if cell["contenders"][c]["stalls"]]
    return ("## 3. Tile server (open per request)\n\n"
            "A thread pool serves random 256x256 windows; each request opens the COG with rasterio, "
            "reads, closes (TiTiler's shape). Windows per run: " +
            ", ".join(f"{cell['requests_per_run']} at {cell['threads']} thread(s)"
                      for cell in res["cells"][:len({c['threads'] for c in res['cells']})]) +
            f"; {res['reps']} run(s) per cell, alternated; windows/s counts the serving only "
            "(not the interpreter start). Connections: TCP connections the lab's front accepted. "
            f"Peak RSS: the process's VmHWM. {_rule_words(res)} (issue 4: stock GDAL's HTTP/2 "
            f"multiplexing can wait for nghttpx's 180 s timeout); {stalls} stall(s) in this run"
            + (": " + "; ".join(where) if where else "") + ".\n\n" +
            table(["RTT ms", "protocol", "threads", "contender", "windows/s", "requests/window",
                   "conn.", "peak RSS MB", "slowest window s", "vsitune faster by",
                   "stalls (time) / failed"], rows) + _img("tile server", img))


def sec_pool(r, img):
    res, why = _section(r, "pool_sweep", "4. Process-pool sweep")
    if res is None:
        return why
    series = res["series"]
    head = ["workers"] + [f"{e} / {SHORT[c]}" for e in ("process", "thread") for c in CONTENDERS]
    rows = []
    for i, w in enumerate(res["workers"]):
        row = [w]
        for e in ("process", "thread"):
            for c in CONTENDERS:
                pt = series[f"{e}/{c}"]["points"][i]
                cellv = (f"{f(pt['windows_per_s'], 1)} ({x(pt['speedup'], 1)})"
                         if pt["windows_per_s"] is not None else "failed")
                if pt["failed"]:
                    cellv += f" [{pt['failed']} failed]"
                if pt["wrong_windows"]:
                    cellv += f" [{pt['wrong_windows']} wrong]"
                if _stalls(pt) != "0":
                    cellv += f" [stalls: {_stalls(pt)}]"
                row.append(cellv)
        rows.append(row)
    knees = table(["series", "flattens at (workers)"],
                  [[f"{s['executor']} / {SHORT[s['contender']]}", f(s["knee_workers"]) if
                    s["knee_workers"] else "does not flatten in the sweep"] for s in series.values()])
    errors = sorted({run["error"] for s in series.values() for pt in s["points"]
                     for run in pt["runs"] if run.get("error")})
    one = [(s["contender"], pt["runs"][0]["connections"]) for s in series.values()
           if s["executor"] == "process" for pt in s["points"][:1]
           if pt["workers"] == 1 and pt["runs"] and pt["runs"][0].get("connections") is not None]
    err_txt = ("\n\nErrors seen in failed runs. Likely cause, not proven here: forked workers "
               "inherit the connection the parent opened when it read the scene's size, and two "
               "workers reading through one socket garble each other's responses. With one "
               "worker the lab counted " +
               ", ".join(f"{n} connection(s) in total ({SHORT[c]})" for c, n in one) +
               " for parent and child together.\n\n" +
               "\n".join(f"- `{e[:240]}`" for e in errors)) if errors else ""
    cpus = res.get("cpus")
    pk = {c: series[f"process/{c}"]["knee_workers"] for c in CONTENDERS}
    tk = {c: series[f"thread/{c}"]["knee_workers"] for c in CONTENDERS}
    best = {e: max(((pt["windows_per_s"] or 0, pt["workers"], c) for c in CONTENDERS
                    for pt in series[f"{e}/{c}"]["points"]), default=(0, None, None))
            for e in ("process", "thread")}
    mapping = (
        f"This machine has {cpus} CPUs (shared with other jobs). Measured here, the process "
        f"pool flattens at " + ", ".join(f"{f(pk[c]) if pk[c] else 'no knee'} ({SHORT[c]})"
                                         for c in CONTENDERS) +
        " and the thread pool at " + ", ".join(f"{f(tk[c]) if tk[c] else 'no knee'} ({SHORT[c]})"
                                               for c in CONTENDERS) +
        f" workers; the best process-pool point is {f(best['process'][0], 1)} windows/s "
        f"({best['process'][1]} workers, {SHORT.get(best['process'][2], '–')}), the best "
        f"thread-pool point {f(best['thread'][0], 1)} windows/s ({best['thread'][1]} workers, "
        f"{SHORT.get(best['thread'][2], '–')}). How it maps to seed 000's 6-vCPU numbers (14.2 "
        "windows/s at 1 worker, near-linear to 4, a knee at 6, nothing from 8): with the RTT "
        f"added here ({res['rtt_ms']} ms) each task waits on the network for part of its time, so "
        f"a pool can gain past its {cpus} CPUs until the CPU share of the tasks fills them; the "
        f"knee sits where workers x (CPU share per task) reaches the CPU count. On a 6-vCPU "
        "function the same tasks would flatten at about 6/" + f"{cpus} = {6 / cpus:.0f} times "
        "the worker count where they flatten here, bounded by the seed's own observation that "
        "the parent needs one vCPU.")
    return ("## 4. Process-pool sweep (seed 000's handler)\n\n"
            f"Window statistics (masked mean and std) over {res['windows']} block-aligned 512x512 "
            f"windows ({res['cols']}x{res['rows']} tiles of the scene, not all 441: the budget), "
            f"each task opening the COG itself, {PROTO[res['protocol']]} at RTT {res['rtt_ms']} ms. "
            "ProcessPoolExecutor with fork (chunksize as in the seed) against ThreadPoolExecutor; "
            "windows/s and, in parentheses, the speedup over one worker of the same series.\n\n" +
            table(head, rows) + "\n\n" + knees +
            "\n\n'Flattens at' is the last worker count before one that gains less than 10%. " +
            mapping + err_txt +
            _img("pool sweep", img))


def sec_soak(r, img):
    res, why = _section(r, "memory_soak", "5. Memory soak")
    if res is None:
        return why
    rows = []
    for cell, c, v in _each(res):
        rows.append([cell["malloc_arena_max"], SHORT[c], f(v["rss_before_mb"]),
                     f(v["rss_after_mb"]), f(v["growth_mb"]), f(v["peak_rss_mb"]),
                     f(v["windows_per_s"], 1), f(v["requests"]), f(v["connections"]),
                     f"{v['failed']}" + (f", {v['wrong_checksums']} wrong" if v["wrong_checksums"] else "")
                     + ("" if _stalls(v) == "0" else f"; stalls: {_stalls(v)}")])
    scaled = ("" if res["requests"] >= res["requests_seed"] else
              f" Scaled down from the seed's {res['requests_seed']:,} requests to "
              f"{res['requests']:,} so the whole suite fits its 15-minute budget on this machine.")
    return ("## 5. Memory soak (seed 003)\n\n"
            f"{res['requests']:,} random 256x256 tile requests at concurrency {res['concurrency']} "
            f"through the threaded reader (open per request), {PROTO[res['protocol']]}, RTT "
            f"{res['rtt_ms']} ms. RSS before = after the imports, before the first request; "
            f"after = when the last request is done; MB = MiB. vsitune keeps up to "
            f"`VSITUNE_CACHE_SIZE` ({res.get('cache_default_mb', 64)} MiB by default in this run) "
            "of compressed ranges for the whole process by "
            f"design; that budget is inside its RSS.{scaled}\n\n" +
            table(["MALLOC_ARENA_MAX", "contender", "RSS before", "RSS after", "growth",
                   "peak RSS", "windows/s", "requests", "conn.", "failed"], rows) +
            _img("memory soak", img))


def sec_cpu(r):
    res, why = _section(r, "cpu_per_window", "6. CPU per window")
    if res is None:
        return why
    rows = []
    for c in CONTENDERS:
        v = res["contenders"][c]
        rows.append([SHORT[c], f(_mega(v["instructions_per_window"]), 2),
                     x(v.get("vsitune_ratio")) if c != "vsitune" else "",
                     sum(1 for run in v["runs"] if not run["ok"])])
    return ("## 6. CPU per window (callgrind)\n\n"
            f"Instructions of {res['windows']} warm 512x512 window reads (dataset open, connection "
            f"made, header read; each window a new tile, so fetched and decoded), counted by "
            f"valgrind --tool=callgrind over every thread, divided by {res['windows']}; "
            f"{PROTO[res['protocol']]} at no added delay. Instruction counts do not depend on the "
            "machine's load.\n\n" +
            table(["contender", "M instructions / window", "vsitune / this", "failed runs"], rows))


def sec_tunerd(r):
    res, why = _section(r, "tunerd_speed", "7. tunerd profile speed")
    if res is None:
        return why
    return ("## 7. tunerd profile speed\n\n"
            f"`tunerd {' '.join(res['argv'])}`, {res['runs']} runs, each a new process:\n\n" +
            table(["median ms", "p95 ms", "fastest ms", "`true` median ms (fork+exec alone)",
                   "peak RSS kB", "failed"],
                  [[f(res["median_ms"], 2), f(res["p95_ms"], 2), f(res["min_ms"], 2),
                    f(res.get("true_median_ms"), 2), f(res["peak_rss_kb"]), res["failed"]]]) +
            "".join(f"\n\nError: `{e}`" for e in res.get("errors", [])) +
            "\n\n`bench/tunerd_bench.sh` times the same command in process, without process start.")


def sec_load(r):
    res, why = _section(r, "plugin_load", "8. Plugin load cost")
    if res is None:
        return why
    a = res["arms"]
    return ("## 8. Plugin load cost\n\n"
            f"`gdalinfo --version`, {res['runs']} runs per arm, alternated; wall time and peak RSS "
            "(ru_maxrss) of the process. Plugin registered in the 'with' arm (seen in "
            f"`gdalinfo --formats`): {'yes' if res.get('plugin_registered') else 'NO'}.\n\n" +
            table(["GDAL_DRIVER_PATH", "median ms", "peak RSS MB", "failed"],
                  [[arm, f(a[arm]["median_ms"], 1), f(a[arm]["peak_rss_mb"], 1), a[arm]["failed"]]
                   for arm in ("without", "with")]) +
            f"\n\nAdded by the plugin: {f(res.get('added_ms'), 1)} ms, "
            f"{f(res.get('added_rss_mb'), 1)} MB.")


def _vname(res, n):
    """'stock GDAL 3.13.3' for contender 'stock@sid'."""
    c = res["contenders"][n]
    ver = res["gdals"][c["gdal"]]["version"] or c["gdal"]
    return {"stock": f"stock {ver}", "tuned": f"stock {ver} {TUNED_LABEL['version']}".replace(" TiTiler", ", TiTiler"),
            "vsitune": f"vsitune on {ver}"}[c["kind"]]


def _host_version(res):
    return next((g["version"] for g in res["gdals"].values() if not g["root"]), "?")


def _speed_heads(res):
    return [f"speed vs stock {_host_version(res)}", "speed vs stock of its GDAL"]


def _speed_cells(c):
    return [x(c.get("speed_vs_stock_host")), x(c.get("speed_vs_stock_same"))]


def sec_headline_versions(r):
    """The headline measures on both GDAL releases of scenario 9 (one run): stock and
    vsitune on each; requests as the lab saw them, speeds as ratios to stock GDAL of
    this machine measured in the same run."""
    res = r["scenarios"].get("gdal_versions")
    if not res or "error" in res or "skipped" in res or "cold" not in res:
        return ""
    names = [n for n, c in res["contenders"].items() if c["kind"] in ("stock", "vsitune")]
    host = _host_version(res)
    rows = []
    for what, label in (("window", "cold 512x512 window"), ("gdalinfo", "`gdalinfo`")):
        for ep in sorted({c["protocol"] for c in res["cold"]}):
            cells = {c["contender"]: c for c in res["cold"] if c["what"] == what and c["protocol"] == ep}
            rows.append([f"{label}, {PROTO.get(ep, ep)}: requests (LIST) / speed"] +
                        [f"{f(cells[n]['requests'])} ({f(cells[n]['lists'])}) / "
                         f"{x(cells[n].get('speed_vs_stock_host'))}" if n in cells else "–"
                         for n in names])
    for ep in sorted({t["protocol"] for t in res["tiles"]}):
        cells = {t["contender"]: t for t in res["tiles"] if t["protocol"] == ep}
        rows.append([f"tile server, {res['threads']} threads, {PROTO.get(ep, ep)}: "
                     "speed / connections / runs stalled"] +
                    [f"{x(cells[n].get('speed_vs_stock_host'))} / {f(cells[n]['connections'])} / "
                     f"{_v_stalls(cells[n])} of {len(cells[n]['runs'])}" if n in cells else "–"
                     for n in names])
    return ("### The headline on GDAL 3.6 and 3.13 (section 9, one run)\n\n"
            f"Stock GDAL and vsitune on this machine's GDAL {host} and on Debian sid's, "
            f"alternated in {_runs_of(r, ['gdal_versions'])}, RTT {res['rtt_ms']} ms. Speed: how many times faster than "
            f"stock GDAL {host} in the same run (cold window: open + read inside the process; "
            "gdalinfo: wall time less the root's launcher; tile server: windows/s). "
            f"{_rule_words(res)}.\n\n" +
            table(["measure"] + [_vname(res, n) for n in names], rows) + "\n\n" +
            _stall_words(res))


def sec_versions(r):
    res, why = _section(r, "gdal_versions", "9. GDAL 3.13 beside GDAL 3.6")
    if res is None:
        return why
    names = list(res["contenders"])
    gd = res["gdals"]
    roots = [g for g in gd.values() if g["root"]]
    intro = (
        "## 9. GDAL 3.13 beside GDAL 3.6\n\n"
        "The headline measures again on two GDAL releases in this same run, runs alternated over "
        f"{len(names)} contenders: this machine's GDAL " +
        ", ".join(f"{v['version']}" for k, v in gd.items() if not v["root"]) +
        " and the GDAL of a Debian root made by `scripts/debroot.sh` (" +
        ", ".join(f"{v['version']}, `{Path(v['root']).name}`" for v in roots) +
        "; its own curl, Python and rasterio), each " + TUNED_LABEL["words"].replace("stock", "stock, stock", 1) + " and "
        "with vsitune built for it. The lab is the same for all. A run in the root is started "
        "through `debroot.sh --run` (namespaces, chroot), which adds " +
        ", ".join(f"{v['launcher_s'] * 1000:.0f} ms" for v in roots) +
        " of wall time per process (measured here): cold reads are therefore compared on the time "
        "the probe spent in open + read, timed inside the process. "
        f"RTT {res['rtt_ms']} ms; {res['cold_reps']} cold runs per cell, medians. Plugins "
        "measured (sha256 prefix, build directory): " +
        "; ".join(f"{v['version']}: `{v['plugin']['sha256'][:12]}`, `{v['plugin']['build_dir']}`"
                  for v in gd.values() if v.get("plugin")) + ". " +
        ("The libcurl each stock GDAL uses: " +
         "; ".join(f"{v['version']}: {v['curl']}" for v in gd.values() if v.get("curl")) + ". "
         if any(v.get("curl") for v in gd.values()) else "") +
        (r["meta"].get("root_note") or ""))
    rows = []
    for c in res["cold"]:
        if c["what"] != "window":
            continue
        rows.append([PROTO.get(c["protocol"], c["protocol"]), _vname(res, c["contender"]),
                     f"{f(c['requests'])} ({f(c['lists'])} LIST, {f(c['heads'])} HEAD)",
                     f(c["bytes"]), f(_ms(c["open_read_s"])), *_speed_cells(c),
                     f(c["wrong_checksums"]), f(c["failed"])])
    t1 = ("### Cold 512x512 window\n\n" +
          table(["protocol", "contender", "requests", "bytes", "open + read ms",
                 *_speed_heads(res), "wrong checksums", "failed"], rows))
    rows = []
    for c in res["cold"]:
        if c["what"] != "gdalinfo":
            continue
        rows.append([PROTO.get(c["protocol"], c["protocol"]), _vname(res, c["contender"]),
                     f"{f(c['requests'])} ({f(c['lists'])} LIST, {f(c['heads'])} HEAD)",
                     f(_ms(c["wall_less_launcher_s"])), *_speed_cells(c), f(c["failed"])])
    t2 = ("### gdalinfo, cold\n\n" +
          table(["protocol", "contender", "requests", "wall ms (less the launcher)",
                 *_speed_heads(res), "failed"], rows))
    rows = []
    for t in res["tiles"]:
        rows.append([PROTO.get(t["protocol"], t["protocol"]), _vname(res, t["contender"]),
                     f(t["windows_per_s"], 1), *_speed_cells(t), f(t["connections"]),
                     f"{_v_stalls(t)} of {len(t['runs'])}", ", ".join(f(w, 0) for w in t["walls_s"]),
                     f(t["wrong_checksums"]), f(t["failed"])])
    t3 = (f"### Tile server, {res['threads']} threads, {res['requests_per_run']} windows per run\n\n"
          f"A run may take up to {_watchdog(res)} s (past nghttpx's 180 s idle timeout, so a "
          f"stall shows as what it costs); h2 runs {res['stall_reps']} times per contender, "
          f"HTTP/1.1 once. {_rule_words(res)}.\n\n" +
          table(["protocol", "contender", "windows/s", *_speed_heads(res), "conn.",
                 "runs stalled",
                 "each run's wall s", "wrong checksums", "failed"], rows))
    return "\n\n".join([intro, t1, t2, t3, _stall_words(res)])


def _v_stalls(t):
    """Scenario 9's stalled runs of a cell (older results: 'slow_runs', by a fixed bound)."""
    return t["stalls"] if "stalls" in t else t["slow_runs"]


def _watchdog(res):
    return res["stall_rule"]["watchdog_s"] if res.get("stall_rule") else res["stall_timeout_s"]


def _stall_words(res):
    """The stall question, in words, from the numbers of scenario 9."""
    said = []
    for t in res["tiles"]:
        if t["protocol"] != "h2" or res["contenders"][t["contender"]]["kind"] == "vsitune":
            continue
        times = (", ".join(f"{f(w, 0)} s" for w in t["stall_walls_s"]) if "stall_walls_s" in t
                 else f"longest {f(max(t['walls_s'] or [0]), 0)} s")
        said.append(f"{_vname(res, t['contender'])}: {_v_stalls(t)} of {len(t['runs'])} h2 runs "
                    f"stalled" + (f" ({times})" if _v_stalls(t) or "stall_walls_s" not in t else ""))
    return ("**The 180 s HTTP/2 stall** (stock GDAL multiplexing 16 threads over one h2 "
            "connection): " + "; ".join(said) + ".")


# -- plots ---------------------------------------------------------------------------
def plot_cold(plt, res, path, title):
    cells = res["cells"]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.26
    for i, c in enumerate(CONTENDERS):
        xs = [j + (i - 1) * width for j in range(len(cells))]
        ys = [_ms(cell["contenders"][c]["wall_s"]) or 0 for cell in cells]
        ax.bar(xs, ys, width, label=SHORT[c], color=COLORS[c])
    for j, cell in enumerate(cells):
        if cell["floor_s"]:
            ax.hlines(cell["floor_s"] * 1000, j - 1.5 * width, j + 1.5 * width, colors="k",
                      linestyles="dashed", label="floor" if j == 0 else None)
    ax.set_xticks(range(len(cells)))
    ax.set_xticklabels([f"RTT {c['rtt_ms']} ms\n{PROTO[c['protocol']]}" for c in cells])
    ax.set_ylabel("wall time of the process, ms")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_tiles(plt, res, path):
    keys = sorted({(c["rtt_ms"], c["protocol"]) for c in res["cells"]})
    fig, axes = plt.subplots(1, len(keys), figsize=(3.2 * len(keys), 3.2), squeeze=False)
    for ax, (rtt, ep) in zip(axes[0], keys):
        cells = [c for c in res["cells"] if c["rtt_ms"] == rtt and c["protocol"] == ep]
        for c in CONTENDERS:
            pts = [(cell["threads"], cell["contenders"][c]["windows_per_s"]) for cell in cells]
            pts = [(t, v) for t, v in pts if v is not None]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", color=COLORS[c],
                        label=SHORT[c])
        ax.set_xscale("log", base=2)
        ax.set_xticks([c["threads"] for c in cells])
        ax.set_xticklabels([str(c["threads"]) for c in cells])
        ax.set_title(f"RTT {rtt} ms, {PROTO[ep]}", fontsize=9)
        ax.set_xlabel("threads")
        ax.set_ylim(bottom=0)
    axes[0][0].set_ylabel("windows/s")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_pool(plt, res, path):
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for s in res["series"].values():
        pts = [(p["workers"], p["windows_per_s"]) for p in s["points"] if p["windows_per_s"]]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts],
                    "o-" if s["executor"] == "process" else "s--", color=COLORS[s["contender"]],
                    label=f"{s['executor']} / {SHORT[s['contender']]}")
    ax.axvline(res.get("cpus") or 2, color="k", lw=0.8, ls=":", label="CPUs")
    ax.set_xlabel("workers")
    ax.set_ylabel("windows/s")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_soak(plt, res, path):
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    cells = res["cells"]
    width = 0.26
    for i, c in enumerate(CONTENDERS):
        xs = [j + (i - 1) * width for j in range(len(cells))]
        before = [cell["contenders"][c]["rss_before_mb"] or 0 for cell in cells]
        growth = [cell["contenders"][c]["growth_mb"] or 0 for cell in cells]
        ax.bar(xs, before, width, color=COLORS[c], alpha=0.45)
        ax.bar(xs, growth, width, bottom=before, color=COLORS[c], label=f"{SHORT[c]} (growth on top)")
    ax.set_xticks(range(len(cells)))
    ax.set_xticklabels([f"MALLOC_ARENA_MAX={c['malloc_arena_max']}" for c in cells])
    ax.set_ylabel("RSS, MB (before + growth)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _tuned_line(meta):
    env = ", ".join(f"`{k}={v}`" for k, v in meta["tuned_env"].items())
    if not meta.get("tuned_source"):
        return f"- **stock tuned**: stock GDAL with seed 001's variables: {env};\n"
    return (f"- **{SHORT['tuned']}**: stock GDAL with TiTiler's recommended environment "
            f"({meta['tuned_source']}): {env}" +
            "".join(f", and `{k}={v}` against the h2 front only (TiTiler: it only has an "
                    "effect where the server speaks HTTP/2)"
                    for k, v in (meta.get("tuned_env_h2") or {}).items()) + ";\n")


def render(results, docs, source="bench/results/results.json"):
    """Write <docs>/performance.md and <docs>/img/*.png from `results` (read from
    the file named `source`, which the page cites); returns the paths written."""
    docs = Path(docs)
    img = docs / "img"
    img.mkdir(parents=True, exist_ok=True)
    plt = _plt()
    written = []
    s = results["scenarios"]
    plots = {"cold_window.png": (lambda p: plot_cold(plt, s["cold_window"], p, "cold window read"),
                                 "cold_window"),
             "gdalinfo_cold.png": (lambda p: plot_cold(plt, s["gdalinfo_cold"], p, "gdalinfo, cold"),
                                   "gdalinfo_cold"),
             "tile_server.png": (lambda p: plot_tiles(plt, s["tile_server"], p), "tile_server"),
             "pool_sweep.png": (lambda p: plot_pool(plt, s["pool_sweep"], p), "pool_sweep"),
             "memory_soak.png": (lambda p: plot_soak(plt, s["memory_soak"], p), "memory_soak")}
    have = set()
    for name, (fn, key) in plots.items():
        if plt is None or key not in s or "error" in s[key]:
            continue
        fn(img / name)
        written.append(img / name)
        have.add(name)

    def im(name):
        return name if name in have else None

    meta = results["meta"]
    _labels(meta)
    parts = [
        "# Performance: vsitune against stock GDAL\n",
        f"Generated by `bench/run.py`{_flags(meta)} on {meta['date']} from "
        f"`{source}`; every number below is a value of that file (each run is "
        "kept there, with the medians and ratios shown here). Do not edit this page by hand: "
        "see [How to regenerate](#how-to-regenerate).\n",
        sec_provenance(results),
        "Contenders, run alternately (A B C A B C ...) against the S3 lab (tests/lab: s3rver behind "
        "a SigV4 verifier, nghttpx TLS fronts, delay proxies for latency):\n\n"
        "- **stock**: stock GDAL 3.6 with its default configuration;\n" +
        _tuned_line(meta) +
        "- **vsitune**: stock GDAL loading the plugin through `GDAL_DRIVER_PATH`, nothing else set.\n",
        "The S3 fixture is one Sentinel-2-like band (uint16, DEFLATE + predictor, 512x512 tiles, "
        "internal overviews) in a prefix with 224 sibling objects, so a LIST costs what it does on "
        "a real bucket of scenes. RTT is set by the lab's delay proxy (one-way delay = RTT / 2). "
        "The machine is shared with other jobs: wall times carry that noise (see the load average); "
        "request and connection counts and instruction counts do not.\n",
        sec_machine(results),
        sec_headline(results),
        sec_headline_versions(results),
        render_users.sec_acceptance(results),
        sec_cold(results, "cold_window", "1. Cold window (seed 001)",
                 "A fresh Python process (osgeo.gdal) opens the COG on /vsis3/ and reads one "
                 "512x512 window (one internal tile); wall = the whole process, start to exit, "
                 "timed from outside. Requests are what the lab's log saw.", im("cold_window.png")),
        sec_cold(results, "gdalinfo_cold", "2. gdalinfo, cold",
                 "`gdalinfo /vsis3/...` in a fresh process, same grid.", im("gdalinfo_cold.png")),
        sec_tiles(results, im("tile_server.png")),
        sec_pool(results, im("pool_sweep.png")),
        sec_soak(results, im("memory_soak.png")),
        sec_cpu(results),
        sec_tunerd(results),
        sec_load(results),
        sec_versions(results),
        render_shared.sec_dask(results),
        render_shared.sec_tile_workers(results),
        render_shared.sec_pool5(results),
        render_shared.sec_sidecars(results),
        render_users.sec_many(results),
        render_users.sec_mosaic(results),
        render_users.sec_overview(results),
        render_reach.sec_reach(results),
        sec_regenerate(results),
    ]
    if plt is None:
        parts.append("_Plots not drawn: python3-matplotlib is not installed._")
    out = docs / "performance.md"
    out.write_text("\n\n".join(p.strip() for p in parts if p) + "\n")
    written.insert(0, out)
    return written


def main(argv):
    if len(argv) != 3:
        print("usage: render.py RESULTS.json DOCS_DIR", file=sys.stderr)
        return 2
    repo = Path(__file__).resolve().parents[1]
    published = repo / "bench" / "results" / "results.json"
    if Path(argv[2]).resolve() == repo / "docs" and Path(argv[1]).resolve() != published:
        print(f"render: docs/ shows the published results only ({published}); render "
              "another results file into a scratch folder", file=sys.stderr)
        return 2
    try:
        results = json.loads(Path(argv[1]).read_text())
    except (OSError, ValueError) as e:
        print(f"render: cannot read {argv[1]}: {e}", file=sys.stderr)
        return 2
    for p in render(results, argv[2], source=argv[1]):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
