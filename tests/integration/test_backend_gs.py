"""test_backend_gs.py: the GCS backend's table (vt__backend_gs) against the lab's GCS
front, through tests/tools/vt_backend_probe.c (no GDAL VSI layer in between), read from
what the server saw (the lab's request log).

- every credential mode (GOOG1 HMAC, refresh token, service-account JWT, GCE metadata,
  no-sign) over h1 and h2: HEAD, a range deep in the 212 MB s2 fixture (bytes equal the
  local file's), a listing, each request verified by the front (GOOG1 recomputed, bearer
  issued by the grant named, JWT checked with the key pair's public half); one token
  grant serves every request of a process, and forget (VSICurlClearCache) fetches anew;
  a token is fetched again once within 5 s of its expires_in (GDAL's GetBearer), through
  a proxy in front of the lab's token endpoint that shortens expires_in;
- stock GDAL 3.6 beside it (differential): the same range read and the same listing
  through /vsigs/ under the same environment reach the server with the same path, query,
  authorization kind and x-goog-user-project;
- failures in GCS's words: AccessDenied (no-sign on a private bucket),
  SignatureDoesNotMatch (wrong secret), a refused grant; the thread's last failure;
- the access identity: a keyed hash per credential (no secret or token in it), stable
  across processes, another one per credential and per GS_USER_PROJECT.
"""

import hashlib
import http.server
import json
import os
import subprocess
import threading
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

import backend_probe
import lab_client

PY = "/usr/bin/python3"
BUILD = Path(os.environ.get("VT_BUILD_DIR", Path(__file__).resolve().parents[2] / "build"))
PROBE = BUILD / "tests" / "tools" / "vt_backend_probe"
MODES = ["hmac", "refresh_token", "service_account", "gce"]
ENDPOINTS = ["gcs-h1", "gcs-h2"]
BEARER = {"refresh_token", "service_account", "gce"}

pytestmark = pytest.mark.skipif(not PROBE.exists(), reason=f"{PROBE} not built")


@pytest.fixture(scope="module")
def s2(lab, cogs):
    s2 = dict(cogs["s2"])
    lab.put_object("public", s2["key"], s2["path"])
    return s2


def probe(env, *args, timeout=120):
    rc, objs, err = backend_probe.run("gs", args, lab_client.gdal_env(env), timeout)
    return rc, backend_probe.lines(objs), err


def local(path, off, n):
    with open(path, "rb") as f:
        f.seek(off)
        return hashlib.sha256(f.read(n)).hexdigest()


def data_requests(lab, endpoint):
    return [e for e in lab.log() if e["endpoint"] == endpoint]


def grants(lab):
    return [e for e in lab.log() if e["endpoint"] == "gcs-auth"]


def stock_read(env, key, off, n):
    """Stock GDAL (no plugin) reads [off, off+n) of /vsigs/lab/key and lists its dir."""
    script = ("import sys; from osgeo import gdal; "
              "f = gdal.VSIFOpenL('/vsigs/lab/%s', 'rb'); gdal.VSIFSeekL(f, %d, 0); "
              "print(len(gdal.VSIFReadL(1, %d, f)))" % (key, off, n))
    r = subprocess.run([PY, "-c", script], env=lab_client.gdal_env(env),
                       capture_output=True, text=True, timeout=120)
    return r.stdout.strip()


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("mode", MODES)
def test_reads_every_mode(lab, s2, mode, endpoint):
    env = dict(lab.family_env(endpoint, mode), GS_USER_PROJECT="vsitune-billing")
    key, size = s2["key"], s2["size"]
    off, n = size - 3 * 2**20 - 12345, 2**20 + 7
    lab.reset()
    rc, out, err = probe(env, "head", f"lab/{key}", "get", f"lab/{key}", off, n,
                         "get", f"lab/{key}", 0, 16384, "list", "lab", "", "", 0)
    assert rc == 0, (out, err)
    assert out[0].startswith(f"head status=200 size={size} ")
    want_http = 2 if endpoint == "gcs-h2" else 1
    assert out[1] == f"get status=206 bytes={n} sha256={local(s2['path'], off, n)} http={want_http}"
    assert out[2].startswith(f"get status=206 bytes=16384 sha256={local(s2['path'], 0, 16384)}")
    assert any(line.startswith("entry ") and key.split("/")[0] in line for line in out[4:]), out
    seen = data_requests(lab, endpoint)
    assert [e["kind"] for e in seen] == ["HEAD", "GET_RANGE", "GET_RANGE", "LIST"], seen
    assert seen[1]["range"] == f"bytes={off}-{off + n - 1}"
    for e in seen:
        assert e["sig"] == "ok" and e["status"] in (200, 206), e
        assert e["auth"] == ("bearer" if mode in BEARER else "goog1"), e
        assert e["xhdr"] == {"x-goog-user-project": "vsitune-billing"}, e
        if mode in BEARER:
            assert e["akid"] == mode, e
    # one grant for the whole process, as GDAL keeps its bearer until expiry
    assert len(grants(lab)) == (1 if mode in BEARER else 0), grants(lab)
    if mode in BEARER:
        assert grants(lab)[0]["sig"] == "ok"

    # stock GDAL 3.6 beside it: the same read reaches the server the same way
    lab.reset()
    assert stock_read(env, key, off, n) == str(n)
    stock = [e for e in data_requests(lab, endpoint) if e["kind"] == "GET_RANGE"]
    assert stock, lab.log()
    for e in stock:
        assert (e["path"], e["query"], e["auth"], e["sig"], e["xhdr"]) == \
            (seen[1]["path"], seen[1]["query"], seen[1]["auth"], "ok", seen[1]["xhdr"]), e


