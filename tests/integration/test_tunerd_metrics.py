#!/usr/bin/python3
"""test_tunerd_metrics.py: vsitune's metrics as a real Prometheus scrapes them.

- A Python reader reads windows of the lab's COG through the plugin (with
  VSITUNE_STATS_DIR), and a gdallocationinfo run through it exits; both leave
  their counters in the directory.
- `tunerd watch --listen 127.0.0.1:0 --stats-dir DIR` serves /metrics; Debian's
  `promtool check metrics` accepts what it serves, and so it accepts
  `tunerd stats --format prometheus` (node-exporter's textfile collector).
- Debian's `prometheus` server, started here on 127.0.0.1 with a one-second
  scrape interval, scrapes that endpoint; through its HTTP API
  (/api/v1/query) the request counters, summed per pid, equal what the lab's own
  request log counted for each process's workload; the range GETs answered
  206 equal the counter of kind get_range and status class 2xx; the latency
  histogram's count equals the requests; the reader's RSS series is there; a
  host total is a sum() over pids, not a series of its own.
- SIGTERM stops the exporter with exit status 0.

Run: /usr/bin/python3 -m pytest tests/integration/test_tunerd_metrics.py
Needs a built tree, and prometheus + promtool (scripts/setup.sh installs them).
"""
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

import lab_client

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("VT_BINARY_DIR") or lab_client.build_dir())
TUNERD = BUILD / "tunerd" / "tunerd"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
POINT = (1500, 700)

