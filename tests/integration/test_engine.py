"""test_engine.py: the I/O engine (vsiplugin/http/engine*.c) against the real lab.

Drives the engine through tests/tools/vt_fetch (engine.h used directly, anonymous
GETs on the lab's `public` bucket) and judges it by what the lab saw: its request
log and its per-endpoint connection counter. Every byte is compared with the local
copy of the object. No timing assertions, except the lower bound of a
Retry-After delay the test itself configures.

Run: /usr/bin/python3 -m pytest tests/integration/test_engine.py
(VT_FETCH names another vt_fetch binary, e.g. from a ThreadSanitizer build.)
"""

import json
import os
import subprocess
import uuid

import pytest

import lab_client

SIZE = 3 * 1024 * 1024 + 12345


def fetch_bin():
    return os.environ.get("VT_FETCH") or str(lab_client.build_dir() / "tests" / "tools" / "vt_fetch")


@pytest.fixture(scope="module")
def vt_fetch():
    path = fetch_bin()
    if not os.access(path, os.X_OK):
        pytest.skip(f"vt_fetch not built at {path}")
    return path


@pytest.fixture
def obj(lab, tmp_path):
    """A public object of random bytes, private to the test: (key, url-for, local path)."""
    key = f"engine/{uuid.uuid4().hex}.bin"
    data = os.urandom(SIZE)
    local = tmp_path / "local.bin"
    local.write_bytes(data)
    lab.put_object("public", key, data)
    return key, (lambda endpoint: lab.object_url("public", key, endpoint)), local


def run(lab, vt_fetch, endpoint, args, extra=None, timeout=120):
    """Run vt_fetch against `endpoint`; returns (exit status, [result dicts])."""
    env = lab_client.gdal_env(lab.env(endpoint), extra=extra)
    try:
        cp = subprocess.run([vt_fetch] + [str(a) for a in args], env=env, capture_output=True,
                            text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"vt_fetch did not finish within {timeout} s: {args}")
    lines = [json.loads(l) for l in cp.stdout.splitlines() if l.startswith("{")]
    assert lines, f"no result from vt_fetch (status {cp.returncode}): {cp.stderr[-2000:]}"
    return cp.returncode, lines


def gets_for(lab, key):
    return [r for r in lab.log() if r["method"] == "GET" and key in r["path"]]


@pytest.mark.parametrize("k", [1, 10])
def test_h2_all_threads_share_one_connection(lab, vt_fetch, obj, k):
    """16 threads x 50 random ranges through the h2 front: 1 TCP connection,
    every response over HTTP/2, every byte right; k ranges per perform_many."""
    key, url, local = obj
    rc, (res,) = run(lab, vt_fetch, "h2", ["-t", 16, "-n", 50, "-k", k, "-l", 65536,
                                            "-f", local, url("h2")])
    assert rc == 0, res
    assert res["ok"] == 800 and res["mismatches"] == 0
    assert res["h2"] == 800
    assert lab.connections("h2")["accepted"] == 1
    assert len(gets_for(lab, key)) == 800


@pytest.mark.parametrize("endpoint", ["h1", "h1tls"])
@pytest.mark.parametrize("pool", [None, 4])
def test_h1_pool_is_bounded(lab, vt_fetch, obj, endpoint, pool):
    """Over HTTP/1.1 (plain, and TLS where ALPN says http/1.1) connections stay
    within the pool (default 16, or VSITUNE_MAX_CONNECTIONS) and are kept alive."""
    key, url, local = obj
    extra = {"VSITUNE_MAX_CONNECTIONS": str(pool)} if pool else None
    rc, (res,) = run(lab, vt_fetch, endpoint, ["-t", 16, "-n", 50, "-f", local, url(endpoint)],
                     extra=extra)
    assert rc == 0, res
    assert res["ok"] == 800 and res["h2"] == 0
    accepted = lab.connections(endpoint)["accepted"]
    assert 1 <= accepted <= (pool or 16)
    assert res["connections"] == accepted
    assert len(gets_for(lab, key)) == 800


TRANSIENT = [
    ("slowdown", 3, None),
    ("internal", 2, None),
    ("throttle", 1, 1),
    ("reset", 2, None),
    ("truncated", 2, None),
    ("stall", 1, None),
]