def test_listing_as_stock(lab, s2):
    """The same directory listed by stock GDAL's ReadDir and by the table: the same names,
    and the same request as GDAL 3.6's (path and query; GDAL 3.13 asks ListObjects v2,
    list-type=2, of the same prefix: measured in the sid root, the one wire difference)."""
    env = lab.family_env("gcs-h1", "hmac")
    d = s2["key"].rsplit("/", 1)[0] + "/" if "/" in s2["key"] else ""
    lab.reset()
    script = "from osgeo import gdal; print('\\n'.join(sorted(gdal.ReadDir('/vsigs/lab/%s') or [])))" % d
    stock_names = subprocess.run([PY, "-c", script], env=lab_client.gdal_env(env),
                                 capture_output=True, text=True, timeout=60).stdout.split()
    stock_req = [(e["path"], e["query"].replace("list-type=2&", ""))
                 for e in data_requests(lab, "gcs-h1") if e["kind"] == "LIST"]
    lab.reset()
    rc, out, err = probe(env, "list", "lab", d, d, 0)
    assert rc == 0, (out, err)
    names = sorted(line.split(" ")[1] for line in out[1:])
    ours = [(e["path"], e["query"]) for e in data_requests(lab, "gcs-h1")]
    assert ours == stock_req[:1] and names == stock_names and names, (ours, stock_req, names, stock_names)


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_nosign(lab, s2, endpoint):
    env = lab.family_env(endpoint, "nosign")
    key, size = s2["key"], s2["size"]
    lab.reset()
    rc, out, err = probe(env, "get", f"public/{key}", size - 70000, 65536,
                         "get", f"lab/{key}", 0, 100, "fail", f"lab/{key}")
    assert out[0].startswith(f"get status=206 bytes=65536 sha256={local(s2['path'], size - 70000, 65536)}")
    assert out[1] == f"error err=access denied: gs://lab/{key}: HTTP 403 AccessDenied: Access denied."
    assert out[2] == f"fail err=access denied status=403 where=gs://lab/{key} message=-"
    assert rc == 1
    seen = data_requests(lab, endpoint)
    assert [(e["auth"], e["status"], e["xhdr"]) for e in seen] == \
        [("anonymous", 206, None), ("anonymous", 403, None)], seen
    # stock GDAL is refused the private object the same way
    lab.reset()
    assert stock_read(env, key, 0, 100) in ("", "0")
    assert all(e["auth"] == "anonymous" and e["status"] == 403 for e in data_requests(lab, endpoint))


def test_wrong_secret_in_gcs_words(lab, s2):
    env = dict(lab.family_env("gcs-h1", "hmac"), GS_SECRET_ACCESS_KEY="not-the-secret")
    lab.reset()
    rc, out, _ = probe(env, "get", f"lab/{s2['key']}", 0, 100, "fail", f"lab/{s2['key']}")
    assert rc == 1
    assert out[0].startswith(f"error err=access denied: gs://lab/{s2['key']}: HTTP 403 SignatureDoesNotMatch: ")
    assert out[1].startswith("fail err=access denied status=403 ")
    assert [e["sig"] for e in data_requests(lab, "gcs-h1")] == ["bad"]


