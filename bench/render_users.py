"""render_users.py: the performance page's sections for scenarios 14-16 (issue 22).

Pure: results dict in, Markdown out. Every number is a value of the results file
(medians and ratios were computed by bench/scen_many.py, scen_mosaic.py and
scen_overview.py when it was written).
"""

from render_cells import _section, f, table, x

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
        f"{(fl.get('curl') or 'libcurl').split(' zlib')[0]}): {f(_ms(fl['per_get_s']), 1)} ms per GET, "
        f"{f(fl['requests_per_get'], 2)} request(s) per object, {f(fl['connections'])} "
        "connection(s). × floor: 1-thread wall per open over it. Every vsitune open read what "
        "stock GDAL of its release read (digest of what the probe read) unless the last column "
        "says otherwise.\n\n" +
        table(["threads", "contender", "opens/s", "wall/open ms", "× floor", "CPU/open ms",
               "requests/open", "bytes/open", "conn.", "peak RSS MB", "failed / stalls"], rows) +
        "\n\nvsitune over stock GDAL with TiTiler's environment, same GDAL, same run "
        "(opens/s: > 1 is faster; CPU, requests, RSS: < 1 is less):\n\n" +
        table(["GDAL", "threads", "opens/s", "CPU per open", "requests per open", "peak RSS"],
              ratios))


def sec_mosaic(r):
    res, why = _section(r, "mosaic_tiles", "15. STAC mosaic tiles")
    if res is None:
        return why
    rows, ratios = [], []
    for cell in res["cells"]:
        for k in KINDS:
            v = cell["contenders"][k]
            rows.append([_who(cell, k), f(v["tiles_per_s"], 1), f(v["requests_per_tile"], 2),
                         f(v["lists"]), f(v["bytes_per_tile"]), f(v["connections"]),
                         f(v["peak_rss_mb"]), _bad(v)])
        q = cell["vsitune_vs_tuned"]
        ratios.append([cell["version"] or cell["gdal"], x(q["tiles_per_s"]),
                       x(q["requests_per_tile"]), x(q["bytes_per_tile"])])
    return (
        "## 15. STAC mosaic tiles\n\n"
        f"A VRT over a 5x5 grid of adjacent web-mercator COGs ({res['cog_px']}x{res['cog_px']} "
        f"each, {f(res['cog_bytes'])} bytes in all, shifted by half a COG from the XYZ grid as "
        f"real scenes are), opened per tile as a tile server does; {res['tiles_per_run']} "
        f"256x256 XYZ tiles per run: {res['tiles_4_cogs']} at zoom {res['zoom']} needing 4 COGs "
        f"each and {res['tiles_9_cogs']} at zoom {res['zoom'] - 1} needing 9 "
        f"(bench/probes/mosaic.py), {res['threads']} threads; {_where(res)}. Every run's tiles "
        "are compared with the same tiles of the local COGs.\n\n" +
        table(["contender", "tiles/s", "requests/tile", "LIST", "bytes/tile", "conn.",
               "peak RSS MB", "failed / stalls"], rows) +
        "\n\nvsitune over stock GDAL with TiTiler's environment, same GDAL, same run:\n\n" +
        table(["GDAL", "tiles/s", "requests per tile", "bytes per tile"], ratios))


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
