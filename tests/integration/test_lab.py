"""test_lab.py: the S3 lab itself works as the other tests assume.

Every check reads what the server saw (the lab's request log and connection
counts) or what a real client got (Python's http.client, curl, GDAL). Requests are
signed here with a small independent SigV4 signer (hashlib/hmac) so that the
verifier is tested against a second implementation, not against itself.
"""

import datetime
import hashlib
import hmac
import http.client
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse

import pytest

import lab_client

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
PAYLOAD = bytes(range(256)) * 400  # 102400 bytes, every byte value


# -- a minimal SigV4 signer (test-only, header auth) --------------------------
def _uri_encode(s, safe="-_.~"):
    return urllib.parse.quote(s, safe=safe)


def sign_headers(method, path, query, host, akid, secret, region="us-east-1", token=None,
                 extra=None, when=None):
    """Headers for a SigV4-signed request. `path` is the already-encoded path as it
    goes on the wire; `query` a list of (key, value) unencoded pairs."""
    when = when or datetime.datetime.now(datetime.timezone.utc)
    amz_date = when.strftime("%Y%m%dT%H%M%SZ")
    headers = {"host": host, "x-amz-date": amz_date, "x-amz-content-sha256": EMPTY_SHA256}
    if token:
        headers["x-amz-security-token"] = token
    for k, v in (extra or {}).items():
        headers[k.lower()] = v
    names = sorted(headers)
    cq = "&".join(f"{_uri_encode(k)}={_uri_encode(v)}"
                  for k, v in sorted((k, v) for k, v in query))
    creq = "\n".join([method, path, cq, "".join(f"{n}:{headers[n].strip()}\n" for n in names),
                      ";".join(names), EMPTY_SHA256])
    scope = f"{amz_date[:8]}/{region}/s3/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                     hashlib.sha256(creq.encode()).hexdigest()])
    key = ("AWS4" + secret).encode()
    for part in (amz_date[:8], region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={akid}/{scope}, "
                                f"SignedHeaders={';'.join(names)}, Signature={sig}")
    return headers


def request(lab, method, bucket, key="", query=(), endpoint="h1", akid=None, secret=None,
            token=None, signed=True, extra=None, tamper=None, timeout=30, region="us-east-1"):
    """One request through the lab's plain HTTP endpoint with http.client.
    Returns (status, headers dict, body bytes)."""
    port = lab.info["endpoints"][endpoint]["port"]
    host = f"127.0.0.1:{port}"
    path = "/" + bucket + ("/" + urllib.parse.quote(key, safe="/~") if key else "/")
    qs = urllib.parse.urlencode(list(query), quote_via=urllib.parse.quote)
    headers = dict(extra or {})
    if signed:
        creds = lab.info["credentials"]
        headers = sign_headers(method, path, list(query), host, akid or creds["access_key_id"],
                               secret if secret is not None else creds["secret_access_key"],
                               region=region, token=token, extra=extra)
    if tamper:
        headers.update(tamper)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path + ("?" + qs if qs else ""), headers=headers)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def error_code(body):
    text = body.decode("utf-8", "replace")
    if "<Code>" not in text:
        return None
    return text.split("<Code>", 1)[1].split("</Code>", 1)[0]


@pytest.fixture
def pub(lab):
    """A public object of known bytes, private to the test calling it."""
    key = "t/obj.bin"
    lab.put_object("public", key, PAYLOAD)
    lab.reset()
    return key


# -- SigV4 verifier -------------------------------------------------------------
def test_verifier_accepts_correct_signature(lab, pub):
    status, _, body = request(lab, "GET", "public", pub, extra={"range": "bytes=0-99"})
    assert status == 206 and body == PAYLOAD[:100]
    (e,) = lab.log()
    assert (e["sig"], e["kind"], e["range"], e["status"], e["bytes_sent"]) == \
        ("ok", "GET_RANGE", "bytes=0-99", 206, 100)


