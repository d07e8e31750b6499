"""scen_mosaic.py: scenario 15, STAC-mosaic tiles (issue 22).

A tile server's mosaic: a VRT over a 5x5 grid of adjacent web-mercator COGs (made
from the fixture by bench/probes/make_cogs.py mosaic, uploaded to the lab), opened
per tile; the 16 zoom-10 XYZ tiles inside the grid need 4 COGs each and its zoom-9
tile 9 (bench/probes/mosaic.py, 4 threads). Every contender on every GDAL of the
run, runs alternated, against the S3-like front at the scenario's RTT: tiles/s,
requests and bytes per tile, connections, peak RSS. Every run's checksum is
compared with the same tiles read from the local COGs.

Two layouts of the same COGs, runs alternated: all in one directory ("cells"), and
as a STAC catalog keeps them, each in an item directory of its own under the same
asset name (mosaic-stac/<item>/B04.tif: "stac_cells"), where nothing learned about a
directory carries over to the next source.
"""

from pathlib import Path

import common
import scen_versions
import stalls
from common import PROBES, PYTHON, median, ratio

KINDS = scen_versions.KINDS
KEY = "mosaic/"
STAC_KEY = "mosaic-stac/"
ASSET = "B04.tif"
LAYOUTS = ("cells", "stac_cells")


def _stac_key(name):
    """m_1_2.tif -> mosaic-stac/m_1_2/B04.tif"""
    return f"{STAC_KEY}{name.rsplit('.', 1)[0]}/{ASSET}"


def _prepare(ctx):
    """Make (cached) and upload the grid in both layouts; write a VRT naming the
    lab's objects for each. Returns (local VRT, {layout: remote VRT}, what
    make_cogs printed)."""
    p = ctx.p
    d = Path(ctx.build_dir) / "bench" / f"mosaic-{p['mosaic_cog_px']}"
    made = common.run_child([PYTHON, PROBES / "make_cogs.py", "mosaic", d, ctx.local_path,
                             p["mosaic_cog_px"]], common.lab_client.gdal_env({}),
                            timeout=p["watchdog_s"])
    if not made.ok:
        raise RuntimeError(f"making the mosaic COGs failed: {made.error()}")
    names = made.result["names"]
    for name in names:
        ctx.lab.put_object("lab", KEY + name, str(d / name))
        ctx.lab.put_object("lab", _stac_key(name), str(d / name))
    local = d / "local.vrt"
    text = local.read_text().replace('<SourceFilename relativeToVRT="1">',
                                     f'<SourceFilename relativeToVRT="0">/vsis3/lab/{KEY}')
    if text.count("/vsis3/") != len(names):
        raise RuntimeError("the VRT's sources are not where make_cogs.py put them")
    stac = text
    for name in names:
        stac = stac.replace(f"/vsis3/lab/{KEY}{name}<", f"/vsis3/lab/{_stac_key(name)}<")
    if stac.count(f"/{ASSET}<") != len(names):
        raise RuntimeError("the STAC layout's VRT does not name every source")
    remote = {"cells": d / "remote.vrt", "stac_cells": d / "remote_stac.vrt"}
    remote["cells"].write_text(text)
    remote["stac_cells"].write_text(stac)
    return local, remote, made.result


def _cells(gs, runs, ntiles):
    """One layout's cells: per GDAL, every contender's medians and vsitune over
    tuned stock."""
    cells = []
    for g in gs:
        row = {"gdal": g.name, "version": g.version, "contenders": {}}
        for k in KINDS:
            ok, base = scen_versions.cell_runs(runs[(g.name, k)])
            row["contenders"][k] = {
                **base,
                "tiles_per_s": median([r["result"]["tiles_per_s"] for r in ok]),
                "requests_per_tile": median([r["requests"]["total"] / ntiles for r in ok]),
                "lists": median([r["requests"].get("LIST", 0) for r in ok]),
                "bytes_per_tile": median([r["requests"]["bytes"] / ntiles for r in ok]),
                "connections": median([r["connections"] for r in ok]),
                "in_flight_mean": median([(r.get("in_flight") or {}).get("mean") for r in ok]),
                "in_flight_most": median([(r.get("in_flight") or {}).get("most") for r in ok]),
                "peak_rss_mb": median([r["result"]["vmhwm_kb"] / 1024 for r in ok]),
            }
        v, tu = row["contenders"]["vsitune"], row["contenders"]["tuned"]
        row["vsitune_vs_tuned"] = {
            "tiles_per_s": ratio(v["tiles_per_s"], tu["tiles_per_s"]),
            "requests_per_tile": ratio(v["requests_per_tile"], tu["requests_per_tile"]),
            "bytes_per_tile": ratio(v["bytes_per_tile"], tu["bytes_per_tile"])}
        cells.append(row)
    return cells


def mosaic_tiles(ctx):
    p, prog = ctx.p, ctx.progress
    ep, rtt, c, thr = p["users_protocol"], p["users_rtt_ms"], p["mosaic_cog_px"], p["mosaic_threads"]
    gs = scen_versions.gdals(ctx)
    local, remote, made = _prepare(ctx)
    ref = common.run_child([PYTHON, PROBES / "mosaic.py", local, c, "--threads", thr],
                           common.lab_client.gdal_env({}), timeout=p["watchdog_s"])
    if not ref.ok:
        raise RuntimeError(f"reference mosaic run failed: {ref.error()}")
    want = ref.result["checksum"]
    ntiles = ref.result["tiles"]
    prog.start("15 mosaic tiles", p["mosaic_reps"] * len(LAYOUTS) * len(gs) * len(KINDS))
    runs = {lay: {} for lay in LAYOUTS}
    for rep in range(p["mosaic_reps"]):
        for lay in LAYOUTS:
            for g in gs:
                for k in KINDS:
                    run = scen_versions.measure(ctx, g, k, ep, rtt,
                                                [PYTHON, PROBES / "mosaic.py", remote[lay], c,
                                                 "--threads", thr], binds=[remote[lay].parent])
                    run["rep"] = rep
                    run["checksum_ok"] = (run["result"] or {}).get("checksum") == want \
                        if run["ok"] else None
                    runs[lay].setdefault((g.name, k), []).append(run)
                    prog.step(f"{lay} {k}@{g.name}: " +
                              (f"{run['result']['tiles_per_s']:.1f} tiles/s, "
                               f"{run['requests']['total']} req" if run["ok"] else
                               (run["error"] or "")[:80]))
    return {"cogs": made["cogs"], "cog_px": c, "cog_bytes": made["bytes"], "zoom": made["zoom"],
            "tiles_per_run": ntiles, "tiles_4_cogs": ref.result["tiles_4_cogs"],
            "tiles_9_cogs": ref.result["tiles_9_cogs"], "threads": thr, "protocol": ep,
            "rtt_ms": rtt, "reps": p["mosaic_reps"], "expected_checksum": want,
            "stall_rule": stalls.rule(p["watchdog_s"]), "asset": ASSET,
            **{lay: _cells(gs, runs[lay], ntiles) for lay in LAYOUTS}}