READER = r"""
import json, sys
from osgeo import gdal
gdal.UseExceptions()
ds = gdal.Open(sys.argv[1])
band = ds.GetRasterBand(1)
for w in range(4):
    band.ReadAsArray(w * 512, w * 256, 512, 512)
live = json.loads(gdal.GetDriverByName("VSITUNE").GetMetadataItem("STATS"))
print(json.dumps(live), flush=True)
sys.stdin.readline()      # stays alive (exits cleanly) when the test is done
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def readline(proc, stream, timeout):
    r, _, _ = select.select([stream], [], [], timeout)
    assert r, f"no line within {timeout} s"
    return stream.readline()


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


def promtool_check(text):
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    return p


class Prometheus:
    """Debian's prometheus on 127.0.0.1, scraping one target every second."""

    def __init__(self, tmp, target):
        self.port = free_port()
        cfg = tmp / "prometheus.yml"
        cfg.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            "scrape_configs:\n  - job_name: tunerd\n"
            f"    static_configs:\n      - targets: ['{target}']\n")
        self.log = open(tmp / "prometheus.log", "wb")
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={tmp / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def api(self, query):
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(
            {"query": query})
        _, _, body = http_get(url)
        doc = json.loads(body)
        assert doc["status"] == "success", doc
        return doc["data"]["result"]

    def wait(self, query, want, timeout=90):
        """Polls the query until its single value equals want (bounded)."""
        deadline = time.monotonic() + timeout
        got = None
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "prometheus exited"
            try:
                res = self.api(query)
            except OSError:  # not listening yet
                res = None
            if res:
                got = [float(r["value"][1]) for r in res]
                if got == [float(want)]:
                    return res
            time.sleep(0.5)
        raise AssertionError(f"{query}: {got}, want {want} (bounded wait of {timeout} s)")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.mark.skipif(not os.path.exists(PROMETHEUS), reason="prometheus not installed")
def test_prometheus_scrapes_what_the_lab_saw(lab, small_cog, tmp_path):
    if not lab_client.plugin_built():
        pytest.skip("gdal_vsitune.so not built")
    stats = tmp_path / "stats"
    stats.mkdir()
    env = lab_client.gdal_env(lab.env("h1"), vsitune=True,
                              extra={"VSITUNE_STATS_DIR": str(stats)})
    path = f"/vsis3/lab/{small_cog['key']}"

    # workload 1: a process that exits (with GDAL's debug log: one line per request,
    # with the range asked for and the time it took)
    p = subprocess.run(["gdallocationinfo", "-valonly", path, *map(str, POINT)],
                       env={**env, "CPL_DEBUG": "VSITUNE"}, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0 and p.stdout.strip(), p.stderr
    debug = re.findall(r"^VSITUNE: GET (\S+) bytes=(\d+)-(\d+) -> (\d+), (\d+) bytes, "
                       r"HTTP/1, 1 attempt\(s\), (\d+\.\d) ms(?: \((?:new|reused) connection;"
                       r"[^)]*\))?$", p.stderr, re.M)
    assert [(f"bytes={a}-{b}", int(st)) for _, a, b, st, _, _ in debug] == \
        [(e["range"], e["status"]) for e in lab.log()], p.stderr
    tool_pid = None  # its pid is the only other file in the directory
    tool_requests = len(lab.log())
    tool_gets = sum(1 for e in lab.log() if e["status"] == 206)
    assert tool_requests >= 2

    # workload 2: a reader that stays alive
    mark = len(lab.log())
    reader = subprocess.Popen([sys.executable, "-c", READER, path], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    exporter = prom = None
    try:
        live = json.loads(readline(reader, reader.stdout, 120))
        reader_log = lab.log()[mark:]
        assert live["engine"]["requests"] == len(reader_log) >= 3
        files = sorted(stats.iterdir())
        pids = [int(f.name[len("vsitune-"):-len(".json")]) for f in files]
        assert reader.pid in pids and len(pids) == 2
        tool_pid = [q for q in pids if q != reader.pid][0]

        exporter = subprocess.Popen([str(TUNERD), "watch", "--listen", "127.0.0.1:0",
                                     "--stats-dir", str(stats)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = readline(exporter, exporter.stderr, 30)
        assert line.startswith("tunerd: serving http://127.0.0.1:"), line
        target = line.split("http://")[1].split("/")[0]

        status, ctype, body = http_get(f"http://{target}/metrics")
        assert status == 200 and ctype.startswith("text/plain; version=0.0.4")
        promtool_check(body)
        assert f'vsitune_process_rss_bytes{{pid="{reader.pid}"}}' in body
        assert 'pid="total"' not in body
        with pytest.raises(urllib.error.HTTPError) as nf:
            http_get(f"http://{target}/nowhere")
        assert nf.value.code == 404

        prom = Prometheus(tmp_path, target)
        prom.wait('up{job="tunerd"}', 1)
        # every request each process sent, as the lab counted them
        prom.wait(f'sum(vsitune_requests_total{{pid="{reader.pid}"}})', len(reader_log))
        prom.wait(f'sum(vsitune_requests_total{{pid="{tool_pid}"}})', tool_requests)
        prom.wait('sum(vsitune_requests_total)', tool_requests + len(reader_log))
        prom.wait(f'vsitune_requests_total{{pid="{reader.pid}",kind="get_range",'
                  f'status_class="2xx"}}',
                  sum(1 for e in reader_log if e["method"] == "GET" and e["status"] == 206))
        prom.wait(f'vsitune_requests_total{{pid="{tool_pid}",kind="get_range",'
                  f'status_class="2xx"}}', tool_gets)
        prom.wait(f'vsitune_request_duration_seconds_count{{pid="{reader.pid}"}}',
                  len(reader_log))
        prom.wait(f'vsitune_received_bytes_total{{pid="{reader.pid}"}}',
                  sum(e["bytes_sent"] for e in reader_log))
        # the requests stock GDAL would have sent: one LIST and one HEAD per open
        prom.wait(f'vsitune_lists_avoided_total{{pid="{tool_pid}"}}', 1)
        prom.wait(f'vsitune_heads_avoided_total{{pid="{tool_pid}"}}', 1)
        prom.wait(f'vsitune_process_state{{pid="{tool_pid}",state="exited"}}', 1)
        prom.wait(f'vsitune_process_state{{pid="{reader.pid}",state="running"}}', 1)
        res = prom.api(f'vsitune_process_rss_bytes{{pid="{reader.pid}"}}')
        assert len(res) == 1 and float(res[0]["value"][1]) > 10 * 2 ** 20
        assert prom.api('vsitune_cgroup_oom_kills_total'), "the cgroup's oom_kill count"

        # the textfile collector's input passes the same check
        t = subprocess.run([str(TUNERD), "stats", "--dir", str(stats), "--format",
                            "prometheus"], capture_output=True, text=True, timeout=60)
        assert t.returncode == 0, t.stderr
        promtool_check(t.stdout)
        assert f'vsitune_requests_total{{pid="{tool_pid}",kind="get_range",' \
               f'status_class="2xx"}} {tool_gets}' in t.stdout
    finally:
        if prom:
            prom.stop()
        if exporter:
            exporter.send_signal(signal.SIGTERM)
            assert exporter.wait(timeout=30) == 0
        reader.stdin.write("\n")
        reader.stdin.close()
        reader.wait(timeout=60)


def test_exporter_bad_input(tmp_path):
    p = subprocess.run([str(TUNERD), "watch", "--listen", "localhost:9464"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "not a numeric address" in p.stderr
    p = subprocess.run([str(TUNERD), "watch", "--listen", "9464"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 2 and "ADDRESS:PORT" in p.stderr
    p = subprocess.run([str(TUNERD), "stats", "--listen", "127.0.0.1:0"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 2 and "only valid with watch" in p.stderr
    p = subprocess.run([str(TUNERD), "stats", "--dir", str(tmp_path), "--format", "xml"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "table, json, prometheus" in p.stderr
    # a port in use: a clear error, not a hang
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        p = subprocess.run([str(TUNERD), "watch", "--listen", f"127.0.0.1:{port}"],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and "Address already in use" in p.stderr
    # a client that sends nothing is dropped; --count bounds the scrapes served
    ex = subprocess.Popen([str(TUNERD), "watch", "--listen", "127.0.0.1:0", "--count", "1"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    target = readline(ex, ex.stderr, 30).split("http://")[1].split("/")[0]
    host, port = target.split(":")
    with socket.create_connection((host, int(port)), timeout=30) as idle:
        idle.sendall(b"GET /metrics HTTP/1.1\r\n")  # never finishes its head
        assert idle.recv(100).startswith(b"HTTP/1.1 400")
    status, _, body = http_get(f"http://{target}/metrics")
    assert status == 200 and "vsitune_process_rss_bytes" in body
    assert ex.wait(timeout=30) == 0  # one scrape served: done


SHARED_READER = r"""
import sys
from osgeo import gdal
gdal.UseExceptions()
ds = gdal.Open(sys.argv[1])      # kept: a band outliving its dataset crashes
band = ds.GetRasterBand(1)
for w in range(4):
    band.ReadAsArray(2048 + w * 1024, 4096, 1024, 1024)
print("read", flush=True)
sys.stdin.readline()      # attached (the segment lives) until the test says
"""


def test_shared_cache_metrics(lab, cogs, tmp_path):
    """Two processes on one shared cache (the s2 COG, the same four windows,
    the second while the first is still attached; read when both have exited): `tunerd stats --format prometheus` and `watch
    --listen` give the segment once (size, blocks, use, hits/waits/misses and
    the hit ratio, as the counters files say), promtool accepts both, and each
    process's budget is the segment's room for blocks, not the 0 its own
    private cache has. The second process sent nothing (the lab's log), so the
    host's hits are there and the ratio is above 0."""
    if not lab_client.plugin_built():
        pytest.skip("gdal_vsitune.so not built")
    stats = tmp_path / "stats"
    stats.mkdir()
    pool = f"metrics{os.getpid()}"
    env = lab_client.gdal_env(lab.env("h1"), vsitune=True, extra={
        "VSITUNE_STATS_DIR": str(stats), "VSITUNE_SHARED_CACHE": "YES",
        "VSITUNE_SHARED_CACHE_NAME": pool, "VSITUNE_SHARED_CACHE_SIZE": "128M",
        "GDAL_CACHEMAX": "0"})
    path = f"/vsis3/lab/{cogs['s2']['key']}"
    first = subprocess.Popen([sys.executable, "-c", SHARED_READER, path], env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert readline(first, first.stdout, 300) == "read\n"
        mark = len(lab.log())
        assert mark >= 2
        second = subprocess.run([sys.executable, "-c", SHARED_READER, path], env=env,
                                input="\n", capture_output=True, text=True, timeout=300)
        assert second.returncode == 0, second.stderr
        assert lab.log()[mark:] == []                 # served by the shared cache
        first.stdin.write("\n")                      # both gone: their files are final
        first.stdin.close()
        assert first.wait(timeout=60) == 0

        doc = json.loads(subprocess.run([str(TUNERD), "stats", "--dir", str(stats), "--json"],
                                        capture_output=True, text=True, timeout=60).stdout)
        procs = doc["processes"]
        assert len(procs) == 2 and all(p["shared"] for p in procs)
        assert all(p["cache"]["budget"] == 0 for p in procs)    # nothing kept privately
        newest = max(procs, key=lambda p: p["time"])["shared"]
        seg = newest["path"]
        assert newest["hits"] > 0 and newest["used_bytes"] > 0

        t = subprocess.run([str(TUNERD), "stats", "--dir", str(stats), "--format",
                            "prometheus"], capture_output=True, text=True, timeout=60)
        assert t.returncode == 0, t.stderr
        promtool_check(t.stdout)

        exporter = subprocess.Popen([str(TUNERD), "watch", "--listen", "127.0.0.1:0",
                                     "--stats-dir", str(stats)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = readline(exporter, exporter.stderr, 30)
            assert line.startswith("tunerd: serving http://127.0.0.1:"), line
            target = line.split("http://")[1].split("/")[0]
            _, _, body = http_get(f"http://{target}/metrics")
            promtool_check(body)
        finally:
            exporter.send_signal(signal.SIGTERM)
            assert exporter.wait(timeout=30) == 0

        done = newest["hits"] + newest["waits"] + newest["misses"]
        want = {
            "vsitune_shared_cache_size_bytes": newest["size"],
            "vsitune_shared_cache_block_bytes": newest["data_bytes"],
            "vsitune_shared_cache_used_bytes": newest["used_bytes"],
            "vsitune_shared_cache_hits_total": newest["hits"],
            "vsitune_shared_cache_waits_total": newest["waits"],
            "vsitune_shared_cache_misses_total": newest["misses"],
            "vsitune_shared_cache_attached_processes": newest["attached"],
            "vsitune_shared_cache_objects": newest["objects"],
            "vsitune_shared_cache_evictions_total": newest["evictions"],
        }
        for text in (t.stdout, body):
            samples = {}
            for m in re.finditer(r'^(vsitune_shared_cache_\w+)\{segment="([^"]*)"\} (\S+)$',
                                 text, re.M):
                assert m.group(2) == seg
                assert m.group(1) not in samples, "one series per segment"
                samples[m.group(1)] = float(m.group(3))
            for name, v in want.items():
                assert samples.get(name) == float(v), (name, samples.get(name), v)
            ratio = samples["vsitune_shared_cache_hit_ratio"]
            assert ratio == pytest.approx((newest["hits"] + newest["waits"]) / done)
            assert ratio > 0
            for p in procs:
                assert f'vsitune_cache_budget_bytes{{pid="{p["pid"]}"}} ' \
                       f'{newest["data_bytes"]}\n' in text
                assert newest["data_bytes"] > 0
    finally:
        if first.poll() is None:
            first.kill()
            first.wait(timeout=60)
        for p in Path("/dev/shm").glob(f"vsitune-*-{pool}"):
            p.unlink()


TWO_BACKENDS = r"""
import json, sys
from osgeo import gdal
gdal.UseExceptions()
for name in sys.argv[1:]:
    ds = gdal.Open(name)
    ds.GetRasterBand(1).ReadAsArray(1500, 700, 1, 1)
    ds = None
print(gdal.GetDriverByName("VSITUNE").GetMetadataItem("STATS"), flush=True)
"""


def _family(e):
    ep = e.get("endpoint") or ""
    return "gs" if ep.startswith("gcs") else "az" if ep.startswith("az") else \
        "s3" if ep in ("h1", "h2", "h1tls") else ep


@pytest.mark.skipif(not os.path.exists(PROMETHEUS), reason="prometheus not installed")
def test_prometheus_by_backend(lab, small_cog, tmp_path):
    """Counts by backend (issue 20): one process reads a pixel of the lab's COG through
    /vsis3/ (S3, h1) and through /vsigs/ (the GCS front, GOOG1 HMAC, h1, with
    VSITUNE_TAKEOVER_GS=YES set here), another only through /vsis3/. Each process's
    document, `tunerd stats` (table and json) and the series a real Prometheus scraped
    from `tunerd watch` (vsitune_backend_requests_total{backend=...}) count for each
    backend the requests the lab saw on that family's endpoints, and their bytes; the
    process totals are unchanged (the backends add up to them); backends not used
    count 0."""
    if not lab_client.plugin_built():
        pytest.skip("gdal_vsitune.so not built")
    stats = tmp_path / "stats"
    stats.mkdir()
    lab_env = {**lab.env("h1"), **lab.family_env("gcs-h1", "hmac")}
    env = lab_client.gdal_env(lab_env, vsitune=True,
                              extra={"VSITUNE_STATS_DIR": str(stats),
                                     "VSITUNE_TAKEOVER_GS": "YES"})
    key = small_cog["key"]
    runs = {}
    for name, paths in (("both", [f"/vsis3/lab/{key}", f"/vsigs/lab/{key}"]),
                        ("s3", [f"/vsis3/lab/{key}"])):
        seq = lab.log()[-1]["seq"] if lab.log() else 0
        p = subprocess.run([sys.executable, "-c", TWO_BACKENDS, *paths], env=env,
                           capture_output=True, text=True, timeout=180)
        assert p.returncode == 0, p.stderr[-2000:]
        log = lab.log(since=seq)
        doc = json.loads(p.stdout)
        saw = {b: [e for e in log if _family(e) == b] for b in ("s3", "gs", "az", "curl")}
        assert sum(map(len, saw.values())) == len(log), log  # nothing else was asked
        assert all((e.get("user_agent") or "").startswith("vsitune") for e in log), log
        for b, entries in saw.items():
            got = doc["backends"][b]
            assert got["requests"] == len(entries), (b, got, entries)
            assert got["2xx"] == sum(1 for e in entries if 200 <= e["status"] < 300), b
            assert got["bytes_received"] == sum(e["bytes_sent"] for e in entries), b
        assert sum(doc["backends"][b]["requests"] for b in saw) == doc["engine"]["requests"]
        assert sum(doc["backends"][b]["bytes_received"] for b in saw) == \
            doc["engine"]["bytes_received"]
        runs[name] = (doc["pid"], {b: len(v) for b, v in saw.items()})
    both_pid, both = runs["both"]
    s3_pid, s3_only = runs["s3"]
    assert both["s3"] >= 1 and both["gs"] >= 1 and s3_only["gs"] == 0, runs
    # a COG opened through either backend: its LIST avoided, counted by backend
    assert json.loads((stats / f"vsitune-{both_pid}.json").read_text())["backends"]["gs"][
        "avoided_lists"] >= 1

    t = subprocess.run([str(TUNERD), "stats", "--dir", str(stats), "--format", "json"],
                       capture_output=True, text=True, timeout=60)
    assert t.returncode == 0, t.stderr
    procs = {p["pid"]: p for p in json.loads(t.stdout)["processes"]}
    for pid, want in ((both_pid, both), (s3_pid, s3_only)):
        assert {b: procs[pid]["backends"][b]["requests"] for b in want} == want
    t = subprocess.run([str(TUNERD), "stats", "--dir", str(stats)], capture_output=True,
                       text=True, timeout=60)
    assert t.returncode == 0, t.stderr
    assert re.search(rf"^# pid {both_pid} by backend: s3 {both['s3']} request\(s\) .*; "
                     rf"gs {both['gs']} request\(s\) ", t.stdout, re.M), t.stdout

    exporter = subprocess.Popen([str(TUNERD), "watch", "--listen", "127.0.0.1:0",
                                 "--stats-dir", str(stats)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    prom = None
    try:
        target = readline(exporter, exporter.stderr, 30).split("http://")[1].split("/")[0]
        _, _, body = http_get(f"http://{target}/metrics")
        promtool_check(body)
        prom = Prometheus(tmp_path, target)
        prom.wait('up{job="tunerd"}', 1)
        for pid, want in ((both_pid, both), (s3_pid, s3_only)):
            for b, n in want.items():
                prom.wait(f'sum(vsitune_backend_requests_total{{pid="{pid}",backend="{b}"}})', n)
            prom.wait(f'sum(vsitune_backend_requests_total{{pid="{pid}"}})', sum(want.values()))
        prom.wait('sum(vsitune_backend_requests_total{backend="gs"})', both["gs"])
        prom.wait(f'sum(vsitune_backend_requests_total{{pid="{both_pid}",backend="gs",'
                  f'status_class!="2xx"}})', 0)
        prom.wait(f'vsitune_backend_received_bytes_total{{pid="{both_pid}",backend="az"}}', 0)
    finally:
        if prom:
            prom.stop()
        exporter.send_signal(signal.SIGTERM)
        assert exporter.wait(timeout=30) == 0