@pytest.mark.parametrize("endpoint", ["h1", "h2"])
@pytest.mark.parametrize("kind,count,seconds", TRANSIENT)
def test_transient_faults_are_retried(lab, vt_fetch, obj, endpoint, kind, count, seconds):
    """Each transient fault costs exactly one more GET and the bytes come out right."""
    key, url, local = obj
    lab.fault(kind, count=count, key=key, seconds=seconds)
    rc, (res,) = run(lab, vt_fetch, endpoint,
                     ["-r", "1000-300999", "-f", local, url(endpoint)],
                     extra={"GDAL_HTTP_LOW_SPEED_TIME": "2", "GDAL_HTTP_RETRY_DELAY": "0.05"})
    assert rc == 0, res
    assert res["ok"] == 1 and res["mismatches"] == 0
    assert res["retries"] == count
    gets = gets_for(lab, key)
    assert len(gets) == count + 1
    assert all(g.get("range") == "bytes=1000-300999" for g in gets)
    if kind == "throttle":
        # Retry-After: 1 honoured (the delay this test configured)
        assert gets[-1]["time"] - gets[0]["time"] >= 1.0 * _time_unit(gets)


def _time_unit(gets):
    """The log's time is in ms when it looks like epoch milliseconds."""
    return 1000.0 if gets[0]["time"] > 1e11 else 1.0


def test_stall_retires_the_h2_connection(lab, vt_fetch, obj):
    """A stream stalled forever on the h2 connection while the other threads
    keep using that connection (a 30 ms one-way delay keeps traffic going past
    the stall's low-speed limit): the engine gives up on the stalled stream,
    shuts that connection down (curl 7.88 cannot name it while other streams
    use it: the engine tracks its sockets), the streams still on it are
    retried, and everything completes on one new connection, byte-exact."""
    key, url, local = obj
    lab.set_delay(30, "h2")
    lab.fault("stall", count=1, key=key)
    rc, (res,) = run(lab, vt_fetch, "h2", ["-t", 8, "-n", 100, "-f", local, url("h2")],
                     extra={"GDAL_HTTP_LOW_SPEED_TIME": "2"})
    assert rc == 0, res
    assert res["ok"] == 800 and res["mismatches"] == 0
    assert res["retries"] >= 1
    # Shut down, not left open: without that the retry would reuse it (1).
    # A second stream that is merely slow past the 2 s limit under load
    # (e.g. with ThreadSanitizer) legitimately costs a third; never one per
    # retry.
    assert 2 <= lab.connections("h2")["accepted"] <= 3


@pytest.mark.parametrize("kind,status", [("forbidden", 403), ("notfound", 404)])
def test_permanent_errors_are_not_retried(lab, vt_fetch, obj, kind, status):
    key, url, local = obj
    lab.fault(kind, count=5, key=key)
    rc, (res,) = run(lab, vt_fetch, "h1", ["-r", "0-99", url("h1")])
    assert rc == 1
    assert res["errors"] == 1 and res["last_status"] == status
    assert res["retries"] == 0
    assert len(gets_for(lab, key)) == 1


def test_exhausted_retries_report_the_last_status(lab, vt_fetch, obj):
    key, url, local = obj
    lab.fault("slowdown", count=10, key=key)
    rc, (res,) = run(lab, vt_fetch, "h2", ["-r", "0-99", "-R", 2, url("h2")],
                     extra={"GDAL_HTTP_RETRY_DELAY": "0.01"})
    assert rc == 1
    assert res["first_err"] == "transient server error, retries exhausted"
    assert res["first_status"] == 503
    assert len(gets_for(lab, key)) == 3


def test_missing_object_and_bad_ca(lab, vt_fetch, obj, tmp_path):
    key, url, local = obj
    rc, (res,) = run(lab, vt_fetch, "h2", ["-r", "0-9", url("h2") + ".nope"])
    assert rc == 1 and res["first_status"] == 404
    # A CA bundle that does not sign the lab's certificate: a clear TLS error, no retry.
    other = tmp_path / "other-ca.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(tmp_path / "k.pem"), "-out", str(other), "-days", "1", "-subj", "/CN=x"],
                   check=True, capture_output=True)
    rc, (res,) = run(lab, vt_fetch, "h2", ["-r", "0-9", url("h2")],
                     extra={"GDAL_CURL_CA_BUNDLE": str(other), "CURL_CA_BUNDLE": str(other),
                            "SSL_CERT_FILE": str(other)})
    assert rc == 1 and res["first_err"] == "network error"
    assert "certificate" in res["message"].lower()
    assert res["requests"] == 1
    # GDAL_HTTP_UNSAFESSL=YES accepts it.
    rc, (res,) = run(lab, vt_fetch, "h2", ["-r", "0-9", "-f", local, url("h2")],
                     extra={"GDAL_CURL_CA_BUNDLE": str(other), "CURL_CA_BUNDLE": str(other),
                            "SSL_CERT_FILE": str(other), "GDAL_HTTP_UNSAFESSL": "YES"})
    assert rc == 0, res


