"""test_shared_cache_faults.py: other processes that misbehave never hang, fail or
corrupt a reader of the shared cache (issue 18 items 2-4; docs/reliability.md, "The
shared cache's faults").

Real GDAL processes against the lab, as in test_shared_cache.py (whose helpers and
per-test pool this file uses): a process stopped (SIGSTOP) while it holds a segment
lock (VSITUNE_SHM_INJECT makes it stop there, deterministically) or while it fetches
a long run of blocks, and garbage written into a live segment. Every byte read is
compared with the local fixture; what was fetched is read from the lab's log. No
timing assertions: a hang shows as a watchdog failure (a generous bound on a call
that, fixed, takes a few seconds, and that used to take minutes or forever).
"""

import json
import os
import random
import signal
import struct
import subprocess
import time

import pytest

import lab_client
from test_shared_cache import (READ, READER, W1, W2, pool, read, segment, send,  # noqa: F401
                               shared, since, wait_for_fault)
from test_vsitune_helpers import PY, Worker, last_seq, sigcheck  # noqa: F401 (autouse)


def start_reader(lab, cog, extra, windows, endpoint="h1"):
    env = lab_client.gdal_env(lab.env(endpoint), vsitune=True, extra=extra)
    args = [PY, str(READER), "--key", cog["key"], "--local", cog["path"]]
    args += [",".join(map(str, w)) for w in windows]
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finish_reader(p, timeout=120):
    """The reader's result and its stderr; it must end within the watchdog and read
    every byte right."""
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(f"a reader hung (no answer within {timeout} s)")
    assert p.returncode == 0, err[-2000:]
    res = json.loads(out.strip().splitlines()[-1])
    assert res["nerrors"] == 0, res["errors"]
    return res, err


