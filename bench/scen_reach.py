"""scen_reach.py: scenario 17, issue 20's backends under the tile-server workload.

Issue 20's bench acceptance: "16 threads reading 200 windows through /vsigs/ over h2
use one connection and beat stock by at least 1.5x (bench, ratio in one run); through
/vsicurl/ over HTTPS HTTP/1.1, at least stock's speed with fewer requests."

The workload is scenario 3's (bench/probes/tiles.py: a thread pool, open per request,
one 256x256 window each, seeded windows), here with `reach_threads` threads and
`reach_windows` windows, through each backend of the lab at `reach_rtt_ms`:
  gs    /vsigs/ on the GCS XML-API front over h2 + TLS (nghttpx), HMAC keys;
  curl  /vsicurl/ of a presigned S3 URL on the S3-like HTTPS front (HTTP/1.1 only);
  az    /vsiaz/ on Azurite over h2 + TLS (nghttpx), shared key.
Contenders, alternated: stock GDAL (default), stock GDAL with TiTiler's environment
(GDAL_HTTP_MULTIPLEX among it, GDAL_HTTP_VERSION=2 on the h2 fronts), and vsitune with
its takeover knob for the prefix set explicitly to YES (VSITUNE_TAKEOVER_GS, _CURL,
_AZ), on this machine's GDAL and each --root's.

Measured per run, from the lab (never from what the code says it did): wall, windows/s,
requests and bytes in the log, TCP connections the family's delay proxy accepted
(in front of nghttpx: what the client opened), and who served: the requests whose
User-Agent is vsitune's. A vsitune run in which no request was vsitune's is reported
as "vsitune did not serve" and gets no ratio: the plugin being loaded is not the
plugin reading.
"""

import common
import scen_versions
import stalls
from common import PROBES, PYTHON, median, ratio

KINDS = scen_versions.KINDS
VT_UA = "vsitune/"  # tests/integration/parity.py: the plugin's User-Agent prefix
# name: prefix, lab endpoint, authentication mode (family_env), takeover knob, h2 front
BACKENDS = {
    "gs": ("/vsigs/", "gcs-h2", "hmac", "VSITUNE_TAKEOVER_GS", True),
    "curl": ("/vsicurl/", "h1tls", None, "VSITUNE_TAKEOVER_CURL", False),
    "az": ("/vsiaz/", "az-h2", "shared_key", "VSITUNE_TAKEOVER_AZ", True),
}
PRESIGN_S = 6 * 3600  # a presigned URL outliving any run of the scenario


def _place(ctx, name, key):
    """(GDAL path, environment base) of the fixture through backend `name`; puts the
    object where the backend serves it (the GCS front serves s3rver's buckets)."""
    prefix, ep, auth, _, _ = BACKENDS[name]
    lab = ctx.lab
    if name == "curl":
        url = lab.presign("lab", key, endpoint=ep, expires=PRESIGN_S)
        base = {k: v for k, v in lab.env(ep).items() if not k.startswith("AWS_")}
        return prefix + url, base
    if name == "az":
        lab.put_object("lab", key, ctx.local_path, family="az")
    return f"{prefix}lab/{key}", lab.family_env(ep, auth)


