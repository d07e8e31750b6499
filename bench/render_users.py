"""render_users.py: the performance page's sections for scenarios 14-16 (issue 22).

Pure: results dict in, Markdown out. Every number is a value of the results file
(medians and ratios were computed by bench/scen_many.py, scen_mosaic.py and
scen_overview.py when it was written).
"""

from render_cells import _section, f, table, x
from render_shared import tile_rows

KINDS = ("stock", "tuned", "vsitune")
SHORT = {"stock": "stock", "tuned": "stock, TiTiler env", "vsitune": "vsitune"}
PROTO = {"h1": "HTTP/1.1", "h2": "h2 (TLS)", "h1tls": "HTTPS with HTTP/1.1 only (S3-like)"}


def _ms(v):
    return None if v is None else v * 1000


def _who(cell, k):
    return f"{SHORT[k]} ({cell.get('version') or cell['gdal']})"


def _bad(v):
    """'0' or what went wrong in a contender's cell: failures, stalls, wrong bytes."""
    parts = [f"{v['failed']} failed"] if v.get("failed") else []
    if v.get("stalls"):
        parts.append(f"{v['stalls']} stalled ({', '.join(f(w, 0) for w in v['stall_walls_s'])} s)")
    if v.get("wrong_checksums"):
        parts.append(f"{v['wrong_checksums']} wrong")
    if v.get("same_as_stock") is False:
        parts.append("read other than stock")
    return "; ".join(parts) or "0"


def _where(res):
    return (f"{PROTO.get(res['protocol'], res['protocol'])}, RTT {res['rtt_ms']} ms, "
            f"{res['reps']} run(s) per cell, contenders alternated, medians")


def _threads(res):
    ts = sorted({c["threads"] for c in res["cells"]})
    return ", ".join(str(t) for t in ts[:-1]) + (" and " if len(ts) > 1 else "") + str(ts[-1])


def sec_many(r):
    res, why = _section(r, "many_opens", "14. Many-object opens")
    if res is None:
        return why
    fl = res["floor"]
    rows, ratios = [], []
    for cell in res["cells"]:
        for k in KINDS:
            v = cell["contenders"][k]
            rows.append([cell["threads"], _who(cell, k), f(v["opens_per_s"], 1),
                         f(_ms(v["wall_per_open_s"]), 1), x(v["wall_per_open_over_floor"]),
                         f(_ms(v["cpu_per_open_s"]), 2),
                         f"{f(v['requests_per_open'], 2)} ({f(v['lists'])} LIST)",
                         f(v["bytes_per_open"]), f(v["connections"]), f(v["peak_rss_mb"]),
                         _bad(v)])
        q = cell["vsitune_vs_tuned"]
        ratios.append([cell["version"] or cell["gdal"], cell["threads"], x(q["opens_per_s"]),
                       x(q["cpu_per_open"]), x(q["requests_per_open"]), x(q["peak_rss"])])
    return (
        "## 14. Many-object opens\n\n"
        f"{res['objects']} distinct objects (copies, under distinct keys, of one "
        f"{f(res['object_bytes'])}-byte COG with the s2 fixture's layout: 10980x10980, 512x512 "
        f"tiles, 5 overview levels, a sparse body; its header is {f(res['header_bytes'])} bytes), "
        "each opened once and read as gdalinfo reads it without its coordinate transforms "
        "(size, georeferencing, band, overviews, metadata: bench/probes/many_open.py), from "
        f"{_threads(res)} threads; {_where(res)}. Opens/s and wall per open: the opening phase only "
        "(after imports); CPU per open: the process's user + system time over that phase. "
        "**Floor**: one plain libcurl ranged GET of the header's bytes per object, every GET "
        "after the first on the first one's connection, one thread (bench/probes/floor_get.c, "
        f"{(fl.get('curl') or 'libcurl').split(' zlib')[0]}"
        + ("; signed with SigV4 as the contenders' GETs are, so the lab checks a signature for "
           "each as it does for theirs" if fl.get("signed") else "; anonymous GETs of public copies")
        + f"): {f(_ms(fl['per_get_s']), 1)} ms per GET, "
        f"{f(fl['requests_per_get'], 2)} request(s) per object, {f(fl['connections'])} "
        "connection(s)" +
        (f" (the same GETs anonymous, of copies under the public bucket, which the lab answers "
         f"without a signature to check: {f(_ms(fl['anonymous_per_get_s']), 1)} ms)"
         if fl.get("anonymous_per_get_s") else "") +
        ". × floor: 1-thread wall per open over it. Every vsitune open read what "
        "stock GDAL of its release read (digest of what the probe read) unless the last column "
        "says otherwise.\n\n" +
        table(["threads", "contender", "opens/s", "wall/open ms", "× floor", "CPU/open ms",
               "requests/open", "bytes/open", "conn.", "peak RSS MB", "failed / stalls"], rows) +
        _alone_text(res) + _handler_text(res) +
        "\n\nvsitune over stock GDAL with TiTiler's environment, same GDAL, same run "
        "(opens/s: > 1 is faster; CPU, requests, RSS: < 1 is less):\n\n" +
        table(["GDAL", "threads", "opens/s", "CPU per open", "requests per open", "peak RSS"],
              ratios))