def test_refused_grant(lab, s2):
    env = dict(lab.family_env("gcs-h1", "refresh_token"), GS_OAUTH2_REFRESH_TOKEN="1//revoked")
    lab.reset()
    rc, out, _ = probe(env, "get", f"lab/{s2['key']}", 0, 100, "fail", f"lab/{s2['key']}")
    assert rc == 1
    assert out[0].startswith("error err=")
    assert "Fetching OAuth2 access code from auth code failed." in out[0]
    assert "HTTP 400" in out[0] and "invalid_grant" in out[0], out
    assert "revoked" not in out[0]  # the refresh token is a secret
    assert "message=Fetching OAuth2 access code" in out[1]
    assert [(e["auth"], e["error"]) for e in grants(lab)] == [("refresh_token", "invalid_grant")]
    assert data_requests(lab, "gcs-h1") == []


@pytest.mark.parametrize("mode", sorted(BEARER))
def test_forget_fetches_a_new_token(lab, s2, mode):
    env = lab.family_env("gcs-h2", mode)
    lab.reset()
    rc, out, err = probe(env, "get", f"lab/{s2['key']}", 0, 10, "get", f"lab/{s2['key']}", 10, 10,
                         "forget", "-", "get", f"lab/{s2['key']}", 20, 10)
    assert rc == 0, (out, err)
    assert len(grants(lab)) == 2, grants(lab)
    assert all(e["sig"] == "ok" for e in data_requests(lab, "gcs-h2"))


def test_access_identity(lab, s2):
    idents = {}
    for mode in MODES + ["nosign"]:
        env = lab.family_env("gcs-h1", mode)
        rc, out, _ = probe(env, "ident", f"lab/{s2['key']}")
        rc2, out2, _ = probe(env, "ident", f"lab/{s2['key']}")
        assert rc == 0 and out == out2, (out, out2)  # stable across processes
        cred, shape = out[0][len("ident "):].split("|")
        idents[mode] = cred
        for secret in [v for k, v in env.items() if "SECRET" in k or "TOKEN" in k]:
            assert secret not in out[0]
    assert idents["nosign"] == "anonymous"
    assert all(idents[m].startswith("signed:") for m in MODES)
    assert len(set(idents.values())) == len(idents), idents
    env = lab.family_env("gcs-h1", "hmac")
    _, a, _ = probe(env, "ident", "lab/x")
    _, b, _ = probe(dict(env, GS_USER_PROJECT="other"), "ident", "lab/x")
    assert a[0].split("|")[0] == b[0].split("|")[0] and a != b


class _ShortTokens(http.server.BaseHTTPRequestHandler):
    """Forwards a token grant to the lab's endpoint and answers its JSON with
    expires_in cut to `ttl` (the lab issues one-hour tokens)."""
    upstream = None
    ttl = 20
    grants = 0

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        req = urllib.request.Request(type(self).upstream, data=body, method="POST",
                                     headers={"Content-Type": self.headers.get("Content-Type", "")})
        with urllib.request.urlopen(req, timeout=30) as r:
            doc = json.loads(r.read())
        type(self).grants += 1
        doc["expires_in"] = type(self).ttl
        out = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


def test_token_refreshed_before_expiry(lab, s2):
    """expires_in 20 s: the token is used while more than 5 s remain, so two reads at
    once share one grant and a read 16 s later (past 15 s, short of 20 s) fetches a
    second one (GDAL's `now < expiry - 5`); every data request carries a token the
    front accepts. The sleep outlives the token; nothing is timed.
    (Refresh-token grant: a service account's JWT names GO2A_AUD as its audience, which
    the lab checks, so no proxy can stand in front of that one.)"""
    env = lab.family_env("gcs-h1", "refresh_token")
    _ShortTokens.upstream, _ShortTokens.grants = env["GOA2_AUTH_URL_TOKEN"], 0
    srv = http.server.HTTPServer(("127.0.0.1", 0), _ShortTokens)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        env["GOA2_AUTH_URL_TOKEN"] = f"http://127.0.0.1:{srv.server_port}/token"
        key = f"lab/{s2['key']}"
        lab.reset()
        rc, out, err = probe(env, "get", key, 0, 10, "get", key, 10, 10,
                             "sleep", 16, "get", key, 20, 10)
        assert rc == 0, (out, err)
        assert _ShortTokens.grants == 2, out
        assert [e["sig"] for e in data_requests(lab, "gcs-h1")] == ["ok"] * 3
    finally:
        srv.shutdown()
        srv.server_close()


