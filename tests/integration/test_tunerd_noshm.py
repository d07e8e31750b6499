#!/usr/bin/python3
"""test_tunerd_noshm.py: the Lambda plan runs where there is no /dev/shm.

Lambda has no /dev/shm, so Python's multiprocessing cannot make a semaphore
there: a Pool, a Queue, a Lock or a ProcessPoolExecutor fails (SemLock:
OSError errno 30 on a read-only /dev/shm, ENOENT/ENOSYS without one). Here
/dev/shm is hidden the cheap honest way: a private mount namespace (`unshare
-m`) with an empty read-only tmpfs over /dev/shm, for the command only; the
same works inside the roots scripts/test.sh runs the suite in.

- The plan `tunerd profile --platform lambda --memory 10240` prints (5
  processes, fork, TUNERD_IPC=pipe), run as printed with tunerd_plan.map over
  windows of the 212 MB s2 COG, finishes there: 5 worker processes each read
  through the plugin (each one's own request count, summed, is what the lab's
  log holds for the object), and every window equals the local file.
- What that plan meant before TUNERD_IPC (the docs' ProcessPoolExecutor, and
  multiprocessing.Pool) fails there, in the same namespace.
- tunerd run inside such a namespace plans pipes and no shared cache for this
  machine (host), where outside it plans a pool and the shared cache.
- The plugin asked for the shared cache there falls back to its per-process
  cache with one CPLDebug line, and the user sees what stock GDAL shows.
- tunerd_plan.map re-raises a worker's exception with its traceback text.

Run: /usr/bin/python3 -m pytest tests/integration/test_tunerd_noshm.py
Needs root (a mount namespace) and a built tree; VT_BUILD_DIR overrides build/.
"""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lab_client

REPO = Path(__file__).resolve().parents[2]
BUILD = lab_client.build_dir()
TUNERD = BUILD / "tunerd" / "tunerd"
PYDIR = REPO / "tunerd" / "python"

# an empty, read-only /dev/shm for the command only (Lambda's has none at all:
# sem_open fails either way, with EROFS here). The new namespace's mounts are made
# private before the mount, so it never propagates back: the whole tree where /
# is a mount point (the host), else /dev/shm itself (in a chroot, such as the
# roots of scripts/test.sh, where / is not one); if neither can be, no mount.
NOSHM = ["unshare", "--mount", "--propagation", "unchanged", "--", "/bin/sh", "-c",
         '{ mount --make-rprivate / 2>/dev/null || mount --make-private /dev/shm; } && '
         'mount -t tmpfs -o ro,size=64k vt-noshm /dev/shm && exec "$@"', "noshm"]

PLATFORM_VARS = ("AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "K_SERVICE",
                 "CLOUD_RUN_JOB", "FUNCTIONS_WORKER_RUNTIME", "KUBERNETES_SERVICE_HOST",
                 "TUNERD_SYSFS_ROOT", "TUNERD_PROCFS_ROOT", "VSITUNE_STATS_DIR",
                 "VSITUNE_SHM_DIR")

# 512 x 512 windows spread over the s2 COG (10980 px square): 10 windows, so
# each of 5 workers gets at least one first and the rest go to whoever is free
WINDOWS = [(x, y, 512, 512) for x, y in ((0, 0), (5120, 5120), (10240, 10240), (1024, 8704),
                                          (8704, 1024), (2560, 3072), (7168, 6656),
                                          (4608, 9728), (9728, 4608), (3584, 512))]

JOB = r"""
import hashlib, json, os, sys
sys.path.insert(0, sys.argv[1])
import tunerd_plan
from osgeo import gdal
gdal.UseExceptions()
path, windows = sys.argv[2], json.loads(sys.argv[3])

def read(win):
    ds = gdal.Open(path)
    data = ds.GetRasterBand(1).ReadAsArray(*win)
    drv = gdal.GetDriverByName("VSITUNE")
    live = json.loads(drv.GetMetadataItem("STATS")) if drv else None
    return {"pid": os.getpid(), "sha": hashlib.sha256(data.tobytes()).hexdigest(),
            "requests": live["engine"]["requests"] if live else None}

print(json.dumps({"parent": os.getpid(), "results": tunerd_plan.map(read, windows)}))
"""

