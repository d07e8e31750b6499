"""lab_client.py: start, drive and stop the S3 test lab (tests/lab/labd.js) from Python.

The integration tests, the demo and the benchmarks all use this one client, so the
lab's control API has a single caller to keep in step with. Standard library only
(it runs under /usr/bin/python3 and under any other Python 3).

    lab = Lab().start()                 # or: with Lab() as lab: ...
    env = lab.env("h2", delay_ms=10)    # AWS_S3_ENDPOINT, credentials, CA bundle
    ...run GDAL with env...
    lab.counts()  -> {"LIST": 1, "HEAD": 0, "GET_RANGE": 2, ..., "bytes": n}
    lab.stop()
"""

import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LAB_DIR = REPO / "tests" / "lab"
ENDPOINTS = ("h1", "h2", "h1tls")
# The fault proxy's endpoints (tests/lab/lib/faultproxy.js): HTTP/1.1 and h2 over TLS.
PROXY_ENDPOINTS = ("fp1", "fp2")


class LabError(RuntimeError):
    """The lab could not start, or its control API refused a request."""


class Lab:
    """One running labd.js process. Not thread-safe for start/stop; the query
    methods may be called from any thread (each is one HTTP request)."""

    def __init__(self):
        self.proc = None
        self.dir = None
        self.info = None
        self._own_dir = False

    # -- lifecycle ---------------------------------------------------------
    def start(self, dir=None, delay_ms=0, timeout=30.0):
        """Start labd.js in `dir` (a new temporary directory when None) and wait,
        at most `timeout` seconds, for it to print READY. Returns self."""
        if self.proc is not None:
            raise LabError("lab already started")
        if not (LAB_DIR / "node_modules" / "s3rver").is_dir():
            raise LabError(f"the lab's npm packages are missing: run 'npm ci' in {LAB_DIR} "
                           "(scripts/setup.sh does)")
        node = os.environ.get("VT_NODE") or shutil.which("node")
        if not node:
            raise LabError("node (Node.js >= 18) is not installed")
        if dir is None:
            dir = tempfile.mkdtemp(prefix="vtlab-")
            self._own_dir = True
        self.dir = Path(dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        stderr = open(self.dir / "labd.stderr", "wb")
        try:
            # stdin is a pipe labd watches: if this process dies, the lab goes too.
            self.proc = subprocess.Popen(
                [node, str(LAB_DIR / "labd.js"), "--dir", str(self.dir),
                 "--delay-ms", str(delay_ms)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                cwd=str(LAB_DIR))
        finally:
            stderr.close()
        line = self._wait_ready(timeout)
        if not line.startswith("READY"):
            err = self._stderr_tail()
            self.stop()
            raise LabError(f"lab failed to start: {line or 'no output'}\n{err}")
        with open(self.dir / "lab.json") as f:
            self.info = json.load(f)
        return self

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        buf = b""
        fd = self.proc.stdout.fileno()
        while time.monotonic() < deadline:
            if b"\n" in buf:
                return buf.split(b"\n", 1)[0].decode("utf-8", "replace")
            r, _, _ = select.select([fd], [], [], max(0.0, min(0.2, deadline - time.monotonic())))
            if r:
                chunk = os.read(fd, 4096)
                if not chunk:  # EOF: labd exited
                    self.proc.wait(timeout=5)
                    return f"labd exited with status {self.proc.returncode}"
                buf += chunk
        return f"labd did not report READY within {timeout:.0f} s"

    def _stderr_tail(self):
        try:
            return (self.dir / "labd.stderr").read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def stop(self, timeout=10.0):
        """Stop labd (SIGTERM, then SIGKILL after `timeout`) and make sure its
        nghttpx children are gone. Idempotent."""
        if self.proc is None:
            return
        pids = list((self.info or {}).get("pids", [])[1:])
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        deadline = time.monotonic() + 5
        for pid in pids:  # the nghttpx children labd started (they die with it)
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.proc = None
        if self._own_dir and self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        if self.proc is None:
            self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    # -- control API -------------------------------------------------------
    def _call(self, method, path, body=None, query=None, data=None, timeout=120):
        if self.info is None:
            raise LabError("lab not started")
        url = self.info["control"]["url"] + path
        if query:
            url += "?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
        headers = {}
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                msg = json.loads(e.read()).get("error")
            except ValueError:
                msg = str(e)
            raise LabError(f"lab {method} {path}: {msg}") from None

    def env(self, endpoint="h1", delay_ms=None):
        """Environment variables pointing GDAL at `endpoint` (h1, h2, h1tls).
        With delay_ms, also sets that endpoint's one-way delay now."""
        if endpoint not in ENDPOINTS + PROXY_ENDPOINTS:
            raise LabError(f"unknown endpoint {endpoint!r}; known: "
                           f"{', '.join(ENDPOINTS + PROXY_ENDPOINTS)}")
        if delay_ms is not None:
            self.set_delay(delay_ms, endpoint)
        return dict(self.info["endpoints"][endpoint]["env"])

    def endpoint_url(self, endpoint="h1"):
        ep = self.info["endpoints"][endpoint]
        return f"{'https' if ep['https'] else 'http'}://127.0.0.1:{ep['port']}"

    def object_url(self, bucket, key, endpoint="h1"):
        return f"{self.endpoint_url(endpoint)}/{bucket}/{urllib.parse.quote(key, safe='/~')}"

    def web_url(self, bucket, key, options, endpoint="h1", query=None):
        """URL of bucket/key behind the lab's /_web/<options>/ behaviours (tests/lab/lib/
        webroutes.js: norange, nohead=405|403, noetag, nolm, token, redirect=302|307, ttl=N)."""
        url = f"{self.endpoint_url(endpoint)}/_web/{options}/{bucket}/{urllib.parse.quote(key, safe='/~')}"
        return url + ("?" + urllib.parse.urlencode(query) if query else "")

    def presign(self, bucket, key, endpoint="h1", method="GET", expires=3600, signed_at=None,
                route=None, akid=None):
        """A presigned S3 URL (query-string SigV4) made by the lab with AWS's own signer.
        signed_at (unix time) in the past with a short `expires` gives an expired URL;
        route: a /_web/ option list the URL goes through (the signature covers it)."""
        body = {"bucket": bucket, "key": key, "endpoint": endpoint, "method": method,
                "expires": expires}
        for k, v in (("signed_at", signed_at), ("route", route), ("akid", akid)):
            if v is not None:
                body[k] = v
        return self._call("POST", "/presign", body=body)["url"]

    def family(self, name):
        """Start backend family `name` if it is not running yet ("gcs": the GCS XML-API
        front, lib/gcs.js; "az": Azurite, lib/azure.js); returns its info: endpoints
        (gcs-h1/gcs-h2, az-h1/az-h2, each with `env` and `envs` per authentication
        mode), credentials. Refreshes self.info (lab.json)."""
        out = self._call("POST", "/family", body={"name": name})
        self.info = self._call("GET", "/info")
        return out

    def family_env(self, endpoint, auth=None, delay_ms=None):
        """GDAL's environment for a family endpoint (e.g. "gcs-h2") and an
        authentication mode (gcs: hmac, refresh_token, service_account, gce, nosign;
        az: shared_key, sas, connection_string, nosign)."""
        fam = endpoint.split("-")[0]
        info = self.family(fam) if fam not in (self.info.get("families") or {}) \
            else self.info["families"][fam]
        ep = info["endpoints"][endpoint]
        if delay_ms is not None:
            self.set_delay(delay_ms, endpoint)
        return dict(ep["envs"][auth] if auth else ep["env"])

    def token(self):
        """A new token the lab accepts as ?token= on /_web/<...token...>/ URLs."""
        return self._call("POST", "/token")["token"]

    def reset(self):
        """Clear the request log, connection counts and faults; restore the start delay."""
        self._call("POST", "/reset")

    def log(self, since=0):
        """The request log: a list of dicts (seq, time, endpoint, method, path,
        query, range, if_match, status, bytes_sent, sig, kind, user_agent, ...)."""
        return self._call("GET", "/log", query={"since": since} if since else None)["requests"]

    def counts(self, endpoint=None):
        return self._call("GET", "/counts", query={"endpoint": endpoint} if endpoint else None)

    def connections(self, endpoint=None):
        """{"accepted": n, "open": n, "delay_ms": d} for one endpoint, or a dict of all."""
        c = self._call("GET", "/connections")
        return c[endpoint] if endpoint else c

    def stats(self):
        """labd's own CPU time and memory: {"cpu_user_ms", "cpu_system_ms", "rss", ...}.
        Compare CPU before and after a benchmark to see whether the lab was its limit."""
        return self._call("GET", "/stats")

    def set_delay(self, ms, endpoint=None):
        """One-way delay in ms for one endpoint or all (RTT = 2 x ms)."""
        body = {"ms": ms}
        if endpoint:
            body["endpoint"] = endpoint
        self._call("POST", "/delay", body=body)

    def fault(self, kind, count=1, key=None, seconds=None, method="GET",
              request_kind=None, endpoint=None):
        """Arm a fault for the next `count` matching requests. kind: slowdown (503),
        internal (500), throttle (429 + Retry-After: seconds), forbidden (403),
        notfound (404), reset, truncated, stall (seconds=None: forever)."""
        body = {"kind": kind, "count": count, "method": method}
        for k, v in (("key", key), ("seconds", seconds), ("request_kind", request_kind),
                     ("endpoint", endpoint)):
            if v is not None:
                body[k] = v
        return self._call("POST", "/fault", body=body)["rule"]

    def pfault(self, kind, count=1, key=None, value=None, method="GET", request_kind=None,
               endpoint=None, from_byte=None):
        """Arm a fault of the fault proxy (endpoints fp1, fp2) for the next `count`
        matching requests (with from_byte: range requests from that byte on);
        kinds and `value` in tests/lab/lib/faultproxy.js."""
        body = {"kind": kind, "count": count, "method": method}
        for k, v in (("key", key), ("value", value), ("request_kind", request_kind),
                     ("endpoint", endpoint), ("from_byte", from_byte)):
            if v is not None:
                body[k] = v
        return self._call("POST", "/pfault", body=body)["rule"]

    def clear_faults(self):
        self._call("DELETE", "/faults")
        self._call("DELETE", "/pfaults")

    def put_object(self, bucket, key, data, family=None):
        """Store an object straight into s3rver (not logged). data: bytes, or a
        path (str/Path) to a local file. Returns {"etag": ..., "size": ...}.
        family="az": into Azurite's container `bucket` instead (starts the family)."""
        q = {"bucket": bucket, "key": key}
        if family:
            q["family"] = family
            if family not in (self.info.get("families") or {}):
                self.family(family)  # started here, so that stop() knows its processes
        if isinstance(data, (str, Path)):
            return self._call("PUT", "/object", query=dict(q, path=str(Path(data).resolve())),
                              data=b"")
        return self._call("PUT", "/object", query=q, data=bytes(data))

    def delete_object(self, bucket, key, family=None):
        q = {"bucket": bucket, "key": key}
        if family:
            q["family"] = family
        return self._call("DELETE", "/object", query=q)

    def create_bucket(self, name, region=None):
        """Create bucket `name` homed in `region` (default: the lab's us-east-1).
        Requests signed for another region get S3's 400 AuthorizationHeaderMalformed
        with x-amz-bucket-region naming the right one."""
        body = {"name": name}
        if region:
            body["region"] = region
        return self._call("POST", "/bucket", body=body)

    def register_credentials(self, akid, secret, token=None, expires_at=None):
        """Make the verifier accept (akid, secret[, token]); expires_at: unix time
        after which requests get 400 ExpiredToken."""
        body = {"akid": akid, "secret": secret}
        if token:
            body["token"] = token
        if expires_at:
            body["expires_at"] = expires_at
        self._call("POST", "/credentials", body=body)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by its parent) counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# -- running GDAL against the lab ---------------------------------------------
# Variables that would change how GDAL reads /vsis3/: cleared from the caller's
# environment so a run sees the lab's settings and nothing else.
_SCRUB_PREFIXES = ("AWS_", "GDAL_", "CPL_", "VSI_", "CURL_", "SSL_CERT_",
                   # /vsigs/ and /vsiaz/ settings (the lab's families set their own)
                   "GS_", "GOOGLE_", "GOA2_", "GO2A_", "AZURE_")


def build_dir():
    """The CMake build directory: $VT_BUILD_DIR, else <repo>/build."""
    return Path(os.environ.get("VT_BUILD_DIR") or REPO / "build")


def plugin_dir():
    """Directory holding gdal_vsitune.so (what GDAL_DRIVER_PATH must name)."""
    return build_dir() / "vsiplugin"


def plugin_built():
    return (plugin_dir() / "gdal_vsitune.so").is_file()


def gdal_env(lab_env, vsitune=False, extra=None):
    """A full environment for a GDAL child process: the caller's environment minus
    any AWS_/GDAL_/CPL_/VSI_/CURL_ settings, plus `lab_env`; with vsitune=True,
    GDAL_DRIVER_PATH points at the built plugin (stock GDAL otherwise)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB_PREFIXES)}
    # Never let a run that lost its credentials go looking for the EC2 metadata
    # service off this machine: tests that want IMDS point it at 127.0.0.1.
    # AWS_EC2_METADATA_DISABLED is the AWS SDKs' switch (vsitune's too); stock
    # GDAL does not know it, so its IMDS root names a closed port here: else
    # it asks 169.254.169.254, and whatever answers there (a sandbox's proxy
    # refusing with a 403 body that GDAL takes for a role name, which curl 8
    # then rejects as a URL: "URL rejected") makes its errors the network's.
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env["CPL_AWS_EC2_API_ROOT_URL"] = "http://127.0.0.1:9"
    env.update(lab_env)
    if vsitune:
        env["GDAL_DRIVER_PATH"] = str(plugin_dir())
    if extra:
        env.update(extra)
    return env


def run_tool(args, env, timeout=300):
    """Run a command-line tool (gdalinfo, gdallocationinfo, ...) with `env`.
    Returns (CompletedProcess, wall seconds). Never hangs: a run past `timeout`
    is killed and raises LabError naming the command."""
    t0 = time.monotonic()
    try:
        cp = subprocess.run([str(a) for a in args], env=env, capture_output=True, text=True,
                            timeout=timeout)
    except subprocess.TimeoutExpired:
        raise LabError(f"{args[0]} did not finish within {timeout} s: {' '.join(map(str, args))}")
    return cp, time.monotonic() - t0
