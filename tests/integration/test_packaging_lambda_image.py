#!/usr/bin/python3
"""test_packaging_lambda_image.py: the Lambda container image, run end to end
without Docker.

packaging/lambda-image/build-rootfs.sh builds the image's root filesystem from
Debian's packages (scripts/debroot.sh: debootstrap, cached under the build
folder) plus this build of vsitune and the Runtime API bootstrap. The test
starts a fake Lambda Runtime API on 127.0.0.1 (the three endpoints the
bootstrap uses, as AWS documents them) holding two invocations, and runs the
image's ENTRYPOINT + CMD in that root (a chroot with its own mount and PID
namespaces, the host's network) with the variables Lambda sets. The example
handler (packaging/lambda-image/example/app.py) reads a COG window from the
S3 lab through GDAL:

- both responses arrive, their pixels equal a local read of the same file;
- tunerd ran first: the handler saw the profile for the 2,048 MB tier (the
  plugin dir of the image's own install, GDAL_CACHEMAX, one inline worker);
- the plugin's counters, reported by the handler, equal the lab's log (the
  requests the function sent: range GETs only) and show the requests avoided
  (no LIST, no HEAD); the same handler with the plugin off (GDAL_DRIVER_PATH
  pointed at an empty folder; tunerd keeps what the function sets) sends a
  LIST the lab also logs;
- a handler that raises gets its error posted; the runtime exits when the API
  stops giving work.

Run: /usr/bin/python3 -m pytest tests/integration/test_packaging_lambda_image.py
Needs root and Debian's mirror (the first run builds the root: a few minutes;
later runs reuse it). SKIPPED when the mirror cannot be reached.
"""
import hashlib
import json
import os
import re
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import lab_client

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("VT_BINARY_DIR") or lab_client.build_dir())
IMAGE = REPO / "packaging" / "lambda-image"
ROOT = BUILD / "debroot" / "lambda-image-bookworm"
WINDOW = [1024, 512, 256, 256]


@pytest.fixture(scope="module")
def rootfs():
    if os.geteuid() != 0:
        pytest.skip("needs root (debootstrap, chroot)")
    if not lab_client.plugin_built():
        pytest.skip("gdal_vsitune.so not built")
    from osgeo import gdal
    if not gdal.__version__.startswith("3.6."):
        # the image is Debian 12's GDAL 3.6.2; a plugin built for another GDAL
        # stays inactive there (its load-time check), so there is nothing to run
        pytest.skip(f"the image is Debian 12 (GDAL 3.6); this build is for GDAL {gdal.__version__}")
    p = subprocess.run([str(IMAGE / "build-rootfs.sh"), str(ROOT), str(BUILD)],
                       capture_output=True, text=True, timeout=1800)
    if p.returncode == 3:
        pytest.skip(p.stderr.strip().splitlines()[-1])
    assert p.returncode == 0, p.stderr[-3000:]
    return ROOT


class FakeRuntimeApi:
    """The Lambda Runtime API, for one runtime: hands out the queued events on
    GET .../invocation/next, keeps what is POSTed to .../response, .../error
    and .../init/error; answers 410 to /next when the queue is empty (the
    bootstrap then exits)."""

    def __init__(self, events):
        self.events = list(events)
        self.results = {}
        self.errors = {}
        self.init_errors = []
        self.done = threading.Event()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path != "/2018-06-01/runtime/invocation/next":
                    return self._send(404, b"")
                if not api.events:
                    api.done.set()
                    return self._send(410, b"no more work")
                rid, event = api.events.pop(0)
                self.send_response(200)
                body = json.dumps(event).encode()
                self.send_header("Lambda-Runtime-Aws-Request-Id", rid)
                self.send_header("Lambda-Runtime-Deadline-Ms", "9999999999999")
                self.send_header("Lambda-Runtime-Invoked-Function-Arn",
                                 "arn:aws:lambda:eu-west-1:123456789012:function:fn")
                self.send_header("Lambda-Runtime-Trace-Id", "Root=1-0-0")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                parts = self.path.split("/")
                if self.path == "/2018-06-01/runtime/init/error":
                    api.init_errors.append(body)
                elif parts[-1] == "response":
                    api.results[parts[-2]] = body
                elif parts[-1] == "error":
                    api.errors[parts[-2]] = (body, self.headers.get(
                        "Lambda-Runtime-Function-Error-Type"))
                else:
                    return self._send(404, b"")
                self._send(202, b'{"status": "OK"}')

            def _send(self, code, body):
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