def _lab_token(lab):
    o = lab.family("gcs")["oauth2"]
    form = urllib.parse.urlencode({"refresh_token": o["refresh_token"], "client_id": o["client_id"],
                                   "client_secret": o["client_secret"],
                                   "grant_type": "refresh_token"}).encode()
    with urllib.request.urlopen(urllib.request.Request(o["token_url"], data=form), timeout=30) as r:
        return json.loads(r.read())["access_token"]


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_header_file_and_user_headers_as_stock(lab, s2, tmp_path, endpoint):
    """GDAL_HTTP_HEADER_FILE holding an Authorization line is a credential of its own
    (GDAL's chain, after the HMAC key): sent as is, with no x-goog-user-project; and
    GDAL_HTTP_HEADERS' x-goog-* headers are signed in GOOG1. Stock GDAL beside it under
    the same environment: the same path, authorization kind and x-goog-* headers."""
    hf = tmp_path / "headers.txt"
    hf.write_text(f"X-Goog-Meta-Probe: hf\nAuthorization: Bearer {_lab_token(lab)}\n")
    base = {k: v for k, v in lab.family_env(endpoint, "hmac").items()
            if not k.startswith("GS_")}
    cases = [
        (dict(base, GDAL_HTTP_HEADER_FILE=str(hf), GS_USER_PROJECT="billme"),
         ("bearer", {"x-goog-meta-probe": "hf"})),
        (dict(lab.family_env(endpoint, "hmac"), GS_USER_PROJECT="billme",
              GDAL_HTTP_HEADERS="X-Goog-Meta-Probe: uh"),
         ("goog1", {"x-goog-meta-probe": "uh", "x-goog-user-project": "billme"})),
    ]
    key, size = s2["key"], s2["size"]
    off, n = size // 2 + 3, 300000
    for env, (auth, xhdr) in cases:
        lab.reset()
        rc, out, err = probe(env, "get", f"lab/{key}", off, n)
        assert rc == 0, (out, err)
        assert out[0].startswith(f"get status=206 bytes={n} sha256={local(s2['path'], off, n)}")
        ours = data_requests(lab, endpoint)
        assert [(e["auth"], e["sig"], e["xhdr"]) for e in ours] == [(auth, "ok", xhdr)], ours
        lab.reset()
        assert stock_read(env, key, off, n) == str(n)
        stock = [e for e in data_requests(lab, endpoint) if e["kind"] == "GET_RANGE"]
        assert stock and all((e["path"], e["auth"], e["sig"], e["xhdr"]) ==
                             (ours[0]["path"], auth, "ok", xhdr) for e in stock), stock


def _stock_open_error(env, path):
    script = ("from osgeo import gdal; gdal.VSIErrorReset(); "
              "f = gdal.VSIFOpenExL('%s', 'rb', True); "
              "print(f is not None); print(gdal.VSIGetLastErrorNo()); print(gdal.VSIGetLastErrorMsg())"
              % path)
    out = subprocess.run([PY, "-c", script], env=lab_client.gdal_env(env), capture_output=True,
                         text=True, timeout=60).stdout.splitlines()
    return out[0] == "True", int(out[1]), out[2] if len(out) > 2 else ""