def _alone_text(res):
    """GDAL's own CPU per open (the local file, 1 thread) beside tuned stock's."""
    parts = []
    for cell in res["cells"]:
        a = cell.get("gdal_alone")
        if cell["threads"] != 1 or not a or a.get("cpu_per_open_s") is None:
            continue
        tu = cell["contenders"]["tuned"]["cpu_per_open_s"]
        parts.append(f"{cell['version'] or cell['gdal']} {f(_ms(a['cpu_per_open_s']), 2)} ms "
                     f"({x(a['over_tuned'])} tuned stock's {f(_ms(tu), 2)} ms)")
    if not parts:
        return ""
    text = ("\n\n**GDAL alone**: the same probe opening the same COG from a local file, one "
            "thread, no network and no plugin, spends in CPU per open " + "; ".join(parts) +
            ". No VSI handler takes that part (GDAL's, libtiff's, PROJ's) away; over the network "
            "every contender adds the request's own work (TLS, curl, signing, for vsitune its "
            "I/O thread) and runs the same GDAL work after each wait, with the lab's servers "
            "sharing this machine's cores.")
    idle, fl_cpu = [], (res.get("floor") or {}).get("cpu_per_get_s")
    for cell in res["cells"]:
        i = (cell.get("gdal_alone") or {}).get("idle")
        if cell["threads"] != 1 or not i or i.get("cpu_per_open_s") is None:
            continue
        least = (f"; with the floor's CPU per GET: {f(_ms(i['plus_floor_cpu_s']), 2)} ms, "
                 f"{x(i['plus_floor_cpu_over_tuned'])} tuned stock's"
                 if i.get("plus_floor_cpu_s") is not None else "")
        idle.append(f"{cell['version'] or cell['gdal']} {f(_ms(i['cpu_per_open_s']), 2)} ms "
                    f"({x(i['over_tuned'])} tuned stock's{least}), an open's own wall "
                    f"{f(_ms(i['open_wall_per_open_s']), 2)} ms "
                    f"(floor + that: {x(i['floor_plus_open_over_floor'])} the floor)")
    if idle:
        text += (f" **GDAL alone after a wait**: the same, sleeping {f(res['rtt_ms'])} ms (the "
                 "RTT) before each open as a thread waiting on the network does, no network "
                 "still: " + "; ".join(idle) + ". That is GDAL's share of a single thread's CPU "
                 "per open over the network on this machine, and the floor plus that open's wall "
                 "is a single thread's wall per open with no handler cost at all." +
                 (f" The floor's own CPU, {f(_ms(fl_cpu) * 1000)} µs per GET on its open "
                  "connection (libcurl, OpenSSL, signing, the kernel's socket work: "
                  "floor_get's user + system time after its first GET), added to GDAL's after "
                  "a wait is the least CPU per open a single thread can spend over this "
                  "endpoint, whatever reads for GDAL " + _own_floors(res) + "."
                  if fl_cpu is not None else ""))
    return text


