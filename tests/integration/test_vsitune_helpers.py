"""test_vsitune_helpers.py: what the vsitune integration tests share (no tests here).

The test_vsitune_*.py files check the plugin's read path (issue 3) against the lab
(tests/lab/labd.js) with counts and sequences read from the lab's request log.
They share three things, kept here so each test file states only what it checks:

- `Worker`: a long-lived /usr/bin/python3 child that imports osgeo.gdal with
  GDAL_DRIVER_PATH already in its environment (GDAL loads plugins when it is
  imported, so the variable must be set before that, i.e. in a child process),
  and runs snippets the test sends it one at a time. Tests use it when something
  must happen between two steps of one GDAL process (arm a fault after the open,
  replace the object between the header GET and a tile read, open twice).
- `sigcheck`: an autouse fixture (import it into a test module to enable it) that
  fails a test when any request the lab saw during it did not pass the lab's
  SigV4 verifier, unless the test says which other verdicts it expects.
- small helpers: local reference runs, request-log filters.

Always run with /usr/bin/python3 (it has osgeo, rasterio, numpy, pytest).
"""

import json
import os
import select
import subprocess
import tempfile
import time

import pytest

import lab_client

PY = "/usr/bin/python3"
VT_UA = "vsitune/"  # the User-Agent prefix of requests vsitune itself makes
TEST_UA = "vsitune-itests"  # User-Agent of the tests' own unsigned checks of the bucket

# The worker's own program. It reads one JSON object per line on stdin:
# {"code": "..."}; runs the code with `result = None` preset and answers one JSON
# line on its private copy of stdout: {"ok": true, "result": ..., "errors": [...]}
# or {"ok": false, "error": "...", "errors": [...], "cpl": "..."}, where errors
# lists every CPLError the snippet caused (a Python error handler collects them). Anything the code or GDAL prints
# goes to stderr, so the answer channel stays clean.
WORKER_SRC = r'''
import ctypes, json, os, sys, traceback
out = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr
import numpy as np
from osgeo import gdal
gdal.UseExceptions()

def _loaded_libgdal():
    """The libgdal osgeo loaded (its soname differs per GDAL release)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "/libgdal.so." in path:
                return ctypes.CDLL(path)
    raise OSError("libgdal is not loaded in this process")

_lib = _loaded_libgdal()
_lib.VSIFOpenL.restype = ctypes.c_void_p
_lib.VSIFOpenL.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
_lib.VSIFCloseL.argtypes = [ctypes.c_void_p]
_lib.VSIFReadMultiRangeL.restype = ctypes.c_int
_lib.VSIFReadMultiRangeL.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                                     ctypes.POINTER(ctypes.c_uint64),
                                     ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p]

def read_multi(path, ranges):
    """VSIFReadMultiRangeL (not exposed by the 3.6 Python bindings) through
    ctypes on one fresh handle: a list of bytes objects, or None on failure."""
    fp = _lib.VSIFOpenL(path.encode(), b"rb")
    if not fp:
        raise OSError("VSIFOpenL failed: " + path)
    try:
        n = len(ranges)
        bufs = [ctypes.create_string_buffer(max(1, ln)) for _, ln in ranges]
        pbufs = (ctypes.c_void_p * n)(*[ctypes.cast(b, ctypes.c_void_p) for b in bufs])
        offs = (ctypes.c_uint64 * n)(*[o for o, _ in ranges])
        lens = (ctypes.c_size_t * n)(*[ln for _, ln in ranges])
        rc = _lib.VSIFReadMultiRangeL(n, pbufs, offs, lens, ctypes.c_void_p(fp))
        if rc != 0:
            return None
        return [b.raw[:ln] for b, (_, ln) in zip(bufs, ranges)]
    finally:
        _lib.VSIFCloseL(ctypes.c_void_p(fp))

def read_all(path):
    """The whole object through VSIFReadL."""
    f = gdal.VSIFOpenL(path, "rb")
    if f is None:
        raise OSError("cannot open " + path)
    try:
        chunks = []
        while True:
            b = gdal.VSIFReadL(1, 1 << 20, f)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    finally:
        gdal.VSIFCloseL(f)

errors = []  # every CPLError of the current snippet: [class, number, message]
gdal.PushErrorHandler(lambda cls, no, msg: errors.append([cls, no, msg]))
ns = {"gdal": gdal, "np": np, "read_multi": read_multi, "read_all": read_all, "os": os}
for line in sys.stdin:
    req = json.loads(line)
    ns["result"] = None
    del errors[:]
    try:
        exec(req["code"], ns)
        ans = {"ok": True, "result": ns["result"], "errors": errors}
    except Exception as e:
        ans = {"ok": False, "error": "%s: %s" % (type(e).__name__, e), "errors": errors,
               "cpl": gdal.GetLastErrorMsg(), "trace": traceback.format_exc()}
    out.write(json.dumps(ans) + "\n")
    out.flush()
'''