def proc_state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def wait_stopped(p, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if p.poll() is not None:
            pytest.fail(f"the process meant to stop exited ({p.returncode}): "
                        f"{p.stderr.read()[-2000:]}")
        if proc_state(p.pid) == "T":
            return
        time.sleep(0.05)
    pytest.fail("the process never stopped holding the lock")


@pytest.mark.parametrize("lock", ["blocks", "meta", "procs"])
def test_a_process_stopped_holding_a_lock_never_hangs_the_others(lab, small_cog, pool, lock):
    """A process stops (SIGSTOP) while it holds one of the segment's locks: an attached
    process's reads (cached and uncached) and a new process (attaching) complete with
    the right bytes. Once the stopped one is SIGKILLed, the lock is recovered and the
    segment serves again: a new process reads what B put there with no request."""
    env = shared(pool)
    stopped = None
    with Worker(lab, extra=env) as b:
        read(b, small_cog, W1)                        # W1 is in the segment
        stopped = start_reader(lab, small_cog, shared(pool, VSITUNE_SHM_INJECT=f"stop-{lock}"),
                               [W2])
        try:
            wait_stopped(stopped)
            path = f"/vsis3/lab/{small_cog['key']}"
            for win in (W1, W2):                     # cached, then (maybe) not
                assert b.call(READ, timeout=60, path=path, local=small_cog["path"],
                              win=list(win)) is True
            _, err = finish_reader(start_reader(lab, small_cog, dict(env, CPL_DEBUG="OFF"),
                                                [W1, W2]), timeout=60)
            said = [ln for ln in err.splitlines() if "shared cache: " in ln and
                    "a lock of the segment was held for more than 2000 ms" in ln]
            # said once, without CPL_DEBUG (a notice: GDAL's debug channel, no error)
            assert len(said) == 1, err[-3000:]
            assert "Warning" not in err and "ERROR" not in err, err[-3000:]
        finally:
            stopped.kill()
            stopped.wait(timeout=30)
        mark = last_seq(lab)
        finish_reader(start_reader(lab, small_cog, env, [W1]), timeout=60)
        assert since(lab, mark) == []                 # recovered: served by the segment


S2_ROW = (0, 4096, 10980, 512)  # one row of 512-pixel tiles: one long run of blocks


def test_a_stopped_filler_costs_one_wait_not_one_per_block(lab, cogs, pool):
    """A fetches a row of the s2 scene (one run of well over 24 blocks), its GET
    stalls at the lab, and A is stopped (SIGSTOP) while it holds every block of that
    run. B reads the same row with VSITUNE_SHARED_CACHE_WAIT=3: one wait for A, then B
    fetches the run itself, as one run. It used to wait 3 s for each block in turn
    (minutes here): the 60 s watchdog on B's call fails that."""
    cog = cogs["s2"]
    env = shared(pool, VSITUNE_SHARED_CACHE_WAIT=3)
    path = f"/vsis3/lab/{cog['key']}"
    with Worker(lab, extra=env) as b:
        a = Worker(lab, extra=env)
        try:
            a.call("ds = gdal.Open(path)\nresult = ds.RasterXSize", path=path)
            lab.fault("stall", key=cog["key"], count=1)
            send(a, f"ds.GetRasterBand(1).ReadAsArray(*{list(S2_ROW)})\nresult = True")
            stalled = wait_for_fault(lab)
            first, last = (int(v) for v in stalled["range"].split("=")[1].split("-"))
            assert (last + 1 - first) // 65536 > 24, stalled["range"]
            os.kill(a.proc.pid, signal.SIGSTOP)
            mark = last_seq(lab)
            assert b.call(READ, timeout=60, path=path, local=cog["path"],
                          win=list(S2_ROW)) is True
            got = [e for e in since(lab, mark) if e["kind"] == "GET_RANGE"]
            assert stalled["range"] in [e["range"] for e in got], (stalled, got)
            assert all(e["status"] == 206 for e in got)
        finally:
            a.proc.kill()
            a.proc.wait(timeout=30)


def header_layout(buf):
    """(ndesc, nbuckets, nmeta, nmeta_buckets, off_desc, off_buckets, off_meta,
    off_meta_buckets, off_data) from a segment header (shm_int.h vt_shm_hdr)."""
    nprocs, ndesc, nbuckets, nslots, nmeta, nmeta_buckets = struct.unpack_from("<6I", buf, 52)
    offs = struct.unpack_from("<7Q", buf, 80)
    return dict(ndesc=ndesc, nbuckets=nbuckets, nslots=nslots, nmeta=nmeta,
                nmeta_buckets=nmeta_buckets, off_procs=offs[0], off_desc=offs[1],
                off_lirs=offs[2], off_buckets=offs[3], off_meta=offs[4],
                off_meta_buckets=offs[5], off_data=offs[6])


def test_garbage_in_a_live_segment_never_crashes_a_reader(lab, small_cog, pool):
    """Random values written over the index structures of a live segment (descriptors,
    hash buckets, LIRS nodes, metadata links), and a garbage bucket count in its header,
    while processes read: every reader ends by itself (no SIGSEGV, no hang) with the
    right pixels, and new processes too."""
    env = shared(pool)
    wins = [W1, W2, (100, 1500, 300, 300), (1500, 100, 300, 300)]
    with Worker(lab, extra=env) as holder:           # keeps the segment alive
        read(holder, small_cog, W1)
        seg = segment(pool)
        size = seg.stat().st_size
        with open(seg, "r+b") as f:
            lay = header_layout(f.read(200))
        regions = [(lay["off_desc"], lay["off_lirs"]), (lay["off_buckets"], lay["off_meta"]),
                   (lay["off_lirs"], lay["off_buckets"]),
                   (lay["off_meta_buckets"], lay["off_data"])]
        assert 0 < lay["off_data"] < size
        rnd = random.Random(18)
        for round_ in range(6):
            readers = [start_reader(lab, small_cog, env, rnd.sample(wins, 3)) for _ in range(3)]
            time.sleep(rnd.uniform(0.2, 1.0))
            with open(seg, "r+b") as f:
                for _ in range(200):
                    lo, hi = rnd.choice(regions)
                    f.seek(rnd.randrange(lo, hi) & ~3)
                    f.write(struct.pack("<i", rnd.choice([-1, rnd.randrange(0, 600),
                                                          rnd.randrange(-2**31, 2**31)])))
                if round_ == 3:
                    f.seek(60)                        # nbuckets
                    f.write(struct.pack("<I", 1 << 30))
            for p in readers:
                finish_reader(p, timeout=120)
        finish_reader(start_reader(lab, small_cog, env, wins), timeout=120)
        read(holder, small_cog, W2)


# One GDAL process: thread A opens and reads while its segment creation is held
# (VSITUNE_SHM_INJECT=hold-create:FILE); the main thread then forks (object.c's fork
# handlers take the object table's lock) and the child reads the same window; A is
# released once the test saw the child's requests at the lab.
HOLD_FORK = r"""
import json, os, sys, threading
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
path, local, hold, forked = sys.argv[1:5]
win = [int(v) for v in sys.argv[5].split(",")]
lds = gdal.Open(local)  # a band does not keep its dataset alive (GDAL 3.6)
ref = lds.GetRasterBand(1).ReadAsArray(*win)
out = {}
def read(tag):
    ds = gdal.Open(path)
    got = ds.GetRasterBand(1).ReadAsArray(*win)
    out[tag] = bool(np.array_equal(got, ref))
a = threading.Thread(target=read, args=("a",))
a.start()
while not os.path.exists(hold + ".held"):
    a.join(0.01)
pid = os.fork()
if pid == 0:
    os.unsetenv("VSITUNE_SHM_INJECT")
    try:
        read("child")
        os._exit(0 if out["child"] else 1)
    except BaseException:
        os._exit(2)
_, st = os.waitpid(pid, 0)
open(forked, "w").close()
a.join()
print(json.dumps({"a": out.get("a"), "child": os.waitstatus_to_exitcode(st)}), flush=True)
"""


def test_the_segment_is_created_with_no_vsitune_lock_held(lab, cogs, pool, tmp_path):
    """Issue 19 item 7: while one thread of a GDAL process is held in the shared
    segment's creation, another thread forks (the fork handlers take the object
    table's lock) and the child opens and reads the 212 MB s2 scene: the lab sees the
    child's GETs while the creation is still held. Released, the first thread ends
    with the right pixels, and so did the child. Before, the table lock was held
    across the creation: the fork waited for it (the watchdog below fails that)."""
    cog = cogs["s2"]
    hold, forked = tmp_path / "hold", tmp_path / "forked"
    hold.touch()
    env = lab_client.gdal_env(lab.env("h1"), vsitune=True, extra=shared(
        pool, VSITUNE_SHM_INJECT=f"hold-create:{hold}"))
    mark = last_seq(lab)
    p = subprocess.Popen([PY, "-X", "faulthandler", "-c", HOLD_FORK, f"/vsis3/lab/{cog['key']}", cog["path"],
                          str(hold), str(forked), ",".join(map(str, S2_ROW))],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60  # a bound on a hang, not a speed
        while not forked.exists() and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        went = forked.exists()
        during = [e for e in since(lab, mark) if e.get("key") == cog["key"]]
        assert hold.exists()                       # the creation is still held
    finally:
        hold.unlink()                              # release
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()  # at 099efe4 the fork (table lock) and thread A deadlocked here
        p.communicate()
        pytest.fail(f"the process hung (the fork went through: {went})")
    assert p.returncode == 0, err[-2000:]
    res = json.loads(out.strip().splitlines()[-1])
    assert went, "the fork waited for the segment's creation"
    assert res == {"a": True, "child": 0}, err[-2000:]
    assert [e["method"] for e in during if e["method"] != "GET"] == []
    assert during, "the child's reads reached no server while the creation was held"