def _own_floors(res):
    """How the floor's CPU per GET was had for each GDAL: this machine's libcurl for all
    (runs before floor_own), or floor_get built and run inside each root."""
    own = [(c["version"] or c["gdal"], c["floor_own"]) for c in res["cells"]
           if c["threads"] == 1 and c.get("floor_own")]
    if not own:
        return ("(floor_get is built and run on this machine's own libcurl for every GDAL; a "
                "root's libcurl may cost another amount)")
    return ("(floor_get built and run on each GDAL's own libcurl, a root's inside the root: " +
            "; ".join(f"{gv} {f(_ms(o['cpu_per_get_s']) * 1000)} µs, "
                      f"{(o.get('curl') or 'libcurl').split(' ')[0]}" for gv, o in own) + ")")


def _handler_text(res):
    """Each contender's VSI handler alone (no dataset), 1 thread, beside the floor."""
    rows = []
    for cell in res["cells"]:
        h = cell.get("handler_alone")
        if cell["threads"] != 1 or not h:
            continue
        own = cell.get("floor_own") or {}
        for k in KINDS:
            v = h[k]
            rows.append([cell["version"] or cell["gdal"], _who(cell, k),
                         f(_ms(v["cpu_per_object_s"]), 2), x(v["cpu_over_floor"]),
                         f(_ms(v["wall_per_object_s"]), 1), f(v["requests_per_object"], 2),
                         "yes" if v["same_as_stock"] else "**no**",
                         f"{v['failed']} of {v['runs']}"])
        rows.append([cell["version"] or cell["gdal"], "floor (one plain libcurl GET)",
                     f(_ms(own.get("cpu_per_get_s")), 2), "1.00×",
                     f(_ms(own.get("per_get_s")), 1), "1", "–", f"{own.get('failed')} of "
                     f"{own.get('runs')}"])
    if not rows:
        return ""
    return ("\n\n**Each handler alone**: the same objects, one thread, through each "
            "contender's VSI handler without a dataset (many_open.py --read-only: VSIFOpenL, "
            f"one VSIFReadL of the header's {f(res['header_bytes'])} bytes, VSIFCloseL, from "
            "Python), beside the floor built on the same GDAL's libcurl: what a handler itself "
            "spends per object (the request, TLS, signing, for vsitune the hand-off to its I/O "
            "thread), without GDAL's driver work. Same bytes: every object read the bytes it "
            "read through stock GDAL.\n\n" +
            table(["GDAL", "contender", "CPU/object ms", "× floor's CPU", "wall/object ms",
                   "requests/object", "same bytes", "failed"], rows))


def _flight(v):
    if v.get("in_flight_mean") is None:
        return "–"
    return f"{f(v['in_flight_mean'], 2)} / {f(v['in_flight_most'])}"


def _mosaic_tables(cells):
    """A layout's cells as the per-contender table and vsitune over tuned stock."""
    rows, ratios = [], []
    for cell in cells:
        for k in KINDS:
            v = cell["contenders"][k]
            rows.append([_who(cell, k), f(v["tiles_per_s"], 1), f(v["requests_per_tile"], 2),
                         f(v["lists"]), f(v["bytes_per_tile"]), f(v["connections"]),
                         _flight(v), f(v["peak_rss_mb"]), _bad(v)])
        q = cell["vsitune_vs_tuned"]
        ratios.append([cell["version"] or cell["gdal"], x(q["tiles_per_s"]),
                       x(q["requests_per_tile"]), x(q["bytes_per_tile"])])
    return (table(["contender", "tiles/s", "requests/tile", "LIST", "bytes/tile", "conn.",
                   "in flight: mean / most", "peak RSS MB", "failed / stalls"], rows) +
            "\n\nvsitune over stock GDAL with TiTiler's environment, same GDAL, same run:\n\n" +
            table(["GDAL", "tiles/s", "requests per tile", "bytes per tile"], ratios))