def test_fork_child_gets_its_own_engine(lab, vt_fetch, obj):
    """Parent reads, forks; the child reads on a connection of its own; the parent
    keeps reading on the connection it had."""
    key, url, local = obj
    rc, lines = run(lab, vt_fetch, "h2", ["--fork", "-t", 4, "-n", 20, "-f", local, url("h2")])
    assert rc == 0, lines
    who = {l["who"]: l for l in lines}
    assert set(who) == {"main", "child", "parent-after-fork"}
    for l in lines:
        assert l["ok"] == 80 and l["errors"] == 0 and l["mismatches"] == 0
    # The child's stats start from zero: it opened a connection of its own.
    assert who["child"]["connections"] == 1
    assert who["child"]["requests"] == 80
    # The parent normally goes on with the connection it had (observed once
    # under load: curl judged it dead and opened one more).
    assert 2 <= lab.connections("h2")["accepted"] <= 3
    assert len(gets_for(lab, key)) == 240


@pytest.mark.parametrize("endpoint", ["h1", "h2"])
def test_shutdown_with_requests_in_flight(lab, vt_fetch, obj, endpoint):
    """Every transfer stalls forever; shutting the engine down fails the waiters
    with VT_ESHUTDOWN instead of hanging (the subprocess timeout is the watchdog)."""
    key, url, local = obj
    lab.fault("stall", count=1000, key=key)
    rc, (res,) = run(lab, vt_fetch, endpoint,
                     ["--shutdown-after", 200, "-t", 8, "-n", 1, "-R", 0, "-f", local,
                      url(endpoint)],
                     extra={"GDAL_HTTP_LOW_SPEED_TIME": "3"}, timeout=60)
    # vt_fetch shuts down once all 8 are in flight (or after 10 s; a thread
    # that came later times out on the stall instead: an error, not a hang).
    assert res["shutdowns"] >= 1
    assert res["shutdowns"] + res["errors"] == 8
    assert res["ok"] == 0 and res["in_flight"] == 0


def test_faults_inside_a_multi_range_batch(lab, vt_fetch, obj):
    """Retries happen per transfer inside one perform_many call: a batch of 10
    ranges with 503s and a reset among them still returns every byte right."""
    key, url, local = obj
    lab.fault("slowdown", count=2, key=key)
    lab.fault("reset", count=1, key=key)
    rc, (res,) = run(lab, vt_fetch, "h2", ["-t", 2, "-n", 20, "-k", 10, "-f", local, url("h2")],
                     extra={"GDAL_HTTP_RETRY_DELAY": "0.05"})
    assert rc == 0, res
    assert res["ok"] == 40 and res["mismatches"] == 0
    assert res["retries"] == 3
    assert len(gets_for(lab, key)) == 43


def test_range_clipped_at_the_end(lab, vt_fetch, obj):
    """A range running past the end comes back clipped at the object's end
    (engine.h): the bytes that exist, byte-exact, no retry."""
    key, url, local = obj
    rc, (res,) = run(lab, vt_fetch, "h2", ["-r", f"{SIZE - 100}-{SIZE + 899}", "-f", local,
                                            url("h2")])
    assert rc == 0, res
    assert res["ok"] == 1 and res["bytes"] == 100
    assert res["retries"] == 0
    assert len(gets_for(lab, key)) == 1


@pytest.mark.parametrize("args", [[], ["-t", "0", "http://x/"], ["-r", "9-1", "http://x/"],
                                  ["-l", "abc", "http://x/"], ["--bogus", "http://x/"]])
def test_bad_usage_is_a_clear_error(vt_fetch, args):
    cp = subprocess.run([vt_fetch] + args, capture_output=True, text=True, timeout=30)
    assert cp.returncode == 2
    assert "usage" in cp.stderr or "bad value" in cp.stderr


def test_nothing_listening_is_a_network_error(vt_fetch):
    """Connection refused: a clear network error at once, not retried (stock GDAL retries
    no refused connection: the server is down, a backoff of a second does not bring it
    back)."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    env = lab_client.gdal_env({}, extra={"GDAL_HTTP_RETRY_DELAY": "0.01"})
    cp = subprocess.run([vt_fetch, "-r", "0-9", "-R", "2", f"http://127.0.0.1:{port}/b/k"],
                        env=env, capture_output=True, text=True, timeout=60)
    res = json.loads(cp.stdout.splitlines()[0])
    assert cp.returncode == 1
    assert res["first_err"] == "network error"
    assert res["requests"] == 1 and res["retries"] == 0