def test_verifier_rejects_wrong_secret(lab, pub):
    status, _, body = request(lab, "GET", "lab", "whatever.tif", secret="not-the-secret")
    assert status == 403
    assert error_code(body) == "SignatureDoesNotMatch"
    (e,) = lab.log()
    assert e["sig"] == "bad" and e["status"] == 403 and e["error"] == "SignatureDoesNotMatch"


def test_verifier_rejects_unknown_key_and_tampering(lab, pub):
    status, _, body = request(lab, "GET", "public", pub, akid="AKIAUNKNOWNKEY000000")
    assert (status, error_code(body)) == (403, "InvalidAccessKeyId")
    # Range signed as 0-99, sent as 0-199: the signature no longer matches.
    status, _, body = request(lab, "GET", "public", pub, extra={"range": "bytes=0-99"},
                              tamper={"range": "bytes=0-199"})
    assert (status, error_code(body)) == (403, "SignatureDoesNotMatch")
    assert [e["sig"] for e in lab.log()] == ["unknown-key", "bad"]


def test_verifier_wrong_region_names_the_right_one(lab, pub):
    status, headers, body = request(lab, "GET", "public", pub, region="eu-west-1")
    assert status == 400 and error_code(body) == "AuthorizationHeaderMalformed"
    assert headers.get("x-amz-bucket-region") == "us-east-1"


def test_bucket_in_another_region(lab):
    lab.create_bucket("eu-bucket", region="eu-west-1")
    lab.put_object("eu-bucket", "k.bin", b"eu")
    status, headers, body = request(lab, "GET", "eu-bucket", "k.bin")  # signed for us-east-1
    assert status == 400 and headers.get("x-amz-bucket-region") == "eu-west-1"
    assert b"<Region>eu-west-1</Region>" in body
    status, _, body = request(lab, "GET", "eu-bucket", "k.bin", region="eu-west-1")
    assert (status, body) == (200, b"eu")


@pytest.mark.parametrize("key", ["a b.bin", "a+b.bin", "100%.bin", "x#y.bin", "what?.bin",
                                 "é/ü/日本.bin", "sp ace/+plus/%25.bin"])
def test_verifier_handles_keys_that_need_encoding(lab, key):
    lab.put_object("lab", "enc/" + key, b"payload:" + key.encode())
    status, _, body = request(lab, "GET", "lab", "enc/" + key)
    assert status == 200, body
    assert body == b"payload:" + key.encode()
    assert lab.log()[-1]["sig"] == "ok"


@pytest.mark.skipif(not shutil.which("curl"), reason="curl CLI not installed")
@pytest.mark.parametrize("endpoint", ["h1", "h2", "h1tls"])
def test_paths_arrive_as_sent(lab, endpoint):
    """AWS-style encoded paths (uppercase hex, unreserved characters left as they
    are) reach the verifier byte for byte through every front, so a signature
    over the path as sent can be checked. (nghttpx normalises other spellings,
    e.g. %7E -> ~, %2b -> %2B: see tests/lab/README.md.)"""
    keys = ["a b+c.bin", "100%.bin", "x~y.bin", "é.bin", "a(1)!*'.bin", "s;c=e&a.bin"]
    for k in keys:
        lab.put_object("public", "p/" + k, k.encode())
    for k in keys:
        url = lab.object_url("public", "p/" + k, endpoint)
        cp = subprocess.run(["curl", "-sS", "--path-as-is", "--cacert", lab.info["cert"], url],
                            capture_output=True, timeout=60)
        assert cp.stdout == k.encode()
        e = lab.log()[-1]
        assert e["path"] == "/public/p/" + urllib.parse.quote(k, safe="/~")
        assert e["key"] == "p/" + k


