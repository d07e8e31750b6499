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

What served each side is asserted once per process, before it is compared (issue 18:
a plugin that declined to load would make every case compare stock with stock):
- a probe process (`Side`), when it starts: stock has no VSITUNE driver; the plugin side
  has it, on /vsis3/, and sends what only the plugin sends: one VSIStatL of a name whose
  bucket's path-specific options point at a recorder of this module (never the lab, so no
  case's log slice changes) must reach it as a range GET with vsitune's User-Agent (stock
  GDAL would send a HEAD), counted by the plugin's own STATS;
- a tool run (`tool`, `both_tool`), after it exits: the plugin writes its counters to
  VSITUNE_STATS_FILE at exit: none on the stock side; on the plugin side a document that
  names /vsis3/ and counts, among the requests that got an answer, as many as the lab saw
  with vsitune's User-Agent during the run.
`served_failures()` gives the failures as text, for the test of the check itself
(test_parity_served.py).

Requests are recorded, never asserted equal: every run's slice of the lab's log is
summarised (counts by kind, bytes) under the case and step in
$VT_BUILD_DIR/parity/requests.json, rewritten after each record, and printed (pytest -s).
Keys a read-only run wrote (GML's .gfs, PAM's .aux.xml) are part of what is compared and
are deleted after the run, so the next side sees the bucket as the first did.
"""

import difflib
import http.server
import json
import os
import re
import subprocess
import tempfile
import threading
import uuid
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


# -- request sequences (scripts/reqseq.py; docs/architecture.md "Proving no behaviour change") --
# Opt-in: with VT_RECORD_SEQ=FILE, every case's plugin side appends its slice of the lab's
# log to FILE, one JSON line per run, keyed by pytest's test id, case, step and the run's
# number within the test; conftest.py appends the whole log of the other tests that used
# the lab. Raw fields only: what counts as equal (concurrent requests, signatures) is
# scripts/reqseq.py's to decide, so a rule can change without running GDAL again.
# Taken out of the environment: a pytest this one starts (test_parity_served.py runs the suite
# against a declining plugin) must not append its runs under the same test ids.
SEQ_FILE = os.environ.pop("VT_RECORD_SEQ", None)
_SEQ_RUNS = Counter()
_SEQ_FIELDS = ("seq", "time", "dur_ms", "endpoint", "method", "kind", "bucket", "key",
               "query", "range", "status", "fault")


def record_seq(case, what, log, test=None):
    """Append one run's requests (the lab's log entries, ordered by seq) to VT_RECORD_SEQ,
    keyed by `test` (default: the running pytest test's id)."""
    if not SEQ_FILE:
        return
    test = test or os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
    _SEQ_RUNS[(test, case, what)] += 1
    reqs = []
    for e in sorted(log, key=lambda e: e["seq"]):
        r = {k: e.get(k) for k in _SEQ_FIELDS}
        r["if_match"] = bool(e.get("if_match"))
        r["ua"] = (e.get("user_agent") or "").split("/", 1)[0]
        reqs.append(r)
    line = {"test": test, "case": case, "what": what, "n": _SEQ_RUNS[(test, case, what)],
            "requests": reqs}
    with open(SEQ_FILE, "a") as f:
        f.write(json.dumps(line, sort_keys=True) + "\n")


def _record(lab, case, what, vsitune, seq):
    """A side's requests since seq: summarised into requests.json; the plugin's sequence
    also to VT_RECORD_SEQ."""
    log = lab.log(since=seq)
    records().add(case, what, "vsitune" if vsitune else "stock", summarise(log))
    if vsitune:
        record_seq(case, what, log)


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


# -- what served each side --------------------------------------------------------------
CHECK_BUCKET = "vsitune-served-check"
VT_UA = "vsitune/"  # the User-Agent prefix of the plugin's own requests


class _CheckHandler(http.server.BaseHTTPRequestHandler):
    """Records each request (method, path, Range, User-Agent) and answers S3's 404."""
    BODY = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code>'
            b'<Message>The specified key does not exist.</Message></Error>')

    def _answer(self):
        self.server.seen.append({"method": self.command, "path": self.path,
                                 "range": self.headers.get("Range"),
                                 "user_agent": self.headers.get("User-Agent") or ""})
        self.send_response(404)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(self.BODY)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(self.BODY)

    do_GET = do_HEAD = _answer

    def log_message(self, *a):
        pass


