"""common.py: what every benchmark scenario shares.

The three contenders and the environment each one runs with, the one way the suite
runs a child process (a watchdog that kills a run past its bound and keeps what the
child printed, so a stall is recorded as a stall instead of eating the time budget),
medians and ratios, the machine description, and the progress display.

Children (the probes in bench/probes/) print one JSON object per line on stdout;
the last line holding "result" is the run's result. Standard library only: this
module runs under /usr/bin/python3 and is imported by bench/run.py and by the
scenario modules; it never imports GDAL itself.
"""

import hashlib
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PROBES = BENCH / "probes"
PYTHON = "/usr/bin/python3"  # has osgeo, rasterio, numpy; the python3 on PATH may not

sys.path.insert(0, str(REPO / "tests" / "integration"))
sys.path.insert(0, str(REPO / "tests" / "lab"))
import lab_client  # noqa: E402  (the lab's Python client, owned by the lab)
import plugin_defaults  # noqa: E402  (the plugin's defaults, as the tests read them)

# TiTiler's recommended environment: what a well-read user of stock GDAL sets.
# "Recommended Configuration for dynamic tiling" of TiTiler's performance-tuning
# page (developmentseed/titiler, docs/src/advanced/performance_tuning.md), plus
# GDAL_INGESTED_BYTES_AT_OPEN from the environment of TiTiler's docker-compose.yml.
# GDAL_HTTP_VERSION=2 only where the endpoint speaks h2 (TITILER_H2): TiTiler's page
# says it only has an effect there, and AWS S3 answers HTTP/1.1 only.
TUNED = {
    "GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR",
    "CPL_VSIL_CURL_ALLOWED_EXTENSIONS": ".tif,.TIF,.tiff",
    "GDAL_HTTP_MERGE_CONSECUTIVE_RANGES": "YES",
    "GDAL_HTTP_MULTIPLEX": "YES",
    "VSI_CACHE": "TRUE",
    "VSI_CACHE_SIZE": "5000000",
    "CPL_VSIL_CURL_CACHE_SIZE": "20000000",  # as the page writes it (it says "200 Mb")
    "GDAL_CACHEMAX": "200",
    "GDAL_BAND_BLOCK_CACHE": "HASHSET",
    "GDAL_INGESTED_BYTES_AT_OPEN": "32768",
}
TITILER_H2 = {"GDAL_HTTP_VERSION": "2"}
TUNED_SOURCE = ("TiTiler's performance-tuning page, \"Recommended Configuration for dynamic "
                "tiling\" (developmentseed/titiler, docs/src/advanced/performance_tuning.md), "
                "and GDAL_INGESTED_BYTES_AT_OPEN from TiTiler's docker-compose.yml")

# Order matters: runs alternate in this order (A B C A B C ...).
CONTENDERS = ("stock", "tuned", "vsitune")
LABELS = {"stock": "stock GDAL (default)", "tuned": "stock GDAL, TiTiler's environment",
          "vsitune": "vsitune (no configuration)"}


def contender_env(lab, name, endpoint, build_dir, extra=None):
    """The full child environment for contender `name` against lab `endpoint`:
    the caller's environment scrubbed of AWS_/GDAL_/CPL_/VSI_/CURL_ variables,
    the lab's endpoint and credentials, then the contender's own settings.
    Only vsitune gets GDAL_DRIVER_PATH (and nothing else)."""
    env = lab_client.gdal_env(lab.env(endpoint), vsitune=False, extra=None)
    if name == "tuned":
        env.update(TUNED)
        if endpoint == "h2":
            env.update(TITILER_H2)
    elif name == "vsitune":
        env["GDAL_DRIVER_PATH"] = str(Path(build_dir) / "vsiplugin")
    elif name != "stock":
        raise ValueError(f"unknown contender {name!r}")
    env.setdefault("OMP_NUM_THREADS", "1")
    if extra:
        env.update(extra)
    return env


