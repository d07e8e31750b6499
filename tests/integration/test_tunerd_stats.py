#!/usr/bin/python3
"""test_tunerd_stats.py: `tunerd stats` and `tunerd watch` on the counters real
GDAL processes publish through the plugin (VSITUNE_STATS_DIR), against the lab.

- A gdallocationinfo run through vsitune exits: its file says so, and `tunerd
  stats --json` lists that pid as exited with exactly the requests the lab's log
  counted (and the body bytes the lab sent).
- A Python reader that has read two windows (the second after a pause longer than
  the plugin's one-second publication interval, so its file holds every request)
  is first seen running, by `stats` and by `watch` (whose requests column is the
  reader's own live count), then SIGKILLed: `stats` shows it killed-or-gone with
  the counters it had, `--clean` removes its file and only that.
- Fork pool workers are "ended" (no OOM kill since they wrote), their files holding
  every request the lab saw, whether the parent loaded the plugin before the fork
  or the workers loaded it after (the parent only imported rasterio, under
  `tunerd exec`); an OOM-killed one is killed-or-gone.
- Garbage in the directory is named as unreadable; a missing directory is exit 6.
- profile emits VSITUNE_STATS_DIR on the cloud platforms (plugin mode only, not on
  host); exec creates it 0700, and drops it when the path is a symlink.

Run: /usr/bin/python3 -m pytest tests/integration/test_tunerd_stats.py
Needs a built tree (tunerd and the plugin); VT_BUILD_DIR / VT_BINARY_DIR override build/.
"""
import json
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import lab_client

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("VT_BINARY_DIR") or lab_client.build_dir())
TUNERD = BUILD / "tunerd" / "tunerd"
POINT = (1500, 700)  # inside the small fixture's data swath

READER = r"""
import json, sys, time
from osgeo import gdal
gdal.UseExceptions()
def live():
    return json.loads(gdal.GetDriverByName("VSITUNE").GetMetadataItem("STATS"))
ds = gdal.Open(sys.argv[1])
band = ds.GetRasterBand(1)
band.ReadAsArray(0, 0, 256, 256)                      # the first window
# Another window after more than a second: its fetch publishes the file with every
# request so far. Tiles from the far corner until one costs a request (bounded).
for ty in range(3, -1, -1):
    for tx in range(3, -1, -1):
        before = live()["engine"]["requests"]
        time.sleep(1.1)
        band.ReadAsArray(tx * 512, ty * 512, 512, 512)
        if live()["engine"]["requests"] > before:
            break
    else:
        continue
    break
print(json.dumps({"ready": True, "stats": live()}), flush=True)
sys.stdin.readline()                                   # killed while waiting here
"""


PLATFORM_VARS = ("AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "K_SERVICE",
                 "CLOUD_RUN_JOB", "FUNCTIONS_WORKER_RUNTIME", "FUNCTIONS_EXTENSION_VERSION",
                 "WEBSITE_MEMORY_LIMIT_MB", "KUBERNETES_SERVICE_HOST", "TUNERD_SYSFS_ROOT",
                 "TUNERD_PROCFS_ROOT", "VSITUNE_STATS_DIR")


def tunerd(*args, check=True, profiles=REPO / "profiles"):
    assert TUNERD.exists(), f"{TUNERD} not built: cmake --build build --target tunerd"
    env = {k: v for k, v in os.environ.items() if k not in PLATFORM_VARS}
    env["TUNERD_PROFILES_DIR"] = str(profiles)
    p = subprocess.run([str(TUNERD), *map(str, args)], capture_output=True, text=True,
                       timeout=60, env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"tunerd {' '.join(map(str, args))} -> {p.returncode}: {p.stderr}")
    return p


def stats_json(d, *extra):
    return json.loads(tunerd("stats", "--dir", d, "--json", *extra).stdout)


def by_pid(doc, pid):
    rows = [p for p in doc["processes"] if p["pid"] == pid]
    assert len(rows) == 1, doc
    return rows[0]


@pytest.fixture
def stats_dir(tmp_path):
    d = tmp_path / "stats"
    d.mkdir()
    return d