ENTRYPOINT = ["/usr/local/bin/lambda-exec-wrapper", "/usr/bin/python3",
              "/var/runtime/bootstrap.py"]


def run_function(root, api, lab_env, task, handler="app.handler", extra=None):
    """The image's ENTRYPOINT + CMD in the root, with Lambda's variables."""
    env = {"AWS_LAMBDA_RUNTIME_API": api.address, "AWS_LAMBDA_FUNCTION_NAME": "fn",
           "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "2048", "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
           "LAMBDA_TASK_ROOT": "/var/task", "AWS_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true"}
    for k, v in lab_env.items():  # the lab's endpoint and credentials (h1: no CA file)
        if not v.startswith("/"):
            env[k] = v
    env.update(extra or {})
    cmd = [str(REPO / "scripts" / "debroot.sh"), "--run", str(root), "--bind",
           f"{task}:/var/task:ro", "--", *[f"{k}={v}" for k, v in env.items()],
           *ENTRYPOINT, handler]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def local_window(path):
    from osgeo import gdal
    ds = gdal.Open(str(path))
    data = ds.GetRasterBand(1).ReadAsArray(*WINDOW)
    return hashlib.sha256(data.tobytes()).hexdigest(), int(data.astype("int64").sum())


def test_lambda_image_reads_a_window_and_shows_the_savings(rootfs, lab, small_cog, tmp_path):
    lab_env = lab.env("h1")
    event = {"path": f"/vsis3/lab/{small_cog['key']}", "window": WINDOW}
    want_sha, want_sum = local_window(small_cog["path"])
    task = IMAGE / "example"

    api = FakeRuntimeApi([("req-1", event), ("req-2", event)])
    try:
        p = run_function(rootfs, api, lab_env, task)
    finally:
        api.close()
    assert api.done.is_set(), p.stderr[-3000:]
    assert p.returncode == 1 and "/invocation/next answered 410" in p.stderr, p.stderr[-3000:]
    assert api.errors == {} and api.init_errors == []
    assert set(api.results) == {"req-1", "req-2"}
    for rid, r in api.results.items():
        assert r["request_id"] == rid
        assert r["sha256"] == want_sha and r["sum"] == want_sum
    first, second = api.results["req-1"], api.results["req-2"]

    # tunerd sized the process before Python started
    t = first["tuning"]
    assert t["GDAL_DRIVER_PATH"] == "/usr/local/lib/gdalplugins"
    assert t["TUNERD_WORKERS"] == "1" and t["TUNERD_WORKER_KIND"] == "inline"
    assert t["GDAL_CACHEMAX"] == "384" and t["VSITUNE_STATS_DIR"] == "/tmp/vsitune-stats"
    assert "lambda-exec-wrapper" not in p.stderr and "warning" not in p.stderr, p.stderr

    # the plugin's counters equal what the lab saw, and show what was avoided
    log = lab.log()
    assert log and all(e["kind"] == "GET_RANGE" and e["status"] == 206 for e in log), log
    v = second["vsitune"]  # one process served both invocations: its totals
    assert v["engine"]["requests"] == len(log)
    assert v["http"]["get_range"]["2xx"] == len(log)
    assert sum(sum(c.values()) for c in v["http"].values()) == len(log)
    assert v["avoided"]["lists"] >= 1 and v["avoided"]["heads"] >= 1
    # the second invocation cost no request: warm process, cached blocks
    assert first["vsitune"]["engine"]["requests"] == len(log)

    # the same function with the plugin off (the function's own setting wins)
    lab.reset()
    empty = tmp_path / "noplugins"
    empty.mkdir()
    api = FakeRuntimeApi([("req-3", event)])
    try:
        p = run_function(rootfs, api, lab_env, task,
                         extra={"GDAL_DRIVER_PATH": "/var/task/no-such-dir"})
    finally:
        api.close()
    stock = api.results["req-3"]
    assert stock["sha256"] == want_sha and stock["vsitune"] is None
    stock_log = lab.log()
    assert sum(1 for e in stock_log if e["kind"] == "LIST") >= 1, stock_log
    assert len(stock_log) > len(log)