# The plan as it was printed and documented before TUNERD_IPC (docs/packaging.md:
# ProcessPoolExecutor(TUNERD_WORKERS, mp_context=TUNERD_START_METHOD)), and a Pool.
OLD_JOB = r"""
import multiprocessing as mp, os, sys
from concurrent.futures import ProcessPoolExecutor
kind = sys.argv[1]
try:
    if kind == "executor":
        with ProcessPoolExecutor(max_workers=int(os.environ["TUNERD_WORKERS"]),
                                 mp_context=mp.get_context(os.environ["TUNERD_START_METHOD"])) as p:
            print(list(p.map(abs, [-1, -2])))
    else:
        with mp.get_context(os.environ["TUNERD_START_METHOD"]).Pool(
                int(os.environ["TUNERD_WORKERS"])) as p:
            print(p.map(abs, [-1, -2]))
except OSError as e:
    print("OSError", e.errno, e)
    sys.exit(3)
"""


def clean_env():
    return {k: v for k, v in os.environ.items() if k not in PLATFORM_VARS}


def tunerd(*args, env=None, prefix=()):
    assert TUNERD.exists(), f"{TUNERD} not built"
    e = env or clean_env()
    e["TUNERD_PROFILES_DIR"] = str(REPO / "profiles")
    p = subprocess.run([*prefix, str(TUNERD), *map(str, args)], capture_output=True,
                       text=True, timeout=60, env=e)
    assert p.returncode == 0, p.stderr
    return p


def env_lines(text):
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