class RunResult:
    """What one child run produced: its last "result" object (or None), every
    progress line, wall seconds, exit status, and whether the watchdog fired."""

    def __init__(self, result, lines, wall, rc, timed_out, stdout, stderr):
        self.result = result
        self.lines = lines
        self.wall = wall
        self.rc = rc
        self.timed_out = timed_out
        self.stdout = stdout
        self.stderr = stderr

    @property
    def ok(self):
        return self.rc == 0 and not self.timed_out and self.result is not None

    def error(self):
        """A one-line reason for a failed run (for the results file)."""
        if self.timed_out:
            return f"killed by the watchdog after {self.wall:.1f} s"
        if self.rc != 0:
            tail = [ln for ln in self.stderr.strip().splitlines() if ln.strip()][-1:]
            return f"exit status {self.rc}: {tail[0][:300] if tail else 'no message'}"
        if self.result is None:
            return "the probe printed no result"
        return None


def run_child(argv, env, timeout, cwd=None):
    """Run argv with env, at most `timeout` seconds of wall time. The child gets
    its own session so the watchdog can kill it and everything it forked (by its
    process group id, which is the child's pid). Returns a RunResult; never raises
    for a failing child. Called from the main thread only."""
    t0 = time.monotonic()
    proc = subprocess.Popen([str(a) for a in argv], env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
    wall = time.monotonic() - t0
    lines, result = [], None
    for ln in out.splitlines():
        ln = ln.strip()
        if not ln.startswith("{"):
            continue
        try:
            obj = json.loads(ln)
        except ValueError:
            continue
        lines.append(obj)
        if "result" in obj:
            result = obj["result"]
    return RunResult(result, lines, wall, proc.returncode, timed_out, out or "", err or "")


GNU_TIME = "/usr/bin/time"  # Debian package `time`


def run_rusage(argv, env, timeout):
    """Run argv to completion and return (wall seconds, peak RSS kB, exit status,
    stdout, stderr tail). The peak RSS comes from GNU time (`time -f %M`), whose own small
    process forks the command: a child forked from this Python process would
    carry Python's high-water mark across exec (the kernel keeps ru_maxrss of
    the pre-exec memory), so os.wait4 here would report ~100 MB for `true`.
    Without GNU time the RSS is None. A run past `timeout` is killed and
    reported with status None."""
    rss_file = None
    cmd = [str(a) for a in argv]
    if os.access(GNU_TIME, os.X_OK):
        fd, rss_file = tempfile.mkstemp(prefix="vtbench-rss-")
        os.close(fd)
        cmd = [GNU_TIME, "-f", "%M", "-o", rss_file] + cmd
    t0 = time.monotonic()
    try:
        cp = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            timeout=timeout)
    except subprocess.TimeoutExpired:
        if rss_file:
            os.unlink(rss_file)
        return time.monotonic() - t0, None, None, "", f"killed after {timeout} s"
    wall = time.monotonic() - t0
    rss = None
    if rss_file:
        try:
            with open(rss_file) as fh:
                last = fh.read().strip().splitlines()[-1:]
            rss = int(last[0]) if last and last[0].isdigit() else None
        except OSError:
            pass
        os.unlink(rss_file)
    return (wall, rss, cp.returncode, cp.stdout.decode(errors="replace"),
            cp.stderr.decode(errors="replace")[-500:])


# -- statistics -------------------------------------------------------------------
def median(values):
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def ratio(a, b):
    """a / b, or None when either is missing or b is 0."""
    if a is None or b in (None, 0):
        return None
    return a / b


def request_summary(log):
    """Counts by kind from a slice of the lab's request log."""
    out = {"total": len(log), "bytes": sum(e.get("bytes_sent") or 0 for e in log)}
    for e in log:
        out[e.get("kind", "OTHER")] = out.get(e.get("kind", "OTHER"), 0) + 1
    out["errors"] = sum(1 for e in log if (e.get("status") or 0) >= 400)
    return out


def in_flight(log, one_way_s):
    """How many requests of a slice of the lab's log were in flight at once, as the
    client had them: each from its arrival at the lab less the one-way delay to its
    end (arrival + dur_ms) plus it (the delay proxy delays every chunk both ways).
    {"mean": their summed spans over the time any was in flight, "most": the peak,
    "busy_s": the time any was in flight}; None for an empty log."""
    spans = [(e["time"] - one_way_s, e["time"] + (e.get("dur_ms") or 0) / 1000 + one_way_s)
             for e in log if e.get("time") is not None]
    if not spans:
        return None
    most = cur = 0
    busy = last = 0.0
    # one sweep over starts (+1) and ends (-1); an end sorts before a start at the same instant
    for t, d in sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans]):
        if cur:
            busy += t - last
        cur, last = cur + d, t
        most = max(most, cur)
    total = sum(b - a for a, b in spans)
    return {"mean": total / busy if busy > 0 else None, "most": most, "busy_s": busy}


