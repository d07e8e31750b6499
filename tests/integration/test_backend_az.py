"""test_backend_az.py: the Azure backend's table (vt__backend_az, backends/az/) driven
directly against the lab's Azurite (endpoints az-h1: HTTP/1.1, az-h2: h2 over TLS) through
tests/tools/vt_backend_probe --backend az (its batch step: probe_az.c), without GDAL's VSI
layer, and read from what the server saw (the lab's request log; Azurite itself checks Shared
Key signatures and SAS tokens).

- every credential mode the lab offers (shared_key, sas, connection_string, nosign) on both
  endpoints: HEAD, ranged GETs across the object (the 212 MB s2 fixture where the object must
  be larger than every buffer), a batch built with build_get, List Blobs;
- stock GDAL 3.6 (plugin not loaded) reading the same object in the same mode: the same
  paths, query strings, ranges and x-ms-* headers reach Azurite (CPL_AZURE_TIMESTAMP fixes
  the date for both, so the headers compare byte for byte), with the same verdicts;
- failures: a wrong key, an expired SAS, a missing blob and no credentials at all, as
  GDAL words them (what the GDAL face would report from last_failure) beside stock
  GDAL's own error for the same open;
- If-Match pinning (412 after the blob changed), access identities (keyed, never the
  secret), and the managed identity token (IMDS) fetched once, kept, and fetched again
  after forget, as stock GDAL fetches it.
"""
import contextlib
import email.utils
import hashlib
import http.server
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))
import backend_probe  # noqa: E402
import lab_client  # noqa: E402
import fixtures as lab_fixtures  # noqa: E402
from parity import gdal_at_least  # noqa: E402

PY = "/usr/bin/python3"
PROBE = backend_probe.path()
SMALL_KEY = "az/small.tif"
S2_KEY = "az/dir/s2.tif"
MODES = ("shared_key", "sas", "connection_string", "nosign")
AUTH = {"shared_key": "sharedkey", "connection_string": "sharedkey", "sas": "sas",
        "nosign": "anonymous"}
# stock GDAL 3.6.2's headers per mode (CPL_CURL_VERBOSE on the lab); 3.13 sends
# x-ms-version unsigned too
XHDR = {"shared_key": {"x-ms-date", "x-ms-version"},
        "connection_string": {"x-ms-date", "x-ms-version"},
        "sas": {"x-ms-date"}, "nosign": {"x-ms-date"}}
if gdal_at_least(3, 13):
    XHDR = {m: {"x-ms-date", "x-ms-version"} for m in XHDR}

pytestmark = pytest.mark.skipif(not PROBE.is_file(), reason="vt_backend_probe not built")


def _env(lab, ep, mode, **extra):
    env = dict(lab.family_env(ep, mode))
    # never ask 169.254.169.254 from here (GDAL's managed identity fallback)
    env.setdefault("CPL_AZURE_VM_API_ROOT_URL", "http://127.0.0.1:9")
    env["AZURE_CONFIG_DIR"] = ""
    env.update(extra)
    return lab_client.gdal_env(env)


def probe(env, *args, timeout=300):
    return backend_probe.lines(backend_probe.run("az", args, env, timeout)[1], az=True)


def _kv(line):
    return dict(p.split("=", 1) for p in line.split()[1:] if "=" in p)


def _sha(path, off, n):
    with open(path, "rb") as f:
        f.seek(off)
        return hashlib.sha256(f.read(n)).hexdigest()


@pytest.fixture(scope="module")
def objs(lab):
    """The small and s2 fixtures in Azurite's containers lab and public."""
    out = {}
    for name, key in (("small", SMALL_KEY), ("s2", S2_KEY)):
        path = lab_fixtures.generate(name)
        for c in ("lab", "public"):
            lab.put_object(c, key, path, family="az")
        out[name] = {"key": key, "path": str(path), "size": path.stat().st_size}
    lab.put_object("lab", "az/dir/", b"", family="az")
    lab.put_object("lab", "az/dir/sub/x.bin", b"x" * 10, family="az")
    lab.put_object("public", "az/dir/sub/x.bin", b"x" * 10, family="az")
    return out


def _container(mode):
    return "public" if mode == "nosign" else "lab"


CASES = [(ep, mode) for ep in ("az-h1", "az-h2") for mode in MODES]