def test_lambda_image_reports_handler_errors(rootfs, lab, tmp_path):
    task = tmp_path / "task"
    task.mkdir()
    (task / "app.py").write_text("def handler(event, context):\n"
                                 "    raise ValueError('bad event: ' + str(event))\n")
    api = FakeRuntimeApi([("req-e", {"x": 1})])
    try:
        p = run_function(rootfs, api, lab.env("h1"), task)
        # a handler that cannot be imported is an init error
        api2 = FakeRuntimeApi([])
        p2 = run_function(rootfs, api2, lab.env("h1"), task, handler="nosuch.handler")
    finally:
        api.close()
        api2.close()
    body, kind = api.errors["req-e"]
    assert body["errorType"] == "ValueError" and "bad event" in body["errorMessage"]
    assert kind == "Unhandled" and p.returncode == 1
    assert api2.init_errors and api2.init_errors[0]["errorType"] == "ModuleNotFoundError"
    assert p2.returncode == 1 and "cannot load handler 'nosuch.handler'" in p2.stderr


def test_dockerfile_is_the_rootfs_that_was_run():
    """The Dockerfile was not built here (no Docker engine): what can be checked
    is that it builds the same image as build-rootfs.sh, which was run: the same
    package list file, the same install step and prefix, the same bootstrap,
    and the ENTRYPOINT + CMD the test above ran."""
    text = (IMAGE / "Dockerfile").read_text()
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    # the build stage runs the recipes' shared script: its steps are the image's
    assert "RUN sh /src/packaging/build-stage.sh" in lines
    text += (REPO / "packaging" / "build-stage.sh").read_text()
    froms = [ln for ln in lines if ln.startswith("FROM ")]
    assert froms == ["FROM debian:bookworm-slim AS build", "FROM debian:bookworm-slim"]
    script = (IMAGE / "build-rootfs.sh").read_text()
    assert "runtime-packages.txt" in text and "runtime-packages.txt" in script
    assert "debroot.sh\" bookworm" in script  # the same Debian release
    assert "COPY packaging/lambda-image/runtime-packages.txt" in text
    assert "-DCMAKE_INSTALL_PREFIX=/usr/local" in text and "--prefix /usr/local --strip" in script
    assert "DESTDIR=/stage cmake --install /build --strip" in text
    assert "COPY packaging/lambda-image/bootstrap.py /var/runtime/bootstrap.py" in text
    assert '"$HERE/bootstrap.py" "$ROOT/var/runtime/bootstrap.py"' in script
    entry = [ln for ln in lines if ln.startswith("ENTRYPOINT ")]
    cmd = [ln for ln in lines if ln.startswith("CMD ")]
    assert json.loads(entry[0][len("ENTRYPOINT "):]) == ENTRYPOINT
    assert json.loads(cmd[0][len("CMD "):]) == ["app.handler"]
    for ln in lines:  # every COPY source from the build context exists
        if ln.startswith("COPY ") and "--from=" not in ln:
            for src in ln.split()[1:-1]:
                assert (REPO / src).exists(), src


def test_runtime_packages_are_debian12_packages():
    """The image's runtime packages are real Debian 12 packages of this machine's archive
    (their names are that release's: libgdal32, ...): checked on Debian 12, where
    scripts/test.sh runs it; the roots of the other GDALs are other releases."""
    here = re.search(r"^VERSION_CODENAME=(\S+)", Path("/etc/os-release").read_text(), re.M)
    if here is None or here.group(1) != "bookworm":
        pytest.skip("the image is Debian 12 (bookworm): its package names are checked there only")
    pkgs = [ln.split("#")[0].strip() for ln in (IMAGE / "runtime-packages.txt").read_text()
            .splitlines() if ln.split("#")[0].strip()]
    p = subprocess.run(["apt-cache", "show", "--no-all-versions", *pkgs], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.count("\nPackage: ") + 1 >= len(pkgs), p.stderr