def vsitune_env(lab, stats_dir):
    if not lab_client.plugin_built():
        pytest.skip(f"gdal_vsitune.so not built in {lab_client.plugin_dir()}")
    return lab_client.gdal_env(lab.env("h1"), vsitune=True,
                               extra={"VSITUNE_STATS_DIR": str(stats_dir)})


def test_exited_process_has_the_labs_counts(lab, small_cog, stats_dir):
    p = subprocess.Popen(["gdallocationinfo", "-valonly", f"/vsis3/lab/{small_cog['key']}",
                          str(POINT[0]), str(POINT[1])], env=vsitune_env(lab, stats_dir),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert out.strip() not in ("", "0")
    log = lab.log()
    assert len(log) >= 2  # the header and a tile, at least

    doc = stats_json(stats_dir)
    assert doc["unreadable"] == [] and doc["not_shown"] == 0
    assert [r["pid"] for r in doc["processes"]] == [p.pid]
    row = by_pid(doc, p.pid)
    assert row["state"] == "exited" and row["exited"] is True
    assert row["engine"]["requests"] == len(log)
    assert row["engine"]["retries"] == 0
    assert row["engine"]["bytes_received"] == sum(e["bytes_sent"] for e in log)
    assert row["engine"]["in_flight"] == 0
    assert row["cache"]["budget"] > 0 and row["cache"]["misses"] > 0
    assert row["removed"] is False

    text = tunerd("stats", "--dir", stats_dir).stdout
    rows = [ln.split() for ln in text.splitlines() if ln.split()[:1] == [str(p.pid)]]
    assert len(rows) == 1 and rows[0][1] == "exited" and rows[0][3] == str(len(log)), text
    # an exited process is gone too: --clean removes its file
    doc = stats_json(stats_dir, "--clean")
    assert by_pid(doc, p.pid)["removed"] is True
    assert list(stats_dir.iterdir()) == []


def _published(stats_dir, pid, requests, timeout=30):
    """The counters file of pid once it holds `requests` (bounded wait)."""
    deadline = time.monotonic() + timeout
    while True:
        doc = json.loads((stats_dir / f"vsitune-{pid}.json").read_text())
        if doc["engine"]["requests"] == requests:
            # and it no longer changes (the trailing publication is done)
            time.sleep(2.5)
            again = json.loads((stats_dir / f"vsitune-{pid}.json").read_text())
            if again == doc:
                return doc
        assert time.monotonic() < deadline, doc
        time.sleep(0.2)


def _read_line(proc, timeout):
    """One line of the reader's stdout within timeout seconds (never hangs)."""
    r, _, _ = select.select([proc.stdout], [], [], timeout)
    if not r:
        proc.kill()
        raise AssertionError(f"reader said nothing within {timeout} s: "
                             f"{proc.stderr.read() if proc.poll() is not None else ''}")
    return proc.stdout.readline()


def test_killed_reader_leaves_its_last_counters(lab, small_cog, stats_dir):
    env = vsitune_env(lab, stats_dir)
    proc = subprocess.Popen([sys.executable, "-c", READER, f"/vsis3/lab/{small_cog['key']}"],
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = _read_line(proc, 120)
        assert line, proc.stderr.read()
        live = json.loads(line)["stats"]
        requests = len(lab.log())
        assert live["engine"]["requests"] == requests >= 3

        # what the plugin published last: every request, within a second of the
        # last one (a reader publishes at most once a second; the engine's I/O
        # thread publishes what came after, so an idle process's file is whole)
        published = _published(stats_dir, proc.pid, requests)

        # alive: running, with those counters
        row = by_pid(stats_json(stats_dir), proc.pid)
        assert row["state"] == "running" and row["exited"] is False
        assert row["engine"] == published["engine"] and row["cache"] == published["cache"]
        # watch joins them to the reader's memory row
        w = tunerd("watch", "--stats-dir", stats_dir, "--match", "libgdal").stdout
        assert w.splitlines()[1].split()[5:7] == ["requests", "cache_mib"], w
        mine = [ln.split() for ln in w.splitlines() if ln.split()[1:2] == [str(proc.pid)]]
        assert len(mine) == 1, w
        assert mine[0][5] == str(requests)
        assert float(mine[0][6]) == pytest.approx(
            published["cache"]["retained_bytes"] / 2**20, abs=0.051)
        # --clean leaves a running process's file alone
        assert by_pid(stats_json(stats_dir, "--clean"), proc.pid)["removed"] is False
    finally:
        proc.send_signal(signal.SIGKILL)  # mid-read: the dataset is open, no exit dump
        proc.wait(timeout=30)
        for s in (proc.stdin, proc.stdout, proc.stderr):
            s.close()
    assert proc.returncode == -signal.SIGKILL

    doc = stats_json(stats_dir)
    row = by_pid(doc, proc.pid)
    assert row["state"] == "killed-or-gone" and row["exited"] is False
    assert row["engine"]["requests"] == requests == len(lab.log())
    assert row["engine"] == published["engine"] and row["cache"] == published["cache"]
    assert row["time"] == published["time"]
    text = tunerd("stats", "--dir", stats_dir).stdout
    assert any(ln.split()[:2] == [str(proc.pid), "killed-or-gone"] for ln in text.splitlines())

    # a garbage file next to it is named, not fatal, and --clean keeps it
    (stats_dir / "vsitune-1.json").write_text('{"pid": 1, "time": ')
    doc = stats_json(stats_dir, "--clean")
    assert by_pid(doc, proc.pid)["removed"] is True
    assert [u["file"] for u in doc["unreadable"]] == ["vsitune-1.json"]
    assert "truncated" in doc["unreadable"][0]["error"]
    assert sorted(f.name for f in stats_dir.iterdir()) == ["vsitune-1.json"]
    assert stats_json(stats_dir)["processes"] == []


def test_stats_bad_input(tmp_path):
    p = tunerd("stats", "--dir", tmp_path / "missing", check=False)
    assert p.returncode == 6 and "missing" in p.stderr and p.stdout == ""
    p = tunerd("stats", check=False)  # no --dir, no VSITUNE_STATS_DIR
    assert p.returncode == 2 and "--dir" in p.stderr
    p = tunerd("stats", "--dir", tmp_path, "--proc-root", tmp_path / "noproc", check=False)
    assert p.returncode == 5
    p = tunerd("profile", "--clean", check=False)
    assert p.returncode == 2 and "--clean is only valid with stats" in p.stderr
    p = tunerd("watch", "--dir", tmp_path, check=False)
    assert p.returncode == 2
    assert "exit status" in tunerd("--help").stdout and "  6 " in tunerd("--help").stdout


@pytest.mark.parametrize("platform,cpus", [("lambda", None), ("cloudrun", "2"),
                                           ("azure-functions", None), ("kubernetes", "2"),
                                           ("host", "2")])
def test_profile_emits_stats_dir_on_cloud_platforms(platform, cpus):
    memory = "1536" if platform == "azure-functions" else "4096"
    args = ["profile", "--platform", platform, "--memory", memory] + \
        (["--cpus", cpus] if cpus else [])
    env = dict(line.split("=", 1) for line in tunerd(*args).stdout.splitlines())
    if platform == "host":  # a shared /tmp: not by default
        assert "VSITUNE_STATS_DIR" not in env
    else:
        assert env["VSITUNE_STATS_DIR"] == "/tmp/vsitune-stats"
    stock = tunerd(*args, "--no-plugin").stdout  # no plugin, no counters
    assert "VSITUNE_STATS_DIR" not in stock


def _profiles_with_stats_dir(tmp_path, value):
    d = tmp_path / "profiles"
    shutil.copytree(REPO / "profiles", d)
    lam = d / "lambda.profile"
    lam.write_text(re.sub(r"(?m)^stats_dir = .*$", f"stats_dir = {value}", lam.read_text()))
    return d


def test_exec_creates_stats_dir(tmp_path):
    target = tmp_path / "counters"
    profiles = _profiles_with_stats_dir(tmp_path, target)
    cmd = ["exec", "--platform", "lambda", "--memory", "2048", "--", "sh", "-c",
           'printf %s "${VSITUNE_STATS_DIR-unset}"']
    p = tunerd(*cmd, profiles=profiles)
    assert p.stdout == str(target)
    assert target.is_dir() and stat.S_IMODE(target.stat().st_mode) == 0o700
    assert tunerd(*cmd, profiles=profiles).stdout == str(target)  # exists: fine

    # a symlink where the directory should be: the plugin is not pointed at it
    target.rmdir()
    (tmp_path / "elsewhere").mkdir()
    target.symlink_to(tmp_path / "elsewhere")
    p = tunerd(*cmd, profiles=profiles)
    assert p.stdout == "unset"
    assert "is not a directory" in p.stderr and "VSITUNE_STATS_DIR not set" in p.stderr

    # a relative path in a profile is refused where it is written
    bad = _profiles_with_stats_dir(tmp_path / "b", "relative/dir")
    p = tunerd("check-profiles", "--profiles", bad, check=False, profiles=bad)
    assert p.returncode == 4 and "lambda.profile:" in p.stderr and "stats_dir" in p.stderr


POOL = r"""
import json, os, sys
import concurrent.futures as cf, multiprocessing as mp
from osgeo import gdal
gdal.UseExceptions()
gdal.AllRegister()                      # the plugin is loaded before the fork
path, hog = sys.argv[1], int(sys.argv[2])

def work(i):
    ds = gdal.Open(path)
    ds.GetRasterBand(1).ReadAsArray((i % 4) * 512, (i // 4) * 512, 512, 512)
    if hog and i == 0:
        import time
        time.sleep(1.5)                 # its counters are published (I/O thread)
        block = bytearray(hog * 2**20)  # then it grows past the cgroup's limit
        for k in range(0, len(block), 4096):
            block[k] = 1
    return os.getpid()

with cf.ProcessPoolExecutor(2, mp_context=mp.get_context("fork")) as pool:
    try:
        pids = sorted(set(pool.map(work, range(8))))
        print(json.dumps({"parent": os.getpid(), "pids": pids, "broken": False}), flush=True)
    except cf.process.BrokenProcessPool:
        print(json.dumps({"parent": os.getpid(), "pids": [], "broken": True}), flush=True)
"""


def _pool_files(stats_dir, parent):
    doc = stats_json(stats_dir)
    rows = {r["pid"]: r for r in doc["processes"]}
    assert parent in rows and rows[parent]["state"] == "exited"
    children = {p: r for p, r in rows.items() if p != parent}
    for r in children.values():
        assert r["process"]["forked"] is True and r["process"]["ppid"] == parent
    return doc, children


def test_fork_pool_workers_ended_not_killed(lab, small_cog, stats_dir):
    """The workers of a healthy fork pool leave through _exit() (no exit dump):
    `tunerd stats` says "ended", because their cgroup counted no OOM kill since
    they wrote; the parent exited; the cgroup's oom_kill count is shown."""
    env = vsitune_env(lab, stats_dir)
    p = subprocess.run([sys.executable, "-c", POOL, f"/vsis3/lab/{small_cog['key']}", "0"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)
    doc, children = _pool_files(stats_dir, out["parent"])
    assert set(children) == set(out["pids"]) and len(children) == 2
    assert all(r["state"] == "ended" for r in children.values()), children
    # the parent read nothing; a fork child rewrites its file after every read, so
    # the workers' files hold every request the lab saw
    assert sum(r["engine"]["requests"] for r in children.values()) == len(lab.log())
    assert doc["cgroup"]["oom_kills"] == children[out["pids"][0]]["process"]["oom_kills"]
    text = tunerd("stats", "--dir", stats_dir).stdout
    assert text.splitlines()[1].startswith("# cgroup oom_kill: ")
    assert sum(1 for ln in text.splitlines() if ln.split()[1:2] == ["ended"]) == 2


def test_fork_worker_oom_killed_is_not_ended(lab, small_cog, stats_dir):
    """In a memory cgroup of its own, one fork worker grows past the limit and
    the kernel's OOM killer takes it: that worker is killed-or-gone (its
    cgroup's oom_kill count grew after it wrote), never "ended"."""
    cg_root = Path("/sys/fs/cgroup/memory")
    if not os.access(cg_root, os.W_OK):
        pytest.skip("needs root and a writable cgroup v1 memory hierarchy")
    env = vsitune_env(lab, stats_dir)
    # unique across PID namespaces too (scripts/test.sh runs roots' suites at once)
    cg = cg_root / f"tunerd-oom-{uuid.uuid4().hex[:12]}"
    cg.mkdir()
    try:
        (cg / "memory.limit_in_bytes").write_text(str(600 * 2**20))
        p = subprocess.run(["bash", "-c", f'echo $$ > {cg}/cgroup.procs && exec "$@"', "bash",
                            sys.executable, "-c", POOL, f"/vsis3/lab/{small_cog['key']}",
                            "1024"], env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        out = json.loads(p.stdout)
        assert out["broken"] is True
        oom = int(re.search(r"^oom_kill (\d+)", (cg / "memory.oom_control").read_text(),
                            re.M).group(1))
        assert oom >= 1
        # read while the cgroup (and its oom_kill file) is still there
        doc = stats_json(stats_dir)
        bash_pid = out["parent"]
        rows = {r["pid"]: r for r in doc["processes"]}
        assert rows[bash_pid]["state"] == "exited"
        children = [r for pid, r in rows.items() if pid != bash_pid]
        assert children, doc
        for r in children:
            assert r["process"]["oom_file"] == str(cg / "memory.oom_control")
            assert r["process"]["oom_kills"] < oom
            assert r["state"] == "killed-or-gone", r
    finally:
        for pid in (cg / "cgroup.procs").read_text().split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        for _ in range(100):
            try:
                cg.rmdir()
                break
            except OSError:
                import time
                time.sleep(0.05)


# The job: the parent imports rasterio and does nothing with GDAL, so the
# plugin is loaded by each fork worker after the fork (its first rasterio.open);
# `os` lets the workers fork a grandchild that reads too (its plugin state, in
# contrast, was made before its fork). Run under `tunerd exec`, as a deployment does.
LATE_POOL = r"""
import json, os, sys
import multiprocessing as mp
import rasterio
path = sys.argv[1]

def read(i):
    with rasterio.open(path) as ds:
        ds.read(1, window=(((i // 4) * 512, (i // 4) * 512 + 512),
                           ((i % 4) * 512, (i % 4) * 512 + 512)))

def work(i):
    read(i)
    if i == 0:                          # a grandchild, forked after this worker's reads
        pid = os.fork()
        if pid == 0:
            read(15)
            os._exit(0)
        os.waitpid(pid, 0)
        return [os.getpid(), pid]
    return [os.getpid()]

if __name__ == "__main__":
    with mp.get_context("fork").Pool(2) as pool:
        pids = sorted({p for r in pool.map(work, range(8)) for p in r})
    print(json.dumps({"parent": os.getpid(), "pids": pids}), flush=True)
"""


def test_plugin_loaded_after_the_fork_keeps_its_counters(lab, small_cog, stats_dir):
    """Issue 18 item 12: fork pool workers that load the plugin themselves (the
    parent only imported rasterio) are fork children all the same: their files say
    so, hold every request the lab saw (they leave through _exit() or Pool's
    SIGTERM, no exit dump) and `tunerd stats` and its Prometheus export call them
    ended, not killed-or-gone."""
    env = vsitune_env(lab, stats_dir)
    # tunerd's plan turns the shared cache on: a segment of this test's own
    env["VSITUNE_SHARED_CACHE_NAME"] = f"t{uuid.uuid4().hex[:12]}"
    p = subprocess.run([str(TUNERD), "exec", "--", sys.executable, "-c", LATE_POOL,
                        f"/vsis3/lab/{small_cog['key']}"], env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)
    doc = stats_json(stats_dir)
    rows = {r["pid"]: r for r in doc["processes"]}
    # the parent never loaded the plugin: no file of its own
    assert set(rows) == set(out["pids"]) and len(rows) == 3, (rows, out)
    for r in rows.values():
        assert r["process"]["forked"] is True, r
        assert r["state"] == "ended", r
    assert sum(1 for r in rows.values() if r["process"]["ppid"] == out["parent"]) == 2
    # every request the server saw is in a worker's file
    log = lab.log()
    assert sum(r["engine"]["requests"] for r in rows.values()) == len(log) > 0
    assert sum(r["engine"]["bytes_received"] for r in rows.values()) == \
        sum(e["bytes_sent"] for e in log)
    text = tunerd("stats", "--dir", stats_dir, "--format", "prometheus").stdout
    for pid in rows:
        assert f'vsitune_process_state{{pid="{pid}",state="ended"}} 1' in text, text
        assert f'vsitune_process_state{{pid="{pid}",state="killed-or-gone"}} 0' in text