class WorkerError(RuntimeError):
    """The snippet raised in the worker; .answer holds error, errors (every
    CPLError it raised: [class, number, message]), cpl and trace."""

    def __init__(self, answer):
        super().__init__(answer.get("error"))
        self.answer = answer


class Worker:
    """One /usr/bin/python3 + osgeo.gdal child process pointed at the lab
    (`endpoint`), with the plugin loaded when vsitune=True. Not thread-safe: one
    test drives it. Always close() it (use it as a context manager)."""

    def __init__(self, lab, endpoint="h1", vsitune=True, extra=None):
        if vsitune and not lab_client.plugin_built():
            pytest.skip(f"gdal_vsitune.so not built in {lab_client.plugin_dir()}")
        env = lab_client.gdal_env(lab.env(endpoint), vsitune=vsitune, extra=extra)
        self._err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([PY, "-u", "-c", WORKER_SRC], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._err)
        self._buf = b""
        self.errors = []  # the CPLErrors of the last call: [class, number, message]
        # what serves it, once (issue 18): the VSITUNE driver with the plugin, none without
        try:
            has = self.call("result = gdal.GetDriverByName('VSITUNE') is not None")
            assert has == vsitune, (
                f"what served this side is not what its name says: vsitune={vsitune} but the "
                f"VSITUNE driver is {'' if has else 'not '}registered "
                f"(GDAL_DRIVER_PATH={env.get('GDAL_DRIVER_PATH')!r}); stderr: "
                f"{self.stderr()[-600:]}")
        except BaseException:
            self.close()
            raise

    def call(self, code, timeout=120, **params):
        """Run `code` (which sets `result`) with `params` bound as variables;
        returns the JSON-decoded result or raises WorkerError. Never hangs: past
        `timeout` seconds the worker is killed and LabError raised."""
        prelude = "".join(f"{k} = json.loads({json.dumps(json.dumps(v))})\n"
                          for k, v in params.items())
        src = ("import json\n" + prelude + code) if params else code
        self.proc.stdin.write((json.dumps({"code": src}) + "\n").encode())
        self.proc.stdin.flush()
        ans = json.loads(self._readline(timeout))
        self.errors = ans.get("errors", [])
        if not ans["ok"]:
            raise WorkerError(ans)
        return ans["result"]

    def _readline(self, timeout):
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self.proc.kill()
                raise lab_client.LabError(f"GDAL worker gave no answer within {timeout} s; "
                                          f"stderr: {self.stderr()[-2000:]}")
            r, _, _ = select.select([fd], [], [], min(left, 0.5))
            if r:
                chunk = os.read(fd, 65536)
                if not chunk:
                    self.proc.wait(timeout=10)
                    raise lab_client.LabError(f"GDAL worker exited ({self.proc.returncode}); "
                                              f"stderr: {self.stderr()[-2000:]}")
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode()

    def stderr(self):
        self._err.seek(0)
        return self._err.read().decode("utf-8", "replace")

    def close(self, timeout=60):
        """Close stdin and wait for a clean exit; returns the exit status.
        A worker still alive after `timeout` is killed (and the status says so)."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        for s in (self.proc.stdout,):
            s.close()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class SigCheck:
    """What sigcheck accepts: `allowed` verdicts (default only "ok")."""

    def __init__(self):
        self.allowed = {"ok"}


@pytest.fixture(autouse=True)
def sigcheck(lab):
    """Every request GDAL or vsitune made during the test passed SigV4 (sig ==
    "ok"), unless the test widened `sigcheck.allowed`. Checked after the test
    body. Requests a test makes itself to look at the bucket (User-Agent
    TEST_UA) are not checked here; stock GDAL sends no User-Agent at all."""
    chk = SigCheck()
    yield chk
    bad = [(e["method"], e["path"], e["sig"], e["status"]) for e in lab.log()
           if e["user_agent"] != TEST_UA and e["sig"] not in chk.allowed]
    assert not bad, f"requests with a SigV4 verdict not in {sorted(chk.allowed)}: {bad[:10]}"


# -- request-log helpers --------------------------------------------------------
def kinds(log):
    return [e["kind"] for e in log]


def by_vsitune(log):
    return [e for e in log if (e["user_agent"] or "").startswith(VT_UA)]


def not_by_vsitune(log):
    return [e for e in log if not (e["user_agent"] or "").startswith(VT_UA)]


def last_seq(lab):
    log = lab.log()
    return log[-1]["seq"] if log else 0


# -- local reference runs -------------------------------------------------------
def run_local(args, timeout=300):
    """A GDAL tool on local files, stock GDAL (no plugin, no lab settings)."""
    env = lab_client.gdal_env({}, vsitune=False)
    cp, _ = lab_client.run_tool(args, env, timeout=timeout)
    assert cp.returncode == 0, f"local reference run failed: {args}\n{cp.stderr}"
    return cp


def s3path(cog):
    return f"/vsis3/{cog['bucket']}/{cog['key']}"