def sec_mosaic(r):
    res, why = _section(r, "mosaic_tiles", "15. STAC mosaic tiles")
    if res is None:
        return why
    text = (
        "## 15. STAC mosaic tiles\n\n"
        f"A VRT over a 5x5 grid of adjacent web-mercator COGs ({res['cog_px']}x{res['cog_px']} "
        f"each, {f(res['cog_bytes'])} bytes in all, shifted by half a COG from the XYZ grid as "
        f"real scenes are), opened per tile as a tile server does; {res['tiles_per_run']} "
        f"256x256 XYZ tiles per run: {res['tiles_4_cogs']} at zoom {res['zoom']} needing 4 COGs "
        f"each and {res['tiles_9_cogs']} at zoom {res['zoom'] - 1} needing 9 "
        f"(bench/probes/mosaic.py), {res['threads']} threads; {_where(res)}. Every run's tiles "
        "are compared with the same tiles of the local COGs. In flight: how many of a run's "
        "requests were in flight at once, from the lab's log (each from its arrival less the "
        "one-way delay to its last byte plus it): their mean over the time any was, and the "
        "most.\n\n"
        "**All COGs in one directory** (`mosaic/m_<row>_<col>.tif`):\n\n" +
        _mosaic_tables(res["cells"]))
    if res.get("stac_cells"):
        text += (
            "\n\n**Each COG in an item directory of its own, under one asset name**, as a STAC "
            f"catalog keeps them (`mosaic-stac/m_<row>_<col>/{res['asset']}`; the same bytes, "
            "runs alternated with the table above). Nothing learned about one directory applies "
            "to the next source's; vsitune asks what the same file name taught in the bucket's "
            "other directories (docs/architecture.md, \"Further when the data is near\"):\n\n" +
            _mosaic_tables(res["stac_cells"]))
    return text


def sec_overview(r):
    res, why = _section(r, "overview_reads", "16. Overview reads")
    if res is None:
        return why
    rows = []
    for cell in res["cells"]:
        lv = cell["level"]
        for k in KINDS:
            v = cell["contenders"][k]
            rows.append([f"{cell['fraction'] * 100:g}% ({cell['buf'][0]} px)",
                         f"{lv['width']} px, {f(lv['bytes'])}", _who(cell, k), f(v["bytes"]),
                         x(v["bytes_vs_stock"]), x(v["bytes_vs_level"]),
                         f"{f(v['requests'])} ({f(v['lists'])} LIST)",
                         f(_ms(v["open_read_s"])), x(v["time_vs_stock"]), _bad(v)])
    return (
        "## 16. Overview reads\n\n"
        "A fresh process opens the fixture COG and reads the whole band into a buffer of 50, 25 "
        "and 12.5% of its size (nearest; GDAL serves it from the overview level listed, whose "
        f"tiles are the bytes the read needs: bench/probes/overview_read.py); {_where(res)}. "
        "Bytes: what the lab sent. Open + read: timed inside the process.\n\n" +
        table(["read", "level read (its bytes)", "contender", "bytes", "× stock", "× level",
               "requests", "open + read ms", "time × stock", "failed / stalls"], rows))


def _ratio(a, b):
    return a / b if a is not None and b else None


def _met(v, lo=None, hi=None):
    if v is None:
        return "–"
    return "yes" if (lo is None or v >= lo) and (hi is None or v <= hi) else "**no**"