# -- machine description ----------------------------------------------------------
def _first(path, pattern):
    try:
        with open(path) as f:
            for ln in f:
                m = re.match(pattern, ln)
                if m:
                    return m.group(1).strip()
    except OSError:
        pass
    return None


def _version(argv):
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return (cp.stdout or cp.stderr).strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return None


def machine():
    """The machine the numbers were measured on (rendered above every table)."""
    mem_kb = _first("/proc/meminfo", r"MemTotal:\s+(\d+)")
    load = os.getloadavg()
    return {
        "nproc": os.cpu_count(),
        "cpu_model": _first("/proc/cpuinfo", r"model name\s*:\s*(.*)"),
        "memory_mb": int(mem_kb) // 1024 if mem_kb else None,
        "kernel": platform.release(),
        "os": _first("/etc/os-release", r'PRETTY_NAME="?([^"]*)"?'),
        "python": platform.python_version(),
        "gdal": _version(["gdalinfo", "--version"]),
        "curl": _version(["curl", "--version"]),
        "node": _version(["node", "--version"]),
        "nghttpx": _version(["nghttpx", "--version"]),
        "loadavg_at_start": [round(x, 2) for x in load],
    }


def source_dir(build_dir):
    """The source tree a CMake build directory was configured from (its
    CMakeCache.txt), so data files match the binaries; the repo if unknown."""
    if build_dir is None:
        return REPO
    try:
        with open(Path(build_dir) / "CMakeCache.txt") as fh:
            for ln in fh:
                if ln.startswith("CMAKE_HOME_DIRECTORY:"):
                    return Path(ln.split("=", 1)[1].strip())
    except OSError:
        pass
    return REPO


def plugin_cache_default_mb(build_dir):
    """VSITUNE_CACHE_SIZE's default, MiB, in the source the build was made from
    (common/defaults.h), so a page says the default its numbers were measured at."""
    return plugin_defaults.cache_size_default(source_dir(build_dir)) >> 20


def sha256(path):
    """Hex SHA-256 of a file (which plugin binary the numbers belong to)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def git_commit():
    try:
        cp = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, timeout=10)
        return cp.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


# -- progress -----------------------------------------------------------------------
class Progress:
    """One status line on stderr: scenario, step i/n, elapsed, and an estimate of
    what is left. Redrawn in place on a terminal, one line per step otherwise.
    Main thread only."""

    def __init__(self, stream=sys.stderr):
        self.stream = stream
        self.tty = stream.isatty()
        self.t0 = time.monotonic()
        self.scenario = ""
        self.total = 0
        self.done = 0
        self.s_t0 = self.t0

    def start(self, scenario, total):
        self._finish_line()
        self.scenario, self.total, self.done = scenario, max(1, total), 0
        self.s_t0 = time.monotonic()
        self.show("starting")

    def step(self, what):
        self.done += 1
        self.show(what)

    def show(self, what):
        now = time.monotonic()
        spent = now - self.s_t0
        eta = spent / self.done * (self.total - self.done) if self.done else None
        msg = (f"[{_mmss(now - self.t0)}] {self.scenario}: {self.done}/{self.total}"
               f"{'' if eta is None else ' (~' + _mmss(eta) + ' left)'}  {what}")
        if self.tty:
            self.stream.write("\r\x1b[K" + msg[:160])
        else:
            self.stream.write(msg + "\n")
        self.stream.flush()

    def note(self, msg):
        self._finish_line()
        self.stream.write(f"[{_mmss(time.monotonic() - self.t0)}] {msg}\n")
        self.stream.flush()

    def _finish_line(self):
        if self.tty and self.scenario:
            self.stream.write("\n")
            self.stream.flush()


def _mmss(s):
    s = int(s)
    return f"{s // 60:d}:{s % 60:02d}"