_RECORDER = None


def recorder():
    """The check's S3 stand-in on 127.0.0.1 (one per test process, started on first use)."""
    global _RECORDER
    if _RECORDER is None:
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _CheckHandler)
        srv.daemon_threads = True
        srv.seen = []
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        _RECORDER = srv
    return _RECORDER


def served_probe(vsitune, env):
    """The probe that asks a process what serves /vsis3/, and the name it stats (with an
    extension CPL_VSIL_CURL_ALLOWED_EXTENSIONS lets through, as GDAL refuses the others
    without a request)."""
    if not vsitune:
        return [{"op": "served_by"}], None
    allowed = [e.strip() for e in env.get("CPL_VSIL_CURL_ALLOWED_EXTENSIONS", ".tif").split(",")]
    key = uuid.uuid4().hex + ("" if "{noext}" in allowed else allowed[0])
    port = recorder().server_address[1]
    return [{"op": "served_by", "path": f"/vsis3/{CHECK_BUCKET}/{key}",
             "scope": f"/vsis3/{CHECK_BUCKET}/",
             "options": {"AWS_S3_ENDPOINT": f"127.0.0.1:{port}", "AWS_HTTPS": "NO",
                         "AWS_VIRTUAL_HOSTING": "FALSE", "AWS_NO_SIGN_REQUEST": "YES"}}], key


def served_failures(vsitune, result, key, env):
    """What is wrong with a probe process's answer to served_probe: [] when the side is
    served as its name says."""
    where = f"GDAL_DRIVER_PATH={env.get('GDAL_DRIVER_PATH')!r}"
    if "exception" in result:
        return [f"the check probe raised: {result['exception']}"]
    v = result["value"]
    if not vsitune:
        return [f"stock side: the VSITUNE driver is registered ({where})"] if v["driver"] else []
    if not v["driver"]:
        return [f"plugin side: no VSITUNE driver, this is stock GDAL ({where}): the plugin "
                f"did not load or declined to (see its warning on stderr)"]
    bad = []
    if v["prefix"] != "/vsis3/":
        bad.append(f"plugin side: vsitune serves {v['prefix']!r}, not /vsis3/")
    mine = [e for e in recorder().seen if e["path"].split("?")[0].endswith("/" + key)]
    own_ua = "GDAL_HTTP_USERAGENT" not in env
    if not any(e["method"] == "GET" and e["range"] and
               (not own_ua or e["user_agent"].startswith(VT_UA)) for e in mine):
        bad.append(f"plugin side: the stat of {key} did not reach the recorder as vsitune's "
                   f"range GET: {mine}")
    if any(e["method"] == "HEAD" for e in mine):
        bad.append(f"plugin side: the stat of {key} sent a HEAD (stock GDAL's): {mine}")
    if not (v["requests"] or 0) >= 1:
        bad.append(f"plugin side: its STATS counted {v['requests']} request(s) for the stat")
    return bad


def expected_prefix(env):
    """Where the plugin serves with env: /vsitune/ with VSITUNE_TAKEOVER off, else /vsis3/."""
    off = str(env.get("VSITUNE_TAKEOVER", "")).upper() in ("NO", "FALSE", "OFF", "0")
    return "/vsitune/" if off else "/vsis3/"


