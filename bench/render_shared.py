"""render_shared.py: the performance page's sections for scenarios 10-13.

Pure: results dict in, Markdown out. Every number is a value of the results file.
"""

from parity_requests import cell  # '7 (1 LIST, 6 GET)', as that script prints it
from render_cells import _section, f, table


def _mib(v):
    return None if v is None else v / (1 << 20)


def _pss(p):
    return f(_mib(p["pss"]), 0, " MiB") if p else "–"


def _shm(p):
    """The shared segment's pages in the workers' PSS, and in /dev/shm."""
    if not p or p.get("segment_bytes") is None:
        return "–"
    return f"{f(_mib(p['pss_shmem']), 0)} / {f(_mib(p['segment_bytes']), 0)} MiB"


def _label(res, r):
    return res["labels"].get(r["contender"], r["contender"])


def sec_dask(r):
    res, why = _section(r, "dask_twice", "10. Dask: the same region twice, 4 worker processes")
    if res is None:
        return why
    rows = []
    for run in res["runs"]:
        name = _label(res, run)
        budget = run["extra"].get("VSITUNE_SHARED_CACHE_SIZE")
        if budget:
            name += f", {f(_mib(int(budget)), 0)} MiB ({run['budget']})"
        if not run["ok"]:
            rows.append([name, "failed: " + run.get("error", "")[:120]] + [""] * 8)
            continue
        rows.append([name, run["pass1"]["get"], run["pass2"]["get"],
                     f(run["pass2_gets_pct_of_pass1"], 1, "%"),
                     f(_mib(run["pass1"]["bytes"]), 1), f(_mib(run["pass2"]["bytes"]), 1),
                     f"{f(run['pass1_wall_s'], 1)} / {f(run['pass2_wall_s'], 1)}",
                     _pss(run["pss_after_pass2"]), _shm(run["pss_after_pass2"]),
                     run.get("wrong_chunks", "–")])
    return (f"## 10. Dask: the same region twice, {res['workers']} worker processes\n\n"
            f"A `dask.distributed` LocalCluster ({res['workers']} worker processes, one thread "
            f"each) computes the mean of each {res['chunk']}x{res['chunk']} chunk of a "
            f"{res['region']}x{res['region']} region ({f(_mib(res['region_bytes']), 1)} MiB of "
            f"compressed tiles) through rioxarray, then again; {res['rtt_ms']} ms RTT, "
            f"{res['protocol']}. GETs and bytes are the lab's, split between the passes. PSS is "
            "the workers' total after the second pass (a page shared by N processes counts 1/N "
            "in each).\n\n" +
            table(["contender", "pass 1 GETs", "pass 2 GETs", "pass 2 / pass 1", "pass 1 MiB",
                   "pass 2 MiB", "wall s (pass 1 / 2)", "PSS", "segment: in PSS / in /dev/shm",
                   "wrong chunks"], rows))


def _tile_name(res, v):
    name = f"{_label(res, v)}, {v['workers']} worker{'s' if v['workers'] > 1 else ''}"
    if v.get("extra", {}).get("VSITUNE_SHARED_CACHE_SIZE"):
        name += f" ({v['extra']['VSITUNE_SHARED_CACHE_SIZE']}B for the host)"
    return name


def tile_rows(res):
    """Scenario 11's variants as the page shows them: (contender, workers, extra,
    numbers), numbers being the median of the variant's reps in a results file with
    reps (res["variants"]), the one run's own in an older file (one run per
    variant, no reps); None when no rep produced numbers. Also used by
    render_users' acceptance table, so both compare the same values."""
    out = []
    if "variants" in res:
        for v in res["variants"]:
            m = v["median"]
            nums = None if m["tiles_per_s"] is None else {
                "requests": m["requests"], "bytes": m["bytes"], "pss": m["pss"],
                "tiles_per_s": m["tiles_per_s"], "p50_ms": m["p50_ms"], "p99_ms": m["p99_ms"]}
            out.append((v, nums))
        return out
    for run in res["runs"]:
        nums = None if not run["ok"] and run.get("tiles_per_s") is None else {
            "requests": run["requests"]["total"], "bytes": run["requests"]["bytes"],
            "pss": run["pss"], "tiles_per_s": run["tiles_per_s"], "p50_ms": run["p50_ms"],
            "p99_ms": run["p99_ms"]}
        out.append((run, nums))
    return out


