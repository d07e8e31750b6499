"""parity.py: what the GDAL parity suite (test_parity_*.py) shares. No tests here.

The rule (issue 9): with the plugin loaded, every GDAL call returns what stock GDAL returns;
only the requests may differ. Each case runs the same thing twice against the lab, once
with stock GDAL and once with GDAL_DRIVER_PATH pointing at the plugin, each side in its own
process with a clean environment (lab_client.gdal_env), and compares what GDAL returned:

- `Side`: a long-lived parity_probe.py process for one side; `side.run([probe, ...])`.
  Cases that need steps in one process (overwrite then read) drive two Sides in lockstep.
- `both(lab, case, what, probes)`: one fresh probe process per side, in turn; returns the
  two result lists.
- `both_tool(lab, case, what, argv)`: a command-line tool (gdalinfo, ogrinfo, ...) per side;
  returns {"rc", "stdout", "errors"} per side (errors parsed from "ERROR n: ..." lines).
- `assert_same(stock, vt)`: deep equality, except error messages, which compare by gist:
  same CPLE class and number, and stock GDAL's message contained in the plugin's (the
  plugin may add S3's code and message): "errors" lists, "vsi_error" pairs and "message"
  strings. The failure message lists every difference.

Requests are recorded, never asserted equal: every run's slice of the lab's log is
summarised (counts by kind, bytes) under the case and step in
$VT_BUILD_DIR/parity/requests.json, rewritten after each record, and printed (pytest -s).
Keys a read-only run wrote (GML's .gfs, PAM's .aux.xml) are part of what is compared and
are deleted after the run, so the next side sees the bucket as the first did.
"""

import difflib
import json
import os
import re
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import pytest

import lab_client
import parity_fixtures
from test_vsitune_helpers import Worker

PY = "/usr/bin/python3"
HERE = Path(__file__).resolve().parent
PROBE = HERE / "parity_probe.py"
SIDES = ("stock", "vsitune")


def gdal_at_least(major, minor):
    """The GDAL under test (this Python's, the oracle's and the plugin's) is major.minor or
    later: for the few cases where stock GDAL itself changed between releases."""
    from osgeo import gdal
    return int(gdal.VersionInfo()) >= major * 1000000 + minor * 10000


# -- request records ------------------------------------------------------------------
class _Records:
    def __init__(self):
        self.data = {}
        self.path = lab_client.build_dir() / "parity" / "requests.json"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("{}\n")  # this session's records only

    def add(self, case, what, side, counts):
        self.data.setdefault(case, {}).setdefault(what, {})[side] = counts
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, self.path)
        print(f"parity requests {case}/{what} {side}: "
              + " ".join(f"{k}={v}" for k, v in counts.items() if v))


RECORDS = None


def records():
    global RECORDS
    if RECORDS is None:
        RECORDS = _Records()
    return RECORDS


def summarise(log):
    c = Counter(e["kind"] for e in log)
    out = {"total": len(log)}
    for k in ("LIST", "HEAD", "GET_RANGE", "GET", "PUT", "POST", "DELETE", "OTHER"):
        out[k] = c.get(k, 0)
    out["bytes"] = sum(e.get("bytes_sent") or 0 for e in log)
    return out


def last_seq(lab):
    log = lab.log()
    return log[-1]["seq"] if log else 0


def writes_since(lab, seq):
    """Keys written or deleted (by anyone but the control API) since seq."""
    return sorted({(e["method"], e["bucket"], e["key"]) for e in lab.log(since=seq)
                   if e["method"] in ("PUT", "POST", "DELETE") and e["key"]})


def undo_writes(lab, writes):
    for method, bucket, key in writes:
        if method in ("PUT", "POST"):
            try:
                lab.delete_object(bucket, key)
            except lab_client.LabError:
                pass


# -- fixtures on the lab ----------------------------------------------------------------
_UPLOADED = {}


def cases():
    return parity_fixtures.build()


def uploaded(lab):
    """Build (once) and upload (once per lab) every parity fixture; returns {name: Case}."""
    key = id(lab)
    if key not in _UPLOADED:
        cs = cases()
        parity_fixtures.upload(lab, cs)
        _UPLOADED[key] = cs
    return _UPLOADED[key]


# -- running GDAL ---------------------------------------------------------------------
def side_env(lab, vsitune, extra=None, endpoint="h1"):
    if vsitune and not lab_client.plugin_built():
        pytest.skip(f"gdal_vsitune.so not built in {lab_client.plugin_dir()}")
    return lab_client.gdal_env(lab.env(endpoint), vsitune=vsitune, extra=extra)