def _env(lab, g, base, kind, name, host_build):
    _, ep, _, knob, h2 = BACKENDS[name]
    env = common.lab_client.gdal_env(base, vsitune=False)
    if kind == "tuned":
        env.update(common.TUNED)
        if h2:
            env.update(common.TITILER_H2)
    elif kind == "vsitune":
        env["GDAL_DRIVER_PATH"] = (str(host_build / "vsiplugin") if g.root is None
                                   else "/vt/build/vsiplugin")
        env[knob] = "YES"
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _one(ctx, g, kind, name, path, base, seed):
    p, lab = ctx.p, ctx.lab
    ep = BACKENDS[name][1]
    lab.reset()
    lab.set_delay(p["reach_rtt_ms"] // 2, ep)
    env = _env(lab, g, base, kind, name, ctx.build_dir)
    argv = [PYTHON, PROBES / "tiles.py", path, ctx.width, ctx.height,
            "--threads", p["reach_threads"], "--requests", p["reach_windows"], "--seed", seed]
    r = common.run_child(*g.argv(argv, env, binds=[lab.dir]), timeout=_watchdog(p))
    log = lab.log()
    mine = sum(1 for e in log if (e.get("user_agent") or "").startswith(VT_UA))
    run = {"wall_s": r.wall, "ok": r.ok, "error": r.error(), "killed": r.timed_out,
           "windows_done": max([ln["done"] for ln in r.lines if "done" in ln] or [0]),
           "requests": common.request_summary(log),
           "connections": lab.connections(ep)["accepted"],
           "vsitune_requests": mine, "other_requests": len(log) - mine}
    if r.result:
        run.update({k: r.result.get(k) for k in ("windows_per_s", "elapsed_s",
                                                  "latency_max_s", "checksum")})
    return run


def _watchdog(p):
    """The run's one watchdog (bench/run.py "watchdog_s"), as every scenario's."""
    return p["watchdog_s"]


def _served(rs):
    """Who served a vsitune cell's finished runs, from the lab's log: "vsitune" (every
    request carried its User-Agent), "stock" (none did: the takeover did not happen),
    "partly", or None (no run finished)."""
    ok = [r for r in rs if r["ok"]]
    if not ok:
        return None
    if all(r["vsitune_requests"] and not r["other_requests"] for r in ok):
        return "vsitune"
    if all(not r["vsitune_requests"] for r in ok):
        return "stock"
    return "partly"


def _cell(rs, want):
    for r in rs:
        r["checksum_ok"] = r.get("checksum") == want if r["ok"] else None
    ok, base = scen_versions.cell_runs(rs)
    return dict(base, **{
        "windows_per_s": median([r["windows_per_s"] for r in ok]),
        "wall_s": median([r["wall_s"] for r in ok]),
        "requests": median([r["requests"]["total"] for r in ok]),
        "heads": median([r["requests"].get("HEAD", 0) for r in ok]),
        "lists": median([r["requests"].get("LIST", 0) for r in ok]),
        "bytes": median([r["requests"]["bytes"] for r in ok]),
        "connections": median([r["connections"] for r in ok]),
        "latency_max_s": max([r["latency_max_s"] for r in ok], default=None),
        "vsitune_requests": median([r["vsitune_requests"] for r in ok]),
        "served": _served(rs),
    })


def acceptance(name, cell):
    """Issue 20's acceptance line for one backend cell: {"line", "met", "why"}."""
    v, s = cell["contenders"]["vsitune"], cell["contenders"]["stock"]
    if v["served"] != "vsitune":
        why = ("vsitune did not serve (no request with its User-Agent)" if v["served"] == "stock"
               else "vsitune served only part of the requests" if v["served"] == "partly"
               else "no vsitune run finished")
        return {"met": False, "why": why}
    speed = cell["vsitune_vs_stock"]
    if speed is None:
        return {"met": False, "why": "no stock run finished (each stalled or failed)"}
    if name == "curl":
        met = (speed is not None and speed >= 1.0 and v["requests"] is not None
               and s["requests"] is not None and v["requests"] < s["requests"])
        return {"met": met, "why": f"{speed:.2f}x stock's windows/s, "
                                   f"{v['requests']:g} requests against stock's {s['requests']:g}"}
    met = speed is not None and speed >= 1.5 and v["connections"] == 1
    return {"met": met, "why": f"{speed:.2f}x stock's windows/s over "
                               f"{v['connections']:g} connection(s)"}


def reach_backends(ctx):
    p, prog = ctx.p, ctx.progress
    gs = scen_versions.gdals(ctx)
    names = [n for n in p["reach_backends"] if n in BACKENDS]
    seed = 17
    key = ctx.remote_path.split("/", 3)[3]  # /vsis3/<bucket>/<key>
    prog.start("17 issue 20 backends", len(names) * (1 + p["reach_reps"] * len(gs) * len(KINDS)))
    # the same windows from the local file, same threads: their checksum, and the
    # windows/s this machine's CPU allows with no network at all (the ceiling)
    ref = common.run_child([PYTHON, PROBES / "tiles.py", ctx.local_path, ctx.width, ctx.height,
                            "--threads", p["reach_threads"], "--requests", p["reach_windows"],
                            "--seed", seed],
                           common.lab_client.gdal_env({}), timeout=p["watchdog_s"])
    if not ref.ok:
        raise RuntimeError(f"reference tile run failed: {ref.error()}")
    want = ref.result["checksum"]
    cells = []
    for name in names:
        path, base = _place(ctx, name, key)
        prog.step(f"{name}: {BACKENDS[name][1]} ready")
        runs = {}
        for rep in range(p["reach_reps"]):
            for g in gs:
                for k in KINDS:
                    run = _one(ctx, g, k, name, path, base, seed)
                    run["rep"] = rep
                    runs.setdefault((g.name, k), []).append(run)
                    prog.step(f"{name} {k}@{g.name}: " + (
                        f"{run['windows_per_s']:.1f} win/s, {run['requests']['total']} req, "
                        f"{run['connections']} conn, {run['vsitune_requests']} vsitune's"
                        if run["ok"] else (run["error"] or "")[:80]))
        for g in gs:
            row = {"backend": name, "prefix": BACKENDS[name][0], "endpoint": BACKENDS[name][1],
                   "gdal": g.name, "version": g.version,
                   "contenders": {k: _cell(runs[(g.name, k)], want) for k in KINDS}}
            c = row["contenders"]
            served = c["vsitune"]["served"] == "vsitune"
            for other in ("stock", "tuned"):
                row[f"vsitune_vs_{other}"] = (ratio(c["vsitune"]["windows_per_s"],
                                                    c[other]["windows_per_s"]) if served else None)
            row["acceptance"] = acceptance(name, row)
            cells.append(row)
    return {"threads": p["reach_threads"], "windows": p["reach_windows"], "window": 256,
            "rtt_ms": p["reach_rtt_ms"], "reps": p["reach_reps"], "seed": seed,
            "expected_checksum": want, "local_windows_per_s": ref.result["windows_per_s"],
            "stall_rule": stalls.rule(_watchdog(p)),
            "gdals": {g.name: {"version": g.version, "curl": g.curl} for g in gs},
            "knobs": {n: BACKENDS[n][3] for n in names}, "cells": cells}