def tool_served_failures(lab, vsitune, env, seq, stats_file, need_request=False):
    """The same for a process that has exited (a tool), from the document the plugin wrote
    at exit to VSITUNE_STATS_FILE (stats_file): none on the stock side; on the plugin side
    one that names the prefix it should serve and, with a lab, counts among the requests
    that got an answer as many as the lab saw since seq with vsitune's User-Agent; with
    need_request (a run against another server: test_gdal_autotest.py), at least one."""
    path = Path(stats_file)
    if not vsitune:
        return [f"stock side: the plugin wrote {path} (its exit dump): it was loaded"] \
            if path.exists() else []
    if not path.exists():
        return [f"plugin side: no counters at exit in {path}: the plugin did not load or "
                f"declined to (GDAL_DRIVER_PATH={env.get('GDAL_DRIVER_PATH')!r})"]
    doc = json.loads(path.read_text())
    bad = []
    if doc.get("prefix") != expected_prefix(env):
        bad.append(f"plugin side: vsitune served {doc.get('prefix')!r}, not "
                   f"{expected_prefix(env)}")
    if need_request and not doc["engine"]["requests"] >= 1:
        bad.append("plugin side: its counters say it sent no request")
    if lab is not None and "GDAL_HTTP_USERAGENT" not in env:
        answered = sum(n for kind in doc["http"].values() for cls, n in kind.items()
                       if cls != "none")
        saw = sum(1 for e in lab.log(since=seq) if (e["user_agent"] or "").startswith(VT_UA))
        if saw != answered:
            bad.append(f"plugin side: its counters say {answered} answered request(s), the "
                       f"lab saw {saw} with vsitune's User-Agent")
    return bad


def assert_served(bad):
    assert not bad, "what served this side is not what its name says:\n  " + "\n  ".join(bad)


# -- running GDAL ---------------------------------------------------------------------
def side_env(lab, vsitune, extra=None, endpoint="h1"):
    if vsitune and not lab_client.plugin_built():
        pytest.skip(f"gdal_vsitune.so not built in {lab_client.plugin_dir()}")
    return lab_client.gdal_env(lab.env(endpoint), vsitune=vsitune, extra=extra)


class Side(Worker):
    """One parity_probe.py process: stock GDAL (vsitune=False) or with the plugin. Reuses
    the Worker's answer channel (one JSON line per request, never hangs). Checks what
    serves it when it starts (served_failures): a side that is not what its name says
    raises AssertionError, its process closed."""

    def __init__(self, lab, vsitune, extra=None, endpoint="h1", env=None):  # noqa: super not called
        self.name = "vsitune" if vsitune else "stock"
        self.env = env or side_env(lab, vsitune, extra, endpoint)
        self._err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([PY, "-u", str(PROBE)], env=self.env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._err)
        self._buf = b""
        self.errors = []
        try:
            probe, key = served_probe(vsitune, self.env)
            bad = served_failures(vsitune, self.run(probe)[0], key, self.env)
            assert_served([f"{b}; stderr: {self.stderr()[-600:]}" for b in bad])
        except BaseException:
            self.close()
            raise

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
        _record(lab, case, what, vsitune, seq)
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
            _record(self.lab, case, what, vsitune, seq)
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
    """A command-line tool on one side; what served it is checked after it exits
    (tool_served_failures: the plugin's exit document in VSITUNE_STATS_FILE)."""
    env = side_env(lab, vsitune, extra, endpoint)
    with tempfile.TemporaryDirectory() as d:
        # the caller's own exit document (it reads the counters after), else ours
        env.setdefault("VSITUNE_STATS_FILE", os.path.join(d, "exit.json"))
        seq = last_seq(lab)
        cp, _ = lab_client.run_tool(argv, env, timeout=timeout)
        assert_served(tool_served_failures(lab, vsitune, env, seq, env["VSITUNE_STATS_FILE"]))
    return {"rc": cp.returncode, "stdout": cp.stdout, "errors": parse_errors(cp.stderr)}


def both_tool(lab, case, what, argv, extra=None, parse_json=False, endpoint="h1", timeout=300,
              extra_stock=None, extra_vt=None):
    out = []
    for vsitune in (False, True):
        env_extra = dict(extra or {})
        env_extra.update((extra_vt if vsitune else extra_stock) or {})
        seq = last_seq(lab)
        r = tool(lab, argv, vsitune, env_extra, endpoint, timeout)
        _record(lab, case, what, vsitune, seq)
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
    # curl's words carry how long a refused connection took ("after 2 ms"): a timing;
    # Azure's error messages name the request and its time (RequestId:, Time:)
    m = re.sub(r"\b(RequestId|Time):\S+", r"\1:N", str(m))
    return re.sub(r"\bafter \d+ ms\b", "after N ms", " ".join(m.split()))


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