class Side(Worker):
    """One parity_probe.py process: stock GDAL (vsitune=False) or with the plugin. Reuses
    the Worker's answer channel (one JSON line per request, never hangs)."""

    def __init__(self, lab, vsitune, extra=None, endpoint="h1", env=None):  # noqa: super not called
        self.name = "vsitune" if vsitune else "stock"
        self.env = env or side_env(lab, vsitune, extra, endpoint)
        self._err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([PY, "-u", str(PROBE)], env=self.env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._err)
        self._buf = b""
        self.errors = []

    def run(self, probes, timeout=180):
        self.proc.stdin.write((json.dumps(probes) + "\n").encode())
        self.proc.stdin.flush()
        return json.loads(self._readline(timeout))["results"]


def one_side(lab, vsitune, probes, extra=None, endpoint="h1"):
    with Side(lab, vsitune, extra, endpoint) as s:
        res = s.run(probes)
        rc = s.close()
    return res, rc


def both(lab, case, what, probes, extra=None, extra_stock=None, extra_vt=None, endpoint="h1"):
    """Run `probes` in a fresh process per side (stock first). Each side's result list
    gets a final entry {"op": "process", "rc": exit status, "writes": keys it wrote}."""
    out = []
    for vsitune in (False, True):
        env_extra = dict(extra or {})
        env_extra.update((extra_vt if vsitune else extra_stock) or {})
        seq = last_seq(lab)
        res, rc = one_side(lab, vsitune, probes, env_extra, endpoint)
        records().add(case, what, "vsitune" if vsitune else "stock", summarise(lab.log(since=seq)))
        w = writes_since(lab, seq)
        undo_writes(lab, w)
        res.append({"op": "process", "rc": rc, "writes": [list(x) for x in w]})
        out.append(res)
    return out[0], out[1]


class Pairs:
    """Long-lived probe processes, one pair (stock, vsitune) per environment, shared by the
    cases of a test module: a case costs its probes, not two GDAL start-ups. Each case still
    runs stock then plugin, its requests recorded on their own, the keys it wrote undone.
    A side that dies is replaced and the case re-run in fresh processes, so one crash
    fails one case. Close it at the end of the module (the `pairs` fixtures do)."""

    def __init__(self, lab):
        self.lab = lab
        self.sides = {}

    def _side(self, vsitune, env):
        key = (vsitune, tuple(sorted(env.items())))
        if key not in self.sides or self.sides[key].proc.poll() is not None:
            self.sides[key] = Side(self.lab, vsitune, env)
        return self.sides[key]

    def both(self, case, what, probes, extra=None, extra_stock=None, extra_vt=None):
        """Like both(), in the shared processes; the final entry has "writes" (no exit
        status: the process lives on)."""
        out = []
        for vsitune in (False, True):
            env = dict(extra or {})
            env.update((extra_vt if vsitune else extra_stock) or {})
            seq = last_seq(self.lab)
            try:
                res = self._side(vsitune, env).run(probes)
            except lab_client.LabError:
                key = (vsitune, tuple(sorted(env.items())))
                self.sides.pop(key).close()
                res, _ = one_side(self.lab, vsitune, probes, env)
            records().add(case, what, "vsitune" if vsitune else "stock",
                          summarise(self.lab.log(since=seq)))
            w = writes_since(self.lab, seq)
            undo_writes(self.lab, w)
            res.append({"op": "process", "writes": [list(x) for x in w]})
            out.append(res)
        return out[0], out[1]

    def close(self):
        for s in self.sides.values():
            s.close()
        self.sides = {}


_ERR_LINE = re.compile(r"^(ERROR|Warning) (\d+): (.*)$")
# The plugin's one line per process on GDAL's debug channel (docs/compatibility.md; its
# own test: test_parity_formats.py::test_cog_notice_once_per_process): never an error
# line, nor a line of one.
COG_NOTICE = "VSITUNE: a COG is opened without looking for its sidecar files"


def parse_errors(stderr):
    """CPLError lines of a GDAL command-line tool: [[class, number, message], ...]."""
    out = []
    for line in stderr.splitlines():
        if line.startswith(COG_NOTICE):
            continue
        m = _ERR_LINE.match(line)
        if m:
            out.append([3 if m.group(1) == "ERROR" else 2, int(m.group(2)), m.group(3)])
        elif out and line and not line.startswith(("ERROR", "Warning")) and out[-1][0] == 3:
            out[-1][2] += "\n" + line  # a message on several lines
    return out


def tool(lab, argv, vsitune, extra=None, endpoint="h1", timeout=300):
    env = side_env(lab, vsitune, extra, endpoint)
    cp, _ = lab_client.run_tool(argv, env, timeout=timeout)
    return {"rc": cp.returncode, "stdout": cp.stdout, "errors": parse_errors(cp.stderr)}