def _each(v):
    """Every rep's tiles/s, in run order, and the variant's stalls with their rep and time."""
    each = ", ".join(f(t, 1) if t is not None else "–" for t in v["tiles_per_s_each"])
    st = "; ".join(f"rep {s['rep']}: {s['how']}, {f(s['wall_s'], 0)} s"
                   + (f" (others' median {f(s['peers_median_s'], 0)} s)"
                      if s.get("peers_median_s") is not None else "")
                   for s in v["stall_reps"])
    return each, (st or "0")


def sec_tile_workers(r):
    res, why = _section(r, "tile_workers", "11. Tile server: uvicorn workers")
    if res is None:
        return why
    reps = "variants" in res
    rows = []
    for v, nums in tile_rows(res):
        name = _tile_name(res, v)
        extra = list(_each(v)) if reps else []
        if nums is None:
            err = v.get("first_error") if reps else v.get("error")
            rows.append([name, "failed: " + (err or "")[:120]] + [""] * 7 + extra)
            continue
        rows.append([name, round(nums["requests"]), f(_mib(nums["bytes"]), 1),
                     f(nums["tiles_per_s"], 1), f(nums["p50_ms"], 0), f(nums["p99_ms"], 0),
                     _pss(nums["pss"]), _shm(nums["pss"]),
                     f"{v['errors']} / {v['wrong_tiles']}"] + extra)
    head = ["contender", "S3 requests", "MiB", "tiles/s", "p50 ms", "p99 ms", "PSS",
            "segment: in PSS / in /dev/shm", "errors / wrong"]
    med = ""
    if reps:
        head += ["tiles/s of each run", "stalls"]
        n, rule = res["reps"], res["stall_rule"]
        every = all(v["reps"] == n for v in res["variants"])
        others = "" if every else " (of the one run, for the others)"
        which = ("Every variant" if every else "The rows issue 22 compares (stock, "
                 f"per-process and shared caches at {res['workers']} workers)")
        med = (f"{which} ran {n} times, interleaved (run 1 of every row, then run 2, "
               f"...){'' if every else ', the others once'}; "
               f"each number is the median of {n} runs{others} (of those that finished), "
               "errors / wrong are summed over them, and the last two columns give every "
               "run's tiles/s in run order and the variant's stalls (a run the watchdog, "
               f"{rule['watchdog_s']} s, killed, or one slower than {rule['factor']:g}x the "
               "median wall time of the variant's other runs), each with its time. "
               if n > 1 else
               "Every variant ran once (a run is a stall only if the watchdog, "
               f"{rule['watchdog_s']} s, killed it). ")
    return ("## 11. Tile server: a TiTiler-shaped app under uvicorn\n\n"
            f"A FastAPI app (bench/probes/tile_app.py: open the scene with rasterio, read the "
            f"window a web-map tile covers, resampled to 256x256 from the matching overview) "
            f"under uvicorn serves {res['tiles']} random tiles of {res['scenes']} scenes (the "
            f"same seeded sequence for every row) at concurrency {res['concurrency']}; "
            f"{res['rtt_ms']} ms RTT, {res['protocol']}. " + _spread_note(res) + med +
            "Requests are everything the lab saw; "
            "PSS is the workers' total at the end; the shared segment's pages are counted in "
            "it once (its share of PSS, next to what the segment holds in /dev/shm), where "
            "per-process caches are counted once per worker. The per-process cache's default "
            f"budget is {res.get('cache_default_mb', 64)} MiB per process in this run; the "
            "shared cache has one budget for the whole host, "
            "its default (VT_DEFAULT_SHARED_CACHE_SIZE in common/defaults.h; the segment "
            "column shows it); "
            f"the row with {res.get('one_budget_mb', 64)} MiB gives the host one process's "
            "budget.\n\n" +
            table(head, rows))