@pytest.mark.parametrize("ep,mode", CASES, ids=[f"{e}-{m}" for e, m in CASES])
def test_every_mode_reads_and_lists(lab, objs, ep, mode):
    """HEAD, ranged GETs at the start, the middle and the tail of the 212 MB object (and a
    range past its end), a batch of 1 MiB requests built with build_get, a listing: the
    bytes are the file's, and Azurite saw each request as asked, authenticated as the mode
    says and accepted."""
    o = objs["s2"]
    c, size = _container(mode), o["size"]
    path = f"{c}/{o['key']}"
    mid, tail = size // 2, size - 3000
    env = _env(lab, ep, mode)
    lab.reset()
    out = probe(env, "head", path, "get", path, 0, 16384, "get", path, mid, 4 << 20,
                "get", path, tail, 65536, "batch", path, size // 3, 1 << 20, 4,
                "list", c, "az/dir/", "az/dir/", 0)
    assert len(out) == (6 if mode == "nosign" else 8), out
    assert not any(l.startswith("error") for l in out[:5]), out
    h = _kv(out[0])
    assert int(h["size"]) == size and h["etag"].startswith('"0x')
    for line, (off, n) in zip(out[1:4], ((0, 16384), (mid, 4 << 20), (tail, 3000))):
        g = _kv(line)
        assert int(g["bytes"]) == n and g["sha256"] == _sha(o["path"], off, n), line
        assert g["http"] == ("2" if ep == "az-h2" else "1")
    b = _kv(out[4])
    assert b["ok"] == "4" and b["sha256"] == _sha(o["path"], size // 3, 4 << 20)
    if mode == "nosign":
        # Azure refuses to list a public container anonymously (as on Azure)
        assert out[5].startswith("error err=") and "AuthorizationFailure" in out[5]
    else:
        assert out[5] == "list n=2 truncated=0 marker=1"
        ent = sorted(out[6:8])
        assert ent[0].startswith(f"entry s2.tif {size} 0 {h['etag']} ")
        assert ent[1] == "entry sub 0 1 - 0"
    log = [e for e in lab.log() if e["endpoint"] == ep]
    assert all(e["auth"] == AUTH[mode] for e in log), log
    ranges = [e["range"] for e in log if e["kind"] == "GET_RANGE"]
    assert ranges[:3] == ["bytes=0-16383", f"bytes={mid}-{mid + (4 << 20) - 1}",
                          f"bytes={tail}-{tail + 65535}"]
    assert sorted(ranges[3:]) == sorted(
        f"bytes={size // 3 + i * (1 << 20)}-{size // 3 + (i + 1) * (1 << 20) - 1}"
        for i in range(4))
    assert all(set(e["xhdr"]) == XHDR[mode] for e in log), log
    assert all(e["xhdr"].get("x-ms-version", "2019-12-12") == "2019-12-12" for e in log)
    lst = [e for e in log if e["kind"] == "LIST"]
    assert [e["query"].split("&sv=")[0] for e in lst] == [
        "comp=list&delimiter=%2F&prefix=az%2Fdir%2F&restype=container"]
    if mode == "nosign":
        assert lst[0]["status"] == 403 and lst[0]["error"] == "AuthorizationFailure"
        assert all(e["status"] in (200, 206) for e in log if e["kind"] != "LIST")
    else:
        assert all(e["sig"] == "ok" and e["status"] in (200, 206) for e in log), log


def _stock_read(env, path, off, n):
    script = ("from osgeo import gdal\n"
              f"f = gdal.VSIFOpenL('/vsiaz/{path}', 'rb')\n"
              f"gdal.VSIFSeekL(f, {off}, 0)\n"
              f"print(len(gdal.VSIFReadL(1, {n}, f)))\n"
              "gdal.VSIFCloseL(f)\n")
    cp = subprocess.run([PY, "-c", script], env=env, capture_output=True, text=True,
                        timeout=120)
    return cp.stdout.strip()


def _sas_connection_string(lab, ep, **extra):
    """A connection string without a key: BlobEndpoint + SharedAccessSignature."""
    base = lab.family_env(ep, "sas")
    cs = (f"BlobEndpoint={base['CPL_AZURE_ENDPOINT']};"
          f"SharedAccessSignature={base['AZURE_STORAGE_SAS_TOKEN']}")
    env = {k: v for k, v in base.items() if k not in (
        "AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_SAS_TOKEN", "CPL_AZURE_ENDPOINT")}
    env.update(AZURE_STORAGE_CONNECTION_STRING=cs, CPL_AZURE_VM_API_ROOT_URL="http://127.0.0.1:9",
               AZURE_CONFIG_DIR="", **extra)
    return lab_client.gdal_env(env)


@pytest.mark.parametrize("mode", MODES + ("connection_string_sas",))
def test_same_requests_as_stock(lab, objs, mode):
    """Stock GDAL 3.6 reads the object (its open lists the directory, or sends a HEAD when
    the listing is refused, then a ranged GET); the backend sends the same requests for
    the same range and directory: the same path, query, Range, and x-ms-* headers byte for
    byte under one CPL_AZURE_TIMESTAMP (GDAL_HTTP_HEADERS' too), and Azurite's verdict is the
    same."""
    o = objs["small"]
    c = _container(mode)
    path = f"{c}/{o['key']}"
    stamp = email.utils.formatdate(time.time(), usegmt=True)
    # the user's headers ride along (GDAL 3.6 sends them on /vsiaz/; x-ms-* ones signed)
    extra = dict(CPL_AZURE_TIMESTAMP=stamp, GDAL_HTTP_HEADERS="x-ms-foo: bar,X-Other: baz")
    env = (_sas_connection_string(lab, "az-h1", **extra) if mode == "connection_string_sas"
           else _env(lab, "az-h1", mode, **extra))
    lab.reset()
    assert _stock_read(env, path, 100000, 1000) == "1000"
    stock = lab.log()
    sget = [e for e in stock if e["kind"] == "GET_RANGE"]
    assert len(sget) == 1, stock
    first, last = map(int, sget[0]["range"][6:].split("-"))
    lab.reset()
    args = []
    for e in stock:
        if e["kind"] == "LIST":  # the bound the caller asks (3.13's open: 1000)
            maxr = [q[11:] for q in e["query"].split("&") if q.startswith("maxresults=")]
            args += ["list", c, "az/", "az/", maxr[0] if maxr else 0]
        elif e["kind"] == "HEAD":
            args += ["head", path]
        elif e["kind"] == "GET_RANGE":
            args += ["get", path, first, last - first + 1]
    probe(env, *args)
    mine = lab.log()
    key = lambda e: (e["kind"], e["method"], e["path"], e["query"], e["range"],  # noqa: E731
                     e["xhdr"], e["auth"], e["sig"], e["status"], e["error"])
    assert [key(e) for e in mine] == [key(e) for e in stock]
    assert all(e["xhdr"]["x-ms-foo"] == "bar" and e["xhdr"]["x-other"] == "baz" for e in mine)


def _stock_open_error(env, path):
    script = ("from osgeo import gdal\ngdal.UseExceptions()\n"
              "try:\n"
              f"    gdal.Open('/vsiaz/{path}')\n    print('opened')\n"
              "except Exception as e:\n"
              "    print(gdal.GetLastErrorNo(), e)\n")
    cp = subprocess.run([PY, "-c", script], env=env, capture_output=True, text=True,
                        timeout=120)
    return cp.stdout.strip()


@pytest.mark.xfail(gdal_at_least(3, 13), strict=True,
                   reason="pins 3.6-3.12's words for stock's refused HEAD (\"HTTP response "
                          "code: 403\"); 3.13 words a refusal with Azure's code and message, "
                          "compared with the plugin's by test_reach_takeover.py's "
                          "test_bad_credentials")
def test_wrong_key_and_expired_sas_as_stock(lab, objs):
    """A wrong shared key (Azurite: 403 AuthorizationFailure) and an expired SAS: the
    backend's HEAD fails as stock GDAL's does on the same path, and its last failure, as
    the GDAL face would report it, is stock's own error: class CPLE_HttpResponse (11),
    "HTTP response code: 403" (GDAL 3.6's /vsiaz/ does not word Azure's error XML)."""
    path = f"lab/{objs['small']['key']}"
    bad = _env(lab, "az-h1", "shared_key", AZURE_STORAGE_ACCESS_KEY="bm90IHRoZSBrZXk=")
    expired = _env(lab, "az-h1", "sas",
                   AZURE_STORAGE_SAS_TOKEN=lab.family("az")["expired_sas_token"])
    for env in (bad, expired):
        lab.reset()
        stock = _stock_open_error(env, path)
        assert stock == "11 HTTP response code: 403", stock
        sh = [(e["method"], e["path"], e["status"]) for e in lab.log() if e["kind"] == "HEAD"]
        lab.reset()
        out = probe(env, "head", path, "report", path, "get", path, 0, 100, "report", path)
        assert out[0].startswith("error err=") and "HTTP 403" in out[0], out
        assert out[1] == "report vsie=2 cple=11 message=HTTP response code: 403", out
        assert out[3] == out[1]
        mine = [(e["method"], e["path"], e["status"]) for e in lab.log() if e["kind"] == "HEAD"]
        assert mine == sh == [("HEAD", f"/devstoreaccount1/{path}", 403)]
        assert all(e["sig"] == "bad" for e in lab.log())


def test_missing_blob_and_no_credentials_as_stock(lab, objs):
    """A missing blob: the same HEAD (404) as stock's open. No credentials at all: nothing
    reaches the server, and the failure is stock's: VSIE_AWSInvalidCredentials
    (CPLE_AWSInvalidCredentials, 15) with the running GDAL's message."""
    env = _env(lab, "az-h1", "shared_key")
    lab.reset()
    _stock_open_error(env, "lab/az/nothere.tif")
    sh = [(e["method"], e["path"], e["status"]) for e in lab.log() if e["kind"] == "HEAD"]
    lab.reset()
    out = probe(env, "head", "lab/az/nothere.tif", "fail", "lab/az/nothere.tif")
    assert "HTTP 404" in out[0] and out[1].startswith("fail err=") and "status=404" in out[1]
    mine = [(e["method"], e["path"], e["status"]) for e in lab.log() if e["kind"] == "HEAD"]
    assert mine == sh == [("HEAD", "/devstoreaccount1/lab/az/nothere.tif", 404)]

    none = lab_client.gdal_env({"CPL_AZURE_VM_API_ROOT_URL": "http://127.0.0.1:9",
                                "HOME": "/nonexistent"})
    lab.reset()
    stock = _stock_open_error(none, "lab/az/x.tif")
    out = probe(none, "get", "lab/az/x.tif", 0, 10, "report", "lab/az/x.tif")
    assert lab.log() == []
    assert stock.startswith("15 InvalidCredentials: No valid Azure credentials" if
                            gdal_at_least(3, 13) else "15 Missing AZURE_STORAGE_ACCOUNT+"), stock
    assert out[1] == "report vsie=9 cple=15 message=%s" % stock[3:], out


def test_if_match_pins_the_version(lab, objs):
    """A GET pinned to the HEAD's ETag is served; once the blob is replaced, the same
    pinned GET gets 412 from Azurite (If-Match is signed in the Shared Key string)."""
    env = _env(lab, "az-h2", "shared_key")
    lab.put_object("lab", "az/pin.bin", b"a" * 200000, family="az")
    etag = _kv(probe(env, "head", "lab/az/pin.bin")[0])["etag"]
    lab.reset()
    ok = probe(env, "pin", "lab/az/pin.bin", 100, 1000, etag)
    assert ok[0].startswith("get status=206 bytes=1000"), ok
    lab.put_object("lab", "az/pin.bin", b"b" * 200000, family="az")
    gone = probe(env, "pin", "lab/az/pin.bin", 100, 1000, etag)
    assert gone[0].startswith("error err=") and "HTTP 412" in gone[0], gone
    log = lab.log()
    assert [(e["if_match"], e["status"], e["sig"]) for e in log] == [
        (etag, 206, "ok"), (etag, 412, "ok")]


def test_access_identity(lab, objs):
    """Who requests are made as: a keyed name per credential (different keys, SAS tokens:
    different names), never the key or the token in clear; "anonymous" without signing;
    "*" when sharing across credentials is asked for. Nothing is sent to the server."""
    info = lab.family("az")
    lab.reset()
    ids = {}
    for mode in MODES:
        out = probe(_env(lab, "az-h1", mode), "ident", "lab/k", "endpoint", "lab/k")
        ids[mode] = out[0].split(" ", 1)[1]
        assert out[1].startswith("endpoint http://127.0.0.1:") and \
            out[1].endswith("/devstoreaccount1")
    other = probe(_env(lab, "az-h1", "shared_key",
                       AZURE_STORAGE_ACCESS_KEY="bm90IHRoZSBrZXk="), "ident", "lab/k")[0]
    star = probe(_env(lab, "az-h1", "sas", VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS="YES"),
                 "ident", "lab/k")[0]
    assert ids["nosign"] == "anonymous" and star == "ident *"
    assert ids["shared_key"].startswith("signed:") and ids["sas"].startswith("signed:")
    # the same account key by options or by connection string: one identity
    assert ids["shared_key"] == ids["connection_string"]
    assert len({ids["shared_key"], ids["sas"], other}) == 3
    for v in list(ids.values()) + [other]:
        assert info["account_key"] not in v and "sig=" not in v
    assert lab.log() == []


class _Imds(http.server.BaseHTTPRequestHandler):
    paths = []

    def do_GET(self):  # noqa: N802
        type(self).paths.append((self.path, self.headers.get("Metadata")))
        body = (b'{"access_token":"imds-token-1","expires_on":"%d","token_type":"Bearer"}'
                % (int(time.time()) + 3600))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def test_managed_identity_token_kept_and_forgotten(lab, objs):
    """AZURE_STORAGE_ACCOUNT alone: the token comes from the managed identity endpoint
    (CPL_AZURE_VM_API_ROOT_URL) with "Metadata: true", as stock GDAL asks it (the same
    URL); the backend asks once for two GETs, again after forget("") (VSICurlClearCache),
    and sends it as a bearer token with x-ms-version, as stock does."""
    path = f"lab/{objs['small']['key']}"
    with _imds_env(lab, _Imds) as env:
        _stock_read(env, path, 0, 100)
        stock_paths = set(_Imds.paths)
        stock_log = lab.log()
        _Imds.paths.clear()
        lab.reset()
        probe(env, "get", path, 0, 100, "get", path, 100, 100, "forget", "-",
              "get", path, 0, 100)
        assert len(_Imds.paths) == 2 and set(_Imds.paths) == stock_paths, (_Imds.paths,
                                                                           stock_paths)
        assert all(m == "true" for _, m in _Imds.paths)
        log = lab.log()
        assert len(log) == 3 and all(e["auth"] == "bearer" for e in log + stock_log)
        assert all(set(e["xhdr"]) == {"x-ms-version"} for e in log + stock_log)


@contextlib.contextmanager
def _imds_env(lab, handler):
    """A managed identity endpoint served by handler (its paths cleared) and the env of an
    account without a key that reaches it; the lab's log reset."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        root = f"http://127.0.0.1:{srv.server_address[1]}"
        env = _env(lab, "az-h1", "shared_key", CPL_AZURE_VM_API_ROOT_URL=root)
        del env["AZURE_STORAGE_ACCESS_KEY"]
        handler.paths.clear()
        lab.reset()
        yield env
    finally:
        srv.shutdown()


class _ImdsExpired(_Imds):
    """An endpoint whose tokens have already expired (a skewed clock): each use asks again."""
    paths = []

    def do_GET(self):  # noqa: N802
        type(self).paths.append((self.path, self.headers.get("Metadata")))
        body = b'{"access_token":"imds-token-1","expires_on":"1000","token_type":"Bearer"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_managed_identity_not_asked_for_the_endpoint(lab, objs):
    """Where a path's objects live (the object identity) needs no token: asking for it does
    not reach the managed identity endpoint, which stock GDAL asks only for the requests it
    signs (with an already expired token: once per signed request, never more). Each GET
    asks it once and carries its token."""
    path = f"lab/{objs['small']['key']}"
    with _imds_env(lab, _ImdsExpired) as env:
        out = probe(env, "endpoint", path, "endpoint", path)
        assert all(o.startswith("endpoint http://127.0.0.1:") for o in out), out
        assert _ImdsExpired.paths == [] and lab.log() == []
        probe(env, "get", path, 0, 100, "get", path, 100, 100)
        log = lab.log()
        assert len(log) == 2 and all(e["auth"] == "bearer" for e in log), log
        assert len(_ImdsExpired.paths) == 2, _ImdsExpired.paths