def _handler_brief(cell):
    """'; the handler alone: ...' for an acceptance row (empty before handler_alone)."""
    h, own = cell.get("handler_alone"), cell.get("floor_own") or {}
    if not h:
        return ""
    return (f"; CPU per object of the handler alone: vsitune "
            f"{f(_ms(h['vsitune']['cpu_per_object_s']), 2)} ms, tuned stock "
            f"{f(_ms(h['tuned']['cpu_per_object_s']), 2)}, the floor "
            f"{f(_ms(own.get('cpu_per_get_s')), 2)}")


def _acc_many(s, rows):
    for cell in (s.get("many_opens") or {}).get("cells", []):
        gv, t = cell["version"] or cell["gdal"], cell["threads"]
        v, q = cell["contenders"]["vsitune"], cell["vsitune_vs_tuned"]
        idle = ((cell.get("gdal_alone") or {}).get("idle") or {}) if t == 1 else {}
        if t == 1:
            wall_least = idle.get("floor_plus_open_over_floor")
            rows.append([f"many-object opens, {gv}: requests per open", "1",
                         f(v["requests_per_open"], 2), _met(v["requests_per_open"], hi=1)])
            rows.append([f"many-object opens, {gv}, 1 thread: wall per open / floor", "≤ 1.1×",
                         x(v["wall_per_open_over_floor"]) +
                         (f" (with no handler cost at all: {x(wall_least)}, the floor + GDAL's "
                          "open after a wait)" if wall_least is not None else ""),
                         _met(v["wall_per_open_over_floor"], hi=1.1)])
        least = idle.get("plus_floor_cpu_over_tuned")
        rows.append([f"many-object opens, {gv}, {t} thread{'s' if t > 1 else ''}: CPU per open / "
                     "tuned stock's",
                     "≤ 0.8×", x(q["cpu_per_open"]) +
                     (f" (the least over this endpoint: {x(least)}, GDAL after a wait + the "
                      "floor's CPU per GET, " + ("its own libcurl" if cell.get("floor_own") else
                                                "the host's libcurl") + _handler_brief(cell) +
                      ")" if least is not None else ""),
                     _met(q["cpu_per_open"], hi=0.8)])
        if t > 1:
            rows.append([f"many-object opens, {gv}, {t} threads: opens/s / tuned stock's",
                         "≥ 1×", x(q["opens_per_s"]), _met(q["opens_per_s"], lo=1)])


def _acc_mosaic(s, rows):
    res = s.get("mosaic_tiles") or {}
    for key, what in (("cells", "mosaic tiles"), ("stac_cells", "mosaic tiles, STAC layout")):
        for cell in res.get(key, []):
            q = cell["vsitune_vs_tuned"]
            gv = cell["version"] or cell["gdal"]
            rows.append([f"{what}, {gv}: tiles/s / tuned stock's", "≥ 1.3×",
                         x(q["tiles_per_s"]), _met(q["tiles_per_s"], lo=1.3)])
            rows.append([f"{what}, {gv}: requests per tile / tuned stock's", "< 1×",
                         x(q["requests_per_tile"]),
                         _met(q["requests_per_tile"], hi=0.999)
                         if q["requests_per_tile"] else "–"])


def _acc_cold(s, rows):
    for cell in (s.get("cold_window") or {}).get("cells", []):
        if cell["protocol"] == "h1tls" and cell["rtt_ms"] == 20:
            v = cell["contenders"]["vsitune"]["over_floor"]
            arith = cell["contenders"]["vsitune"].get("over_rtt_floor")
            rows.append(["cold window, HTTPS HTTP/1.1, 20 ms: wall / floor (the local process "
                         "+ a plain libcurl connect and GETs of the bytes needed, section 1)",
                         "≤ 1.2×", x(v) + (f" ({x(arith)} of the round-trips-only floor)"
                                          if arith else ""), _met(v, hi=1.2)])