def both_tool(lab, case, what, argv, extra=None, parse_json=False, endpoint="h1", timeout=300,
              extra_stock=None, extra_vt=None):
    out = []
    for vsitune in (False, True):
        env_extra = dict(extra or {})
        env_extra.update((extra_vt if vsitune else extra_stock) or {})
        seq = last_seq(lab)
        r = tool(lab, argv, vsitune, env_extra, endpoint, timeout)
        records().add(case, what, "vsitune" if vsitune else "stock", summarise(lab.log(since=seq)))
        w = writes_since(lab, seq)
        undo_writes(lab, w)
        r["writes"] = [list(x) for x in w]
        if parse_json and r["rc"] == 0:
            try:
                r["stdout"] = json.loads(r["stdout"])
            except ValueError:
                pass
        out.append(r)
    return out[0], out[1]


# -- comparing ------------------------------------------------------------------------
def _norm_msg(m):
    # curl's words carry how long a refused connection took ("after 2 ms"): a timing
    return re.sub(r"\bafter \d+ ms\b", "after N ms", " ".join(str(m).split()))


def gist_in(stock_msg, vt_msg):
    """Stock GDAL's message is in the plugin's, line by line (a tool's error block has a
    line per message: "The specified key does not exist." then "gdalinfo failed - ...")."""
    a, b = str(stock_msg).split("\n"), str(vt_msg).split("\n")
    return len(a) == len(b) and all(_norm_msg(x) in _norm_msg(y) for x, y in zip(a, b))


def errors_match(stock, vt):
    """Same errors and warnings in the same order: class and CPLE number equal, stock's
    message contained in the plugin's (the plugin may add S3's code and message)."""
    if len(stock) != len(vt):
        return False
    for (c1, n1, m1), (c2, n2, m2) in zip(stock, vt):
        if c1 != c2 or n1 != n2 or not gist_in(m1, m2):
            return False
    return True


def diff(a, b, path="", out=None, limit=40):
    """Every difference between a (stock) and b (vsitune), as 'path: stock != vsitune'."""
    if out is None:
        out = []
    if len(out) >= limit:
        return out
    if path.endswith(".errors") or path == "errors":
        if not (isinstance(a, list) and isinstance(b, list) and errors_match(a, b)):
            out.append(f"{path}: stock {a!r}\n      vsitune {b!r}")
        return out
    if path.endswith(".vsi_error"):  # [VSIGetLastErrorNo, message]: number equal, gist in
        if not (a[0] == b[0] and gist_in(a[1], b[1])):
            out.append(f"{path}: stock {a!r}\n      vsitune {b!r}")
        return out
    if path.endswith(".message") and isinstance(a, str) and isinstance(b, str):
        if not gist_in(a, b):  # an error message: compared by gist
            out.append(f"{path}: stock {a!r}\n      vsitune {b!r}")
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a:
                out.append(f"{path}.{k}: only with vsitune: {_short(b[k])}")
            elif k not in b:
                out.append(f"{path}.{k}: only in stock: {_short(a[k])}")
            else:
                diff(a[k], b[k], f"{path}.{k}", out, limit)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{path}[{i}]", out, limit)
    elif isinstance(a, str) and isinstance(b, str) and a != b and "\n" in a + b:
        lines = [ln for ln in difflib.unified_diff(a.splitlines(), b.splitlines(), "stock",
                                                   "vsitune", n=1, lineterm="")]
        out.append(f"{path}: text differs:\n        " + "\n        ".join(lines[:40]))
    elif a != b:
        out.append(f"{path}: stock {_short(a)}\n      vsitune {_short(b)}")
    return out


def _short(v, n=400):
    s = json.dumps(v, default=str) if not isinstance(v, str) else repr(v)
    return s if len(s) <= n else s[:n] + f"... ({len(s)} chars)"


def _label(results):
    """Name list entries of a probe result list by their op, for readable paths."""
    if isinstance(results, list) and results and all(isinstance(r, dict) and "op" in r for r in results):
        return {f"{i}:{r['op']}": r for i, r in enumerate(results)}
    return results


def assert_same(stock, vt, what=""):
    d = diff(_label(stock), _label(vt))
    assert not d, f"{what}: vsitune differs from stock GDAL:\n  " + "\n  ".join(d)


def assert_ok(results, what=""):
    """A sanity check on the stock side: the probe itself worked (no Python exception)."""
    bad = [r for r in results if "exception" in r]
    assert not bad, f"{what}: probe raised: {bad}"


def xfail(reason):
    """The mark for a case that differs today: strict, so a fix turns it into a failure
    (XPASS) that makes whoever fixed it remove the mark."""
    return pytest.mark.xfail(strict=True, reason=reason)