def test_verifier_query_is_canonicalised(lab, small_cog):
    # A listing with query parameters needing encoding, signed canonically.
    status, _, body = request(lab, "GET", "lab", query=[("prefix", "scenes/S2A"),
                                                        ("delimiter", "/"), ("list-type", "2")])
    assert status == 200 and b"<ListBucketResult" in body
    (e,) = lab.log()
    assert (e["sig"], e["kind"]) == ("ok", "LIST")


def test_temporary_credentials(lab, pub):
    lab.register_credentials("ASIATEMPORARY0000001", "temp/secret+key", token="tok/en+==")
    ok = request(lab, "GET", "public", pub, akid="ASIATEMPORARY0000001",
                 secret="temp/secret+key", token="tok/en+==")
    bad_token = request(lab, "GET", "public", pub, akid="ASIATEMPORARY0000001",
                        secret="temp/secret+key", token="other")
    lab.register_credentials("ASIAEXPIRED000000001", "s", token="t", expires_at=int(time.time()) - 10)
    expired = request(lab, "GET", "public", pub, akid="ASIAEXPIRED000000001", secret="s", token="t")
    assert ok[0] == 200 and ok[2] == PAYLOAD
    assert (bad_token[0], error_code(bad_token[2])) == (403, "InvalidToken")
    assert (expired[0], error_code(expired[2])) == (400, "ExpiredToken")
    assert [e["akid"] for e in lab.log()] == ["ASIATEMPORARY0000001"] * 2 + ["ASIAEXPIRED000000001"]


def test_anonymous_only_reads_public(lab, pub):
    assert request(lab, "GET", "public", pub, signed=False)[0] == 200
    status, _, body = request(lab, "GET", "lab", "anything", signed=False)
    assert (status, error_code(body)) == (403, "AccessDenied")
    status, _, body = request(lab, "PUT", "public", "new.bin", signed=False)
    assert (status, error_code(body)) == (403, "AccessDenied")
    assert [e["sig"] for e in lab.log()] == ["anonymous"] * 3


@pytest.mark.parametrize("endpoint", ["h1", "h2", "h1tls"])
def test_stock_gdal_requests_all_verify(lab, gdal, small_cog, endpoint):
    path = f"/vsis3/lab/{small_cog['key']}"
    cp, _ = gdal.run(["gdalinfo", path], endpoint=endpoint)
    assert cp.returncode == 0, cp.stderr
    assert "Size is 2048, 2048" in cp.stdout
    log = lab.log()
    assert log, "GDAL made no request"
    assert all(e["sig"] == "ok" and e["endpoint"] == endpoint and 200 <= e["status"] < 300
               for e in log), log
    assert {e["kind"] for e in log} <= {"LIST", "GET_RANGE", "HEAD"}


def test_stock_gdal_wrong_secret_fails_clearly(lab, gdal, small_cog):
    cp, _ = gdal.run(["gdalinfo", f"/vsis3/lab/{small_cog['key']}"],
                     extra={"AWS_SECRET_ACCESS_KEY": "wrong"})
    assert cp.returncode != 0
    log = lab.log()
    assert log and all(e["sig"] == "bad" and e["status"] == 403 for e in log)
    assert {e["error"] for e in log} == {"SignatureDoesNotMatch"}


@pytest.mark.skipif(not shutil.which("curl"), reason="curl CLI not installed")
@pytest.mark.parametrize("endpoint,version", [("h2", "2"), ("h1tls", "1.1"), ("h1", "1.1")])
def test_alpn_per_endpoint(lab, pub, endpoint, version):
    url = lab.object_url("public", pub, endpoint)
    cp = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_version} %{http_code}",
                         "--cacert", lab.info["cert"], "--http2", url],
                        capture_output=True, text=True, timeout=60)
    assert cp.stdout == f"{version} 200", cp.stderr
    assert lab.log()[-1]["endpoint"] == endpoint