def _acc_workers(s, rows):
    """Scenario 11's rows compared by the numbers its section shows: the median of
    each variant's reps (render_shared.tile_rows), or the one run of an older file."""
    res = s.get("tile_workers") or {}
    w = res.get("workers")
    pick = {v["contender"]: nums for v, nums in (tile_rows(res) if res else [])
            if v["workers"] == w and not v.get("extra") and nums is not None
            and (v.get("ok") or "median" in v)}
    n = f" (median of {res['reps']} runs each)" if res.get("reps", 1) > 1 else ""
    if "shared" in pick and "vsitune" in pick:
        q = _ratio(pick["shared"]["tiles_per_s"], pick["vsitune"]["tiles_per_s"])
        rows.append([f"uvicorn, {w} workers: shared cache tiles/s / per-process caches'{n}",
                     "≥ 1×", x(q), _met(q, lo=1)])
    for c in ("shared", "vsitune"):
        if c in pick and "stock" in pick and pick[c].get("pss") and pick["stock"].get("pss"):
            q = _ratio(pick[c]["pss"]["pss"], pick["stock"]["pss"]["pss"])
            rows.append([f"uvicorn, {w} workers: PSS of all workers, "
                         f"{'shared' if c == 'shared' else 'per-process'} cache / stock's{n}",
                         "≤ 1×", x(q), _met(q, hi=1)])


def _acc_overview(s, rows):
    for cell in (s.get("overview_reads") or {}).get("cells", []):
        v = cell["contenders"]["vsitune"]["bytes_vs_stock"]
        rows.append([f"overview read {cell['fraction'] * 100:g}%, {cell['version'] or cell['gdal']}:"
                     " bytes / stock's", "≤ 1.1×", x(v), _met(v, hi=1.1)])


def _acc_rss(s, rows):
    for cell in (s.get("tile_server") or {}).get("cells", []):
        if cell["threads"] == 16 and cell["protocol"] in ("h1", "h1tls"):
            cs = cell["contenders"]
            q = _ratio(cs["vsitune"]["peak_rss_mb"], cs["stock"]["peak_rss_mb"])
            rows.append([f"peak RSS, 16 threads, {PROTO[cell['protocol']]}, RTT {cell['rtt_ms']} ms, "
                         "default settings / stock's", "≤ 1×", x(q), _met(q, hi=1)])


def _acc_stalls(s, rows):
    n, shown = 0, 0
    for key in ("tile_server", "gdal_versions"):
        res = s.get(key) or {}
        for cell in res.get("cells", []):
            for c in ("stock", "tuned"):
                n += cell["contenders"][c].get("stalls") or 0
        for t in res.get("tiles", []):
            if res["contenders"][t["contender"]]["kind"] != "vsitune":
                n += t.get("stalls") or 0
    if s.get("tile_server") or s.get("gdal_versions"):
        rows.append(["stock GDAL stalls in this run (sections 3 and 9, each shown with its time)",
                     "shown", str(n), "yes"])


def sec_acceptance(r):
    """Issue 22's acceptance items, each as this run measured it (ratios computed
    when the results were written, or here from two of its values)."""
    s = {k: v for k, v in r["scenarios"].items() if "error" not in v and "skipped" not in v}
    if not any(k in s for k in ("many_opens", "mosaic_tiles", "overview_reads")):
        return ""  # results from before issue 22's workloads
    rows = []
    for fn in (_acc_many, _acc_mosaic, _acc_cold, _acc_workers, _acc_overview, _acc_rss,
               _acc_stalls):
        fn(s, rows)
    return ("### Issue 22's acceptance, as this run measured it\n\n"
            "Each target of issue 22 beside the value of this run (vsitune against stock GDAL "
            "with TiTiler's environment where the issue says tuned, against default stock GDAL "
            "otherwise; details in the sections below).\n\n" +
            table(["measure", "target", "this run", "met"], rows))