def test_failure_worded_as_stock(lab, s2):
    """A refused open: stock GDAL's /vsigs/ words it by the status alone (its GCS helper
    does not read GCS's XML error), VSIE_HttpError "HTTP response code: 403"; the
    table's last failure, worded by compat/gdal_error.h as the GDAL face will, gives the
    same class and words. A missing object: the failure the face gets is a bodiless 404
    (stock's words for it are printed: GDAL 3.6 sets no VSI error there)."""
    env = lab.family_env("gcs-h1", "nosign")
    key = f"lab/{s2['key']}"
    opened, no, msg = _stock_open_error(env, "/vsigs/" + key)
    assert not opened
    rc, out, _ = probe(env, "get", key, 0, 16384, "fail", key)
    assert out[1].startswith("fail err=access denied status=403 ")
    assert out[2] == f"report vsie={no} {msg}", (out, no, msg)
    assert (no, msg) == (2, "HTTP response code: 403")

    env = lab.family_env("gcs-h1", "hmac")
    opened, no, msg = _stock_open_error(env, "/vsigs/lab/no-such-object.tif")
    print("stock /vsigs/ 404:", opened, no, repr(msg))
    rc, out, _ = probe(env, "head", "lab/no-such-object.tif", "fail", "lab/no-such-object.tif")
    assert not opened
    assert out[1] == "fail err=not found status=404 where=gs://lab/no-such-object.tif message=-"


@pytest.mark.parametrize("source", ["authorized_user", "private_key", "private_key_file",
                                    "boto_refresh", "boto_hmac"])
def test_other_credential_sources(lab, s2, tmp_path, source):
    """The chain's other sources, made from the lab's credentials: an authorized_user JSON
    (refresh grant), GS_OAUTH2_PRIVATE_KEY / _FILE + GS_OAUTH2_CLIENT_EMAIL (the service
    account's key, JWT grant), the boto file's refresh token with [OAuth2] client, and its
    HMAC pair. The table's read and stock GDAL's under the same environment both verify
    at the front with the same kind of authorization and grant."""
    info = lab.family("gcs")
    o = info["oauth2"]
    sa = json.loads(Path(info["service_account_file"]).read_text())
    base = {k: v for k, v in lab.family_env("gcs-h1", "hmac").items() if not k.startswith("GS_")}
    if source == "authorized_user":
        f = tmp_path / "au.json"
        f.write_text(json.dumps({"type": "authorized_user", "client_id": o["client_id"],
                                 "client_secret": o["client_secret"],
                                 "refresh_token": o["refresh_token"]}))
        env = dict(base, GOOGLE_APPLICATION_CREDENTIALS=str(f), GOA2_AUTH_URL_TOKEN=o["token_url"])
        want = ("bearer", "refresh_token")
    elif source.startswith("private_key"):
        env = dict(base, GS_OAUTH2_CLIENT_EMAIL=sa["client_email"], GO2A_AUD=o["token_url"])
        if source == "private_key":
            env["GS_OAUTH2_PRIVATE_KEY"] = sa["private_key"]
        else:
            f = tmp_path / "key.pem"
            f.write_text(sa["private_key"])
            env["GS_OAUTH2_PRIVATE_KEY_FILE"] = str(f)
        want = ("bearer", "service_account")
    else:
        f = tmp_path / "boto"
        if source == "boto_refresh":
            f.write_text(f"[Credentials]\ngs_oauth2_refresh_token = {o['refresh_token']}\n"
                         f"[OAuth2]\nclient_id = {o['client_id']}\n"
                         f"client_secret = {o['client_secret']}\n")
            want = ("bearer", "refresh_token")
        else:
            f.write_text(f"[Credentials]\ngs_access_key_id = {info['hmac']['access_key_id']}\n"
                         f"gs_secret_access_key = {info['hmac']['secret']}\n")
            want = ("goog1", info["hmac"]["access_key_id"])
        env = dict(base, CPL_GS_CREDENTIALS_FILE=str(f), GOA2_AUTH_URL_TOKEN=o["token_url"])
    key, size = s2["key"], s2["size"]
    off, n = size - 2**20, 2**20
    lab.reset()
    rc, out, err = probe(env, "get", f"lab/{key}", off, n)
    assert rc == 0, (out, err)
    assert out[0].startswith(f"get status=206 bytes={n} sha256={local(s2['path'], off, n)}")
    assert [(e["auth"], e["akid"], e["sig"]) for e in data_requests(lab, "gcs-h1")] == \
        [want + ("ok",)], lab.log()
    lab.reset()
    assert stock_read(env, key, off, n) == str(n)
    stock = [e for e in data_requests(lab, "gcs-h1") if e["kind"] == "GET_RANGE"]
    assert stock and all((e["auth"], e["akid"], e["sig"]) == want + ("ok",) for e in stock), stock