def _spread_note(res):
    """How the tiles spread over the workers: each tile on a connection of its own
    (bench/probes/tile_load.py says why), and the busiest worker's share of its run's
    tiles over the runs with res['workers'] workers (empty for results without it)."""
    shares = [max(t.values()) / sum(t.values()) for x in res.get("runs", [])
              if x.get("workers") == res["workers"] and (t := x.get("tiles_per_worker"))]
    if not shares:
        return ""
    return ("Each tile is asked on a connection of its own, as a reverse proxy in front of "
            "uvicorn asks by default, so the kernel spreads the tiles over the workers (over "
            "keep-alive connections one worker could serve nearly all of a run's tiles, and "
            "the total PSS followed that, not the contender); in this run's "
            f"{res['workers']}-worker runs the busiest worker served {min(shares):.0%} to "
            f"{max(shares):.0%} of the tiles ({1 / res['workers']:.0%} is an even spread). ")


def sec_pool5(r):
    res, why = _section(r, "pool_fork5", "12. Seed 000's fork process pool")
    if res is None:
        return why
    rows = []
    for run in res["runs"]:
        if not run["ok"]:
            rows.append([_label(res, run), "failed: " + (run.get("error") or "")[:120]] + [""] * 5)
            continue
        rows.append([_label(res, run), run["requests"]["total"],
                     f(_mib(run["requests"]["bytes"]), 1), f(run["windows_per_s"], 1),
                     _pss(run["pss"]), _shm(run["pss"]), run.get("wrong_windows", "–")])
    failed = (("\n\nA failed run: a read in one of the contender's workers failed (its error "
              "above), as in section 4's process pools, where the likely cause is said "
              "(connections inherited from the parent). One run per contender.")
              if any(not x["ok"] for x in res["runs"]) else "")
    return (f"## 12. Seed 000's process pool: fork, {res['workers']} workers\n\n"
            f"bench/probes/pool.py (seed 000's handler): the parent opens the COG, then a "
            f"ProcessPoolExecutor (fork) of {res['workers']} workers reads every 512x512 window "
            f"({res['windows']}), each task opening the file; {res['rtt_ms']} ms RTT, "
            f"{res['protocol']}. PSS: the parent and its workers at the end.\n\n" +
            table(["contender", "requests", "MiB", "windows/s", "PSS",
                   "segment: in PSS / in /dev/shm", "wrong windows"], rows) + failed)


def sec_sidecars(r):
    res, why = _section(r, "sidecars", "13. The sibling question, per layout")
    if res is None:
        return why
    rows = []
    for name, row in sorted(res["cases"].items()):
        same = "yes" if row["identical"] else (
            "no (by design: a COG's .aux.xml)" if name == "cog_aux" else "**no**")
        rows.append([name, cell(row["stock"]["requests"]), cell(row["vsitune"]["requests"]),
                     same])
    return ("## 13. The sibling question, per layout\n\n"
            f"`{res['command']}` of every raster layout of the differential suite "
            "(tests/integration/parity_fixtures.py), in a fresh process per contender, "
            f"{res['endpoint']}; requests are the lab's. A COG is opened with no LIST (its header "
            "shows it needs no sidecar); any other file gets one LIST scoped to its stem, except "
            "where a driver probes more (EHdr's capitals: a second stem; GDAL 3.6/3.10's GeoTIFF "
            "driver lists the directory itself when the stem holds sidecars; Zarr lists its "
            "directories as stock does). 'Identical': exit status and stdout byte for byte "
            "(docs/compatibility.md).\n\n" +
            table(["layout", "stock GDAL", "vsitune", "identical"], rows))
