"""render_reach.py: the performance page's section for scenario 17 (issue 20's backends).

Pure: results dict in, Markdown out. Every number is a value of the results file
(medians, ratios and each acceptance line's verdict were computed by
bench/scen_reach.py when it was written); a vsitune cell that did not serve shows
that, never a number.
"""

from render_cells import _section, f, table, x
from render_users import _bad

KINDS = ("stock", "tuned", "vsitune")
WHERE = {"gs": "the GCS XML-API front, h2 + TLS (nghttpx), HMAC keys",
         "curl": "a presigned S3 URL on the S3-like front, HTTPS with HTTP/1.1 only",
         "az": "Azurite, h2 + TLS (nghttpx), shared key"}
TARGET = {"gs": "one connection and at least 1.5× stock's windows/s",
          "curl": "at least stock's windows/s with fewer requests",
          "az": "(no target in issue 20; measured the same way)"}
SERVED = {"vsitune": "yes", "stock": "**vsitune did not serve**",
          "partly": "**only partly**", None: "no run finished"}


def _who(cell):
    return cell.get("version") or cell["gdal"]


def _acceptance(res):
    rows = []
    for cell in res["cells"]:
        a = cell["acceptance"]
        verdict = ("n/a" if cell["backend"] == "az" else "**met**" if a["met"]
                   else "**not met**")
        rows.append([cell["prefix"], _who(cell), TARGET[cell["backend"]], a["why"], verdict])
    return table(["backend", "GDAL", "target", "this run", "met"], rows)


def _detail(res):
    rows = []
    for cell in res["cells"]:
        for k in KINDS:
            v = cell["contenders"][k]
            speed = (x(cell.get(f"vsitune_vs_{k}")) if k != "vsitune" else "")
            rows.append([cell["prefix"], _who(cell), k, f(v["windows_per_s"], 1),
                         f(v["requests"]), f(v["heads"]), f(v["lists"]),
                         f((v["bytes"] or 0) / 1e6 if v["bytes"] is not None else None, 1),
                         f(v["connections"]), f(v.get("latency_max_s"), 1), SERVED[v["served"]] if k == "vsitune" else "",
                         speed, _bad(v)])
    return table(["backend", "GDAL", "contender", "windows/s", "requests", "HEAD", "LIST",
                  "MB sent", "connections", "slowest window, s", "vsitune served", "vsitune ÷ this", "bad runs"],
                 rows)


def sec_reach(r):
    title = "17. Issue 20 backends: /vsigs/, /vsicurl/, /vsiaz/"
    res, why = _section(r, "reach_backends", title)
    if res is None:
        return why
    knobs = ", ".join(f"`{k}=YES`" for k in res["knobs"].values())
    return (f"## {title}\n\n"
            f"{res['threads']} threads read {res['windows']} windows of "
            f"{res['window']}x{res['window']} (open per request, bench/probes/tiles.py) through "
            f"each backend at RTT {res['rtt_ms']} ms, {res['reps']} run(s) per cell, contenders "
            "alternated, medians. vsitune runs with its takeover knob set explicitly "
            f"({knobs}). Requests, bytes and connections are what the lab saw (connections: "
            "TCP connections accepted in front of the TLS front); \"vsitune served\" counts the "
            "requests carrying vsitune's User-Agent in the lab's log: where none did, the "
            "plugin was loaded but GDAL read, and no ratio is given. The same windows read "
            f"from the local file by the same threads: {f(res.get('local_windows_per_s'), 1)} "
            "windows/s (what this machine's CPU allows with no network). A slowest window of "
            "minutes in every run of a cell is a stall the stall rule cannot see (it compares a "
            "run with its peers): such a cell's ratio measures the stall.\n\n" +
            "".join(f"- **{c['prefix']}**: {WHERE[c['backend']]}\n"
                    for c in {c["backend"]: c for c in res["cells"]}.values()) +
            "\n### Issue 20's acceptance, as this run measured it\n\n" + _acceptance(res) +
            "\n\n### Per contender\n\n" + _detail(res))
