"""test_shared_engine.py: liveness, the cache budget, and what fork()ed workers inherit
(issue 4).

(test_vsitune_engine.py covers the connection counts, coalescing, reopening and that a
forked child reads correctly.)

Each test runs GDAL in a child process (vt_reader.py) through the built plugin and
reads what the lab saw: requests from its log, TCP connections from its front's
counter. Every window is compared with the local fixture, byte for byte. No timing
assertions: the one bound below is a liveness watchdog (a stalled HTTP/2 stream
would wait for nghttpx's 180 s read timeout; a working engine needs seconds).
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import lab_client

READER = Path(__file__).resolve().parent / "vt_reader.py"


def reader(lab, cog, mode, endpoint="h2", extra=None, timeout=300, **kw):
    """Start vt_reader.py through vsitune; returns the Popen (text mode)."""
    if not lab_client.plugin_built():
        pytest.fail(f"gdal_vsitune.so is not built in {lab_client.plugin_dir()}")
    env = lab_client.gdal_env(lab.env(endpoint), vsitune=True,
                              extra={"GDAL_CACHEMAX": "0", **(extra or {})})
    args = [sys.executable if sys.executable.startswith("/usr/bin") else "/usr/bin/python3",
            str(READER), mode, "--key", cog["key"], "--local", cog["path"]]
    for k, v in kw.items():
        args += [f"--{k}", str(v)]
    return subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(p, timeout=300):
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(f"reader did not finish within {timeout} s (a stalled transfer?)")
    assert p.returncode == 0, err[-2000:]
    res = json.loads(out.strip().splitlines()[-1])
    assert res["nerrors"] == 0, res["errors"]
    return res


def all_signed(lab):
    bad = [r for r in lab.log() if r["sig"] != "ok"]
    assert not bad, bad[:3]


def test_h2_open_per_window_never_stalls(lab, small_cog):
    # Stock GDAL 3.6.2 + curl 7.88 stalls one window for 180 s in this shape.
    res = finish(reader(lab, small_cog, "open-per-window", endpoint="h2", threads=16,
                        windows=200), timeout=60)
    assert res["windows"] == 16 * (200 // 16)
    assert lab.connections("h2")["accepted"] == 1
    all_signed(lab)


def test_cache_budget_holds_over_a_full_scan(lab, cogs):
    s2 = cogs["s2"]
    budget = 8 * 1024 * 1024
    # Two full scans of the 10980x10980 band: over 200 MB through an 8 MB cache.
    p = reader(lab, s2, "scan", endpoint="h1", extra={"VSITUNE_CACHE_SIZE": str(budget)},
               passes=2)
    line = p.stdout.readline()
    first = json.loads(line)
    assert first["phase"] == "scanned", line
    st = first["stats"]
    # The scans moved far more than the budget through the cache...
    assert st["engine"]["bytes_received"] >= 200 * 1024 * 1024
    # ...and the accounted cache never went above it.
    assert st["cache"]["budget"] == budget
    assert st["cache"]["peak_retained_bytes"] <= budget
    assert st["cache"]["retained_bytes"] <= budget
    lab.reset()
    p.stdin.write("go\n")
    p.stdin.flush()
    finish(p)
    assert lab.counts()["total"] == 0  # the last tile read was still cached


def test_forked_workers_inherit_the_cache(lab, small_cog):
    # ProcessPoolExecutor(fork) shape: the parent opened and read; its workers
    # open the same file and read the same window. They inherit the object
    # table and the ready blocks, so they cost the server nothing.
    p = reader(lab, small_cog, "fork-pool", endpoint="h2", threads=4, size=512)
    line = p.stdout.readline()
    assert json.loads(line)["phase"] == "read", line
    assert lab.counts()["total"] >= 2  # header + tile, once, by the parent
    lab.reset()
    p.stdin.write("go\n")
    p.stdin.flush()
    res = finish(p)
    assert res["child_exits"] == [0, 0, 0, 0]
    assert lab.counts()["total"] == 0, lab.log()