@pytest.fixture(scope="module")
def noshm():
    """NOSHM works here (root, a kernel that allows mount namespaces), and
    really hides /dev/shm: a semaphore cannot be made inside."""
    if os.geteuid() != 0:
        pytest.skip("needs root: a mount namespace with /dev/shm hidden")
    p = subprocess.run([*NOSHM, sys.executable, "-c",
                        "import os; print(os.access('/dev/shm', os.W_OK))"],
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        pytest.skip(f"unshare -m / mount refused here: {p.stderr.strip()}")
    assert p.stdout.strip() == "False"
    return NOSHM


def lambda_plan():
    out = tunerd("profile", "--platform", "lambda", "--memory", "10240", "--format", "env",
                 "--plugin-dir", lab_client.plugin_dir()).stdout
    return env_lines(out)


def test_lambda_plan_says_pipes():
    """The plan itself: 5 fork processes that talk through pipes, each with its
    own range cache (no shared segment: there is no /dev/shm to put it in)."""
    plan = lambda_plan()
    assert plan["TUNERD_WORKERS"] == "5"
    assert plan["TUNERD_WORKER_KIND"] == "processes"
    assert plan["TUNERD_START_METHOD"] == "fork"
    assert plan["TUNERD_IPC"] == "pipe"
    assert "VSITUNE_SHARED_CACHE" not in plan
    # a platform with /dev/shm (Cloud Run) keeps pools
    cr = env_lines(tunerd("profile", "--platform", "cloudrun", "--memory", "8192", "--cpus",
                          "2", "--format", "env").stdout)
    assert cr["TUNERD_IPC"] == "pool" and cr["VSITUNE_SHARED_CACHE"] == "YES"


def test_lambda_plan_runs_without_dev_shm(noshm, lab, cogs, tmp_path):
    if not lab_client.plugin_built():
        pytest.skip("gdal_vsitune.so not built")
    from osgeo import gdal
    gdal.UseExceptions()
    s2 = cogs["s2"]
    plan = lambda_plan()
    env = lab_client.gdal_env(lab.env("h1"), vsitune=True)
    env.update(plan)
    env["VSITUNE_STATS_DIR"] = str(tmp_path / "stats")   # not the shared /tmp's
    path = f"/vsis3/{s2['bucket']}/{s2['key']}"
    lab.reset()
    p = subprocess.run([*noshm, sys.executable, "-c", JOB, str(PYDIR), path,
                        json.dumps(WINDOWS)], capture_output=True, text=True, timeout=600,
                       env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout)
    res = out["results"]

    ds = gdal.Open(s2["path"])
    band = ds.GetRasterBand(1)
    want = [hashlib.sha256(band.ReadAsArray(*w).tobytes()).hexdigest() for w in WINDOWS]
    assert [r["sha"] for r in res] == want                  # in order, equal to the file

    pids = {r["pid"] for r in res}
    assert len(pids) == 5 and out["parent"] not in pids    # all 5 workers read
    # each worker's own request count (its last answer), summed, is what the lab saw
    last = {}
    for r in res:
        assert r["requests"] is not None, "a worker ran without the plugin"
        last[r["pid"]] = max(last.get(r["pid"], 0), r["requests"])
    log = [e for e in lab.log() if e["path"].endswith(s2["key"])]
    assert all(n > 0 for n in last.values())
    assert sum(last.values()) == len(log), (last, len(log))
    assert all(e["method"] == "GET" and e["status"] == 206 for e in log)


@pytest.mark.parametrize("kind", ["executor", "pool"])
def test_old_lambda_plan_fails_without_dev_shm(noshm, kind):
    """The plan as printed before (5 processes, fork, a ProcessPoolExecutor or a
    multiprocessing Pool) cannot start there; on the host it can."""
    env = clean_env()
    env.update({"TUNERD_WORKERS": "5", "TUNERD_START_METHOD": "fork"})
    p = subprocess.run([*noshm, sys.executable, "-c", OLD_JOB, kind], capture_output=True,
                       text=True, timeout=120, env=env)
    assert p.returncode == 3 and p.stdout.startswith("OSError 30 "), (p.stdout, p.stderr)
    p = subprocess.run([sys.executable, "-c", OLD_JOB, kind], capture_output=True, text=True,
                       timeout=120, env=env)
    assert p.returncode == 0 and p.stdout.strip() == "[1, 2]", (p.stdout, p.stderr)


def test_detected_no_shm_plans_pipes(noshm):
    """On this machine (host), a /dev/shm that is read-only makes the plan use
    pipes and no shared cache; with /dev/shm, a pool and the shared cache."""
    args = ("profile", "--platform", "host", "--memory", "4096", "--cpus", "2",
            "--format", "env")
    here = env_lines(tunerd(*args).stdout)
    assert here["TUNERD_IPC"] == "pool" and here["VSITUNE_SHARED_CACHE"] == "YES"
    there = env_lines(tunerd(*args, prefix=noshm).stdout)
    assert there["TUNERD_IPC"] == "pipe" and "VSITUNE_SHARED_CACHE" not in there
    assert there["TUNERD_WORKERS"] == here["TUNERD_WORKERS"] == "2"
    det = json.loads(tunerd("detect", "--json", prefix=noshm).stdout)
    assert det["ipc"] == "pipe" and det["shared_cache_mb"] == 0
    assert "read-only" in det["shared_cache_source"]


def test_shared_cache_falls_back_with_one_line(noshm, gdal, cogs):
    """VSITUNE_SHARED_CACHE=YES without a usable /dev/shm: the plugin reads with
    its own cache and says so in one line, a notice (GDAL's debug channel, shown
    without CPL_DEBUG: the user asked for sharing); apart from vsitune's notices the
    user sees exactly what stock GDAL prints, and no warning or error."""
    s2 = cogs["s2"]
    args = [*noshm, "gdallocationinfo", "-valonly",
            f"/vsis3/{s2['bucket']}/{s2['key']}", "5000", "5000"]
    stock, _ = gdal.run(args)
    for debug in ("OFF", "VSITUNE"):
        tuned, _ = gdal.run(args, vsitune=True, extra={"VSITUNE_SHARED_CACHE": "YES",
                                                        "CPL_DEBUG": debug})
        assert stock.returncode == tuned.returncode == 0, (stock.stderr, tuned.stderr)
        assert tuned.stdout == stock.stdout
        lines = [ln for ln in tuned.stderr.splitlines() if "shared cache" in ln]
        assert len(lines) == 1 and "not used" in lines[0] and "per-process" in lines[0], lines
        if debug == "OFF":
            rest = [ln for ln in tuned.stderr.splitlines()
                    if not ln.startswith("VSITUNE: ")]
            assert rest == stock.stderr.splitlines(), tuned.stderr


def test_map_reraises_worker_exception(noshm):
    """A worker's exception is raised in the caller, with its traceback text."""
    code = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
import tunerd_plan
def f(x):
    if x == 3:
        raise ValueError("bad item %d in %d" % (x, os.getpid()))
    return x
try:
    tunerd_plan.map(f, range(8))
except ValueError as e:
    tb = str(e.__cause__)
    print("ValueError", type(e.__cause__).__name__, ", in f\n" in tb,
          "ValueError: bad item 3 in" in tb)
"""
    env = clean_env()
    env.update({"TUNERD_WORKERS": "3", "TUNERD_WORKER_KIND": "processes",
                "TUNERD_START_METHOD": "fork", "TUNERD_IPC": "pipe", "TUNERD_THREADS": "1"})
    p = subprocess.run([*noshm, sys.executable, "-c", code, str(PYDIR)], capture_output=True,
                       text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "ValueError _RemoteTraceback True True", p.stdout


def test_map_worker_that_dies(noshm):
    """A worker killed mid-item (as the OOM killer would) is a WorkerError naming
    its exit status, raised in the caller, not a hang; no worker is left behind."""
    code = r"""
import os, signal, sys
sys.path.insert(0, sys.argv[1])
import tunerd_plan
def f(x):
    if x == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return x
try:
    tunerd_plan.map(f, range(6))
except tunerd_plan.WorkerError as e:
    import multiprocessing
    print("WorkerError", "exit code -9" in str(e), len(multiprocessing.active_children()))
"""
    env = clean_env()
    env.update({"TUNERD_WORKERS": "3", "TUNERD_WORKER_KIND": "processes",
                "TUNERD_START_METHOD": "fork", "TUNERD_IPC": "pipe"})
    p = subprocess.run([*noshm, sys.executable, "-c", code, str(PYDIR)], capture_output=True,
                       text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "WorkerError True 0", p.stdout


@pytest.mark.parametrize("kind,workers,threads,want_pids", [
    ("threads", "1", "4", 1),                  # the Lambda tiles plan: the caller's threads
    ("processes-of-threads", "2", "2", 2),     # 2 processes of 2 threads, over pipes
    ("inline", "1", "1", 1),
])
def test_map_kinds(noshm, kind, workers, threads, want_pids):
    """Every kind of plan runs without /dev/shm, results in order."""
    code = r"""
import json, os, sys, threading, time
sys.path.insert(0, sys.argv[1])
import tunerd_plan
def f(x):
    time.sleep(0.05)
    return [x * 3, os.getpid(), threading.get_ident()]
print(json.dumps([os.getpid(), tunerd_plan.map(f, range(12))]))
"""
    env = clean_env()
    env.update({"TUNERD_WORKERS": workers, "TUNERD_WORKER_KIND": kind, "TUNERD_THREADS": threads,
                "TUNERD_START_METHOD": "fork", "TUNERD_IPC": "pipe"})
    p = subprocess.run([*noshm, sys.executable, "-c", code, str(PYDIR)], capture_output=True,
                       text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    parent, res = json.loads(p.stdout)
    assert [r[0] for r in res] == [x * 3 for x in range(12)]
    pids = {r[1] for r in res}
    assert len(pids) == want_pids
    assert (pids == {parent}) == (kind != "processes-of-threads")
    if kind != "inline":
        assert len({(r[1], r[2]) for r in res}) > want_pids   # more than one thread each