# -- latency ---------------------------------------------------------------------
def test_delay_adds_round_trips(lab, pub):
    lab.set_delay(10)  # one-way: RTT 20 ms
    port = lab.info["endpoints"]["h1"]["port"]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        t0 = time.monotonic()
        for _ in range(10):
            conn.request("GET", f"/public/{pub}", headers={"Range": "bytes=0-9"})
            resp = conn.getresponse()
            assert resp.read() == PAYLOAD[:10]
        elapsed = time.monotonic() - t0
    finally:
        conn.close()
    assert elapsed >= 0.200  # a lower bound only: 10 sequential requests x 20 ms RTT
    assert lab.connections("h1")["accepted"] == 1
    assert len(lab.log()) == 10


@pytest.mark.skipif(not shutil.which("curl"), reason="curl CLI not installed")
def test_tls_handshake_pays_round_trips(lab, pub):
    lab.set_delay(25, "h1tls")  # RTT 50 ms on h1tls only
    assert lab.connections("h1tls")["delay_ms"] == 25 and lab.connections("h1")["delay_ms"] == 0
    cp = subprocess.run(["curl", "-sS", "-o", "/dev/null", "--cacert", lab.info["cert"],
                         "-w", "%{time_appconnect} %{time_total}",
                         lab.object_url("public", pub, "h1tls")],
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    handshake, total = map(float, cp.stdout.split())
    # Lower bounds only: TLS 1.3 needs 1 RTT, the GET another (TCP connect is not delayed).
    assert handshake >= 0.050
    assert total >= 0.100


def test_control_api_rejects_bad_input(lab):
    with pytest.raises(lab_client.LabError, match="unknown fault kind 'flood'"):
        lab.fault("flood")
    with pytest.raises(lab_client.LabError, match="count must be"):
        lab.fault("slowdown", count=0)
    with pytest.raises(lab_client.LabError, match='"ms" >= 0'):
        lab.set_delay(-5)
    with pytest.raises(lab_client.LabError, match="unknown endpoint"):
        lab.env("h3")
    with pytest.raises(lab_client.LabError, match="NoSuchBucket"):
        lab.put_object("no-such-bucket", "k", b"x")
    with pytest.raises(lab_client.LabError, match="not a region name"):
        lab.create_bucket("okname", region="moon")
    assert lab._call("GET", "/faults")["rules"] == []


def test_stats_report_lab_cpu(lab, pub):
    before = lab.stats()
    for _ in range(20):
        request(lab, "GET", "public", pub)
    after = lab.stats()
    assert after["cpu_user_ms"] + after["cpu_system_ms"] > before["cpu_user_ms"] + before["cpu_system_ms"]
    assert after["rss"] > 10 * 1024 * 1024


def test_log_since(lab, pub):
    for _ in range(3):
        request(lab, "HEAD", "public", pub)
    first = lab.log()
    assert [e["seq"] for e in first] == [1, 2, 3]
    assert [e["seq"] for e in lab.log(since=2)] == [3]


# -- faults, as a real client sees them -----------------------------------------
def _get(lab, key, timeout=30, headers=None):
    """GET on the public bucket over one fresh connection: (status, headers, body, exc)."""
    port = lab.info["endpoints"]["h1"]["port"]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", f"/public/{urllib.parse.quote(key)}", headers=headers or {})
        resp = conn.getresponse()
        hdrs = {k.lower(): v for k, v in resp.getheaders()}
        try:
            return resp.status, hdrs, resp.read(), None
        except (http.client.IncompleteRead, ConnectionError, socket.timeout) as exc:
            return resp.status, hdrs, None, exc
    finally:
        conn.close()


@pytest.mark.parametrize("kind,status,code", [("slowdown", 503, "SlowDown"),
                                              ("internal", 500, "InternalError"),
                                              ("forbidden", 403, "AccessDenied"),
                                              ("notfound", 404, "NoSuchKey")])
def test_status_faults(lab, pub, kind, status, code):
    lab.fault(kind, count=2)
    results = [_get(lab, pub) for _ in range(3)]
    assert [r[0] for r in results] == [status, status, 200]
    assert error_code(results[0][2]) == code
    assert results[2][2] == PAYLOAD
    assert [e["fault"] for e in lab.log()] == [kind, kind, None]


def test_throttle_sends_retry_after(lab, pub):
    lab.fault("throttle", seconds=3)
    status, headers, body, _ = _get(lab, pub)
    assert status == 429 and headers["retry-after"] == "3"
    assert _get(lab, pub)[0] == 200


def test_fault_matches_key_and_method(lab, pub):
    lab.put_object("public", "t/other.bin", b"other")
    lab.fault("slowdown", key="other.bin")
    lab.fault("internal", method="HEAD")
    assert _get(lab, pub)[0] == 200
    assert _get(lab, "t/other.bin")[0] == 503
    assert _get(lab, "t/other.bin")[0] == 200
    port = lab.info["endpoints"]["h1"]["port"]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("HEAD", f"/public/{pub}")
    assert conn.getresponse().status == 500
    conn.close()


def test_reset_fault(lab, pub):
    lab.fault("reset")
    status, headers, body, exc = _get(lab, pub)
    assert status == 200 and int(headers["content-length"]) == len(PAYLOAD)
    assert isinstance(exc, ConnectionResetError), repr(exc)  # a RST, not a clean close
    (e,) = lab.log()
    assert e["fault"] == "reset" and 0 < e["bytes_sent"] < len(PAYLOAD)
    assert _get(lab, pub)[2] == PAYLOAD


@pytest.mark.skipif(not shutil.which("curl"), reason="curl CLI not installed")
@pytest.mark.parametrize("endpoint", ["h2", "h1tls"])
@pytest.mark.parametrize("kind", ["reset", "truncated"])
def test_body_faults_through_tls_fronts(lab, pub, endpoint, kind):
    """Behind nghttpx a cut backend response reaches the client as a failed
    transfer: an h2 stream error, or an h1 connection closed early."""
    lab.fault(kind)
    cp = subprocess.run(["curl", "-sS", "-o", "/dev/null", "--cacert", lab.info["cert"], "--http2",
                         "-w", "%{size_download}", lab.object_url("public", pub, endpoint)],
                        capture_output=True, text=True, timeout=60)
    # h2: a stream error; h1: closed early (18), or, when nghttpx saw the close
    # before it had passed anything on, closed with no reply at all (52).
    assert cp.returncode in ((92,) if endpoint == "h2" else (18, 52)), cp.stderr
    assert int(cp.stdout) < len(PAYLOAD)
    (e,) = lab.log()
    assert (e["endpoint"], e["fault"]) == (endpoint, kind)


def test_truncated_fault(lab, pub):
    lab.fault("truncated")
    status, headers, body, exc = _get(lab, pub, headers={"Range": "bytes=1000-50999"})
    assert status == 206 and int(headers["content-length"]) == 50000
    assert isinstance(exc, http.client.IncompleteRead), exc
    assert len(exc.partial) == 25000 and exc.partial == PAYLOAD[1000:26000]


def test_stall_fault_then_resume(lab, pub):
    lab.fault("stall", seconds=1)
    t0 = time.monotonic()
    status, _, body, exc = _get(lab, pub)
    assert exc is None and status == 200 and body == PAYLOAD
    assert time.monotonic() - t0 >= 1.0  # lower bound of the stall this test set


def test_stall_forever_until_client_gives_up(lab, pub):
    lab.fault("stall")
    status, _, body, exc = _get(lab, pub, timeout=1)
    assert status == 200 and isinstance(exc, socket.timeout)
    assert _get(lab, pub)[2] == PAYLOAD  # the rule was used up; the lab still serves


def test_replace_and_delete_object(lab):
    lab.put_object("public", "t/v.bin", b"version one")
    s1, h1, _, _ = _get(lab, "t/v.bin")
    etag1 = h1["etag"]
    lab.put_object("public", "t/v.bin", b"version two!")
    s2, h2, body2, _ = _get(lab, "t/v.bin", headers={"If-Match": etag1})
    s4, h4, body4, _ = _get(lab, "t/v.bin")
    s3, _, body3, _ = _get(lab, "t/v.bin", headers={"If-Match": h4["etag"]})
    assert (s2, error_code(body2)) == (412, "PreconditionFailed")
    assert s4 == 200 and body4 == b"version two!" and h4["etag"] != etag1
    assert s3 == 200 and body3 == b"version two!"
    lab.delete_object("public", "t/v.bin")
    s5, _, body5, _ = _get(lab, "t/v.bin")
    assert (s5, error_code(body5)) == (404, "NoSuchKey")
    assert [e["if_match"] for e in lab.log()][:2] == [None, etag1]


def test_a_get_during_a_put_gets_the_old_object_whole(lab):
    # s3rver 3.7 writes a PUT's bytes into the object's own file as they come,
    # and answers once they are handed to the write stream, not once they are in
    # the file: a GET during the upload got a short body, and a CopyObject sent
    # the moment a PUT returned (GDAL 3.13's Rename) could copy a short file.
    # The lab writes a PUT whole under a temporary name and renames it into
    # place before it answers (lib/s3store.js): a reader gets the old bytes or
    # the new, whole, and a listing never shows the temporary name.
    old = bytes(range(256)) * 8192  # 2 MiB, larger than any stream buffer
    new = bytes(reversed(range(256))) * 8192
    lab.put_object("public", "slow/o.bin", old)
    conn = http.client.HTTPConnection("127.0.0.1", lab.info["s3rver"]["port"], timeout=30)
    try:
        conn.putrequest("PUT", "/public/slow/o.bin")
        conn.putheader("Content-Length", str(len(new)))
        conn.endheaders()
        conn.send(new[:len(new) // 2])
        time.sleep(0.5)  # s3rver has taken the first half (no assertion on time)
        during = _get(lab, "slow/o.bin", timeout=5)
        listed = request(lab, "GET", "public", query=[("list-type", "2"), ("prefix", "slow/")])
        conn.send(new[len(new) // 2:])
        resp = conn.getresponse()
        resp.read()
    finally:
        conn.close()
    after = _get(lab, "slow/o.bin")
    assert (during[0], during[3], during[2] == old) == (200, None, True)
    assert listed[0] == 200 and listed[2].count(b"<Key>") == 1, listed[2]
    assert resp.status == 200 and (after[0], after[2] == new) == (200, True)


# -- log, counts, connections ------------------------------------------------------
def test_counts_and_reset(lab, pub):
    request(lab, "GET", "lab", query=[("delimiter", "/")])
    request(lab, "HEAD", "public", pub)
    request(lab, "GET", "public", pub, extra={"range": "bytes=0-9"})
    request(lab, "GET", "public", pub)
    c = lab.counts()
    assert (c["LIST"], c["HEAD"], c["GET_RANGE"], c["GET"], c["total"]) == (1, 1, 1, 1, 4)
    assert c["bytes"] == sum(e["bytes_sent"] for e in lab.log())
    assert c["bytes"] >= 10 + len(PAYLOAD)
    assert lab.connections("h1")["accepted"] == 4
    lab.reset()
    assert lab.log() == []
    assert lab.counts()["total"] == 0
    assert lab.connections("h1")["accepted"] == 0


def test_connection_counting(lab, pub):
    port = lab.info["endpoints"]["h1"]["port"]
    conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=30) for _ in range(3)]
    for c in conns:
        c.request("GET", f"/public/{pub}", headers={"Range": "bytes=0-0"})
        c.getresponse().read()
    assert lab.connections("h1")["accepted"] == 3
    assert lab.connections("h1")["open"] == 3
    for c in conns:
        c.close()
    deadline = time.monotonic() + 10  # liveness bound, not a timing assertion
    while lab.connections("h1")["open"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lab.connections("h1")["open"] == 0
    assert lab.connections("h2")["accepted"] == 0


def test_connection_records_tell_a_probe_from_a_client(lab, pub):
    """A connection that carries no request (a port probe) is accepted but not used;
    each record names the client's port and the bytes each way."""
    port = lab.info["endpoints"]["h1"]["port"]
    probe = socket.create_connection(("127.0.0.1", port), timeout=30)
    probe.close()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", f"/public/{pub}", headers={"Range": "bytes=0-0"})
    client_port = c.sock.getsockname()[1]
    c.getresponse().read()
    c.close()
    deadline = time.monotonic() + 10  # liveness bound, not a timing assertion
    while lab.connections("h1")["open"] and time.monotonic() < deadline:
        time.sleep(0.05)
    front = lab.connections("h1")
    assert (front["accepted"], front["used"]) == (2, 1), front
    used = [r for r in front["conns"] if r["bytes_in"] > 0]
    assert [r["port"] for r in used] == [client_port], front
    assert used[0]["bytes_out"] > 0 and used[0]["closed"] >= used[0]["opened"], front
    lab.reset()
    assert lab.connections("h1")["conns"] == []


# -- process hygiene ----------------------------------------------------------------
def _alive(pid):
    return lab_client._alive(pid)


def test_two_labs_at_once(lab, pub, tmp_path):
    other = lab_client.Lab().start(tmp_path / "lab2")
    try:
        ports = {ep["port"] for ep in other.info["endpoints"].values()}
        assert not ports & {ep["port"] for ep in lab.info["endpoints"].values()}
        other.put_object("public", "only-here.bin", b"2")
        s, _, _ = request(other, "GET", "public", "only-here.bin")
        assert s == 200
        assert [e["key"] for e in other.log()] == ["only-here.bin"]
        assert lab.log() == []
    finally:
        pids = other.info["pids"]
        other.stop()
    assert not any(_alive(p) for p in pids)


def test_stop_leaves_no_process(tmp_path):
    lab = lab_client.Lab().start(tmp_path / "l")
    pids = lab.info["pids"]
    assert len(pids) == 3 and all(_alive(p) for p in pids)
    lab.stop()
    assert not any(_alive(p) for p in pids)


def _wait_gone(pids, seconds=10):
    deadline = time.monotonic() + seconds  # liveness bound
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def test_killed_lab_leaves_no_orphans(tmp_path):
    lab = lab_client.Lab().start(tmp_path / "k")
    pids = lab.info["pids"]
    os.kill(pids[0], signal.SIGKILL)  # labd dies without cleaning up
    lab.proc.wait(timeout=10)
    assert _wait_gone(pids[1:]) == []  # nghttpx children die with it (pdeathsig)
    lab.stop()


def test_lab_exits_when_parent_pipe_closes(tmp_path):
    lab = lab_client.Lab().start(tmp_path / "p")
    pids = lab.info["pids"]
    lab.proc.stdin.close()  # what a dead test runner looks like to labd
    assert lab.proc.wait(timeout=15) == 0
    assert _wait_gone(pids) == []
    lab.stop()


def test_bad_start_arguments_fail_fast(tmp_path):
    node = shutil.which("node")
    cp = subprocess.run([node, str(lab_client.LAB_DIR / "labd.js"), "--dir", str(tmp_path),
                         "--delay-ms", "x"],
                        capture_output=True, text=True, timeout=30)
    assert cp.returncode == 2 and "--delay-ms" in cp.stderr


def test_missing_nghttpx_fails_clearly(tmp_path, monkeypatch):
    monkeypatch.setenv("VT_NGHTTPX", str(tmp_path / "no-nghttpx"))
    lab = lab_client.Lab()
    with pytest.raises(lab_client.LabError, match=r"nghttpx \(h2\).*no-nghttpx"):
        lab.start(tmp_path / "x", timeout=30)
    assert lab.proc is None  # stopped, nothing left running
