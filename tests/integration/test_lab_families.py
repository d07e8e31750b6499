"""test_lab_families.py: the lab's issue-20 servers answer as the real ones do, checked
from the outside (plain HTTP clients, GDAL's own signer), never through the lab's code:

- presigned S3 URLs (lib/presign.js): one GDAL signs (gdal.GetSignedURL) is accepted, a
  tampered one is not, a GET-signed one refuses HEAD, an expired one says "Request has
  expired", a redirect hands out a presigned URL that expires after its ttl;
- /_web/ routes (lib/webroutes.js): no Range, no HEAD, no validators, tokens;
- the GCS front (lib/gcs.js): GOOG1 with a wrong secret or an old Date, bearer tokens the
  lab never issued, token grants with a wrong client secret or a JWT signed by another
  key, the metadata server without its header: all refused, with GCS's error codes;
- Azurite (lib/azure.js): a wrong account key refused by Azurite and logged as such.
Each refusal is also checked to be the lab's (the log's verdict), so a lab that accepted
everything would fail here.
"""

import base64
import hashlib
import hmac
import http.client
import json
import subprocess
import time
import urllib.parse
from email.utils import formatdate

import pytest

import lab_client

PY = "/usr/bin/python3"
BODY = bytes(range(256)) * 400  # 102400 bytes
KEY = "fam/obj.bin"


@pytest.fixture(scope="module")
def objs(lab):
    for bucket in ("lab", "public"):
        lab.put_object(bucket, KEY, BODY)
    return KEY


def _req(lab, method, url, headers=None, body=None):
    """One request with http.client (h1 endpoints): (status, headers, body)."""
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        c.request(method, u.path + ("?" + u.query if u.query else ""), body=body,
                  headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def _curl(lab, *args):
    """curl over TLS with the lab's CA: (http code, body bytes)."""
    cp = subprocess.run(["curl", "-sS", "--cacert", lab.info["cert"], "-o", "-", "-w",
                         "\n%{http_code}"] + list(args), capture_output=True, timeout=60)
    out, code = cp.stdout.rsplit(b"\n", 1)
    return int(code), out


def _last(lab):
    return lab.log()[-1]


# -- presigned URLs ----------------------------------------------------------------------
def test_gdal_signed_url_is_accepted_and_tampering_is_not(lab, objs):
    """GDAL's own SigV4 query signer (gdal.GetSignedURL) against the lab's verifier."""
    env = lab_client.gdal_env(lab.env("h1"))
    script = ("from osgeo import gdal; print(gdal.GetSignedURL('/vsis3/lab/%s', "
              "['EXPIRATION_DELAY=600']))" % KEY)
    url = subprocess.run([PY, "-c", script], env=env, capture_output=True, text=True,
                         timeout=60).stdout.strip()
    assert "X-Amz-Signature=" in url, url
    st, _, body = _req(lab, "GET", url, {"Range": "bytes=0-99"})
    assert (st, body) == (206, BODY[:100])
    assert (_last(lab)["auth"], _last(lab)["sig"]) == ("presigned", "ok")
    sig = url.rsplit("X-Amz-Signature=", 1)[1][:64]
    bad = url.replace(sig, ("0" if sig[0] != "0" else "1") + sig[1:])
    st, _, body = _req(lab, "GET", bad)
    assert st == 403 and b"<Code>SignatureDoesNotMatch</Code>" in body
    assert _last(lab)["sig"] == "bad"
    # another object's key under the same signature
    st, _, _ = _req(lab, "GET", url.replace("obj.bin", "obj.bim"))
    assert st == 403 and _last(lab)["sig"] == "bad"


@pytest.mark.parametrize("endpoint", ["h1", "h2", "h1tls"])
def test_presigned_get_refuses_head_and_expires(lab, objs, endpoint):
    url = lab.presign("lab", KEY, endpoint=endpoint, expires=120)
    code, body = _curl(lab, "-r", "0-9", url)
    assert (code, body) == (206, BODY[:10])
    code, _ = _curl(lab, "-I", url)
    assert code == 403 and (_last(lab)["method"], _last(lab)["error"]) == \
        ("HEAD", "SignatureDoesNotMatch")
    old = lab.presign("lab", KEY, endpoint=endpoint, expires=60, signed_at=int(time.time()) - 3600)
    code, body = _curl(lab, old)
    assert code == 403 and b"<Code>AccessDenied</Code>" in body and b"Request has expired" in body
    assert _last(lab)["sig"] == "expired"


def test_presigned_unknown_key_and_head_signed_url(lab, objs):
    url = lab.presign("lab", KEY, method="HEAD")
    st, _, _ = _req(lab, "HEAD", url)
    assert st == 200 and _last(lab)["sig"] == "ok"
    st, _, _ = _req(lab, "GET", url)
    assert st == 403 and _last(lab)["error"] == "SignatureDoesNotMatch"
    lab.register_credentials("AKIAFAMILYTEST000001", "s3cr3t")
    url = lab.presign("lab", KEY, akid="AKIAFAMILYTEST000001")
    assert _req(lab, "GET", url)[0] == 200
    st, _, _ = _req(lab, "GET", url.replace("AKIAFAMILYTEST000001", "AKIAFAMILYTEST000009"))
    assert st == 403 and _last(lab)["sig"] == "unknown-key"


@pytest.mark.parametrize("code", [302, 307])
def test_redirect_to_expiring_presigned_url(lab, objs, code):
    st, h, _ = _req(lab, "GET", lab.web_url("lab", KEY, f"redirect={code},ttl=1"))
    assert st == code
    loc = h["location"]
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(loc).query)
    assert q["X-Amz-Expires"] == ["1"] and urllib.parse.urlsplit(loc).path == "/lab/" + KEY
    assert _req(lab, "GET", loc, {"Range": "bytes=5-9"})[2] == BODY[5:10]
    time.sleep(2.2)  # past the target's expiry (a condition, not a measurement)
    st, _, body = _req(lab, "GET", loc)
    assert st == 403 and b"Request has expired" in body


# -- /_web/ routes -------------------------------------------------------------------------
def test_web_routes(lab, objs):
    st, h, body = _req(lab, "GET", lab.web_url("public", KEY, "norange"), {"Range": "bytes=0-9"})
    assert (st, len(body)) == (200, len(BODY)) and "content-range" not in h
    e = _last(lab)
    assert (e["route"], e["range"], e["bytes_sent"]) == ("norange", "bytes=0-9", len(BODY))
    for status in (405, 403):
        st, _, _ = _req(lab, "HEAD", lab.web_url("public", KEY, f"nohead={status}"))
        assert st == status
        assert _req(lab, "GET", lab.web_url("public", KEY, f"nohead={status}"))[0] == 200
    st, h, _ = _req(lab, "GET", lab.web_url("public", KEY, "noetag,nolm"))
    assert st == 200 and "etag" not in h and "last-modified" not in h
    st, h, _ = _req(lab, "GET", lab.web_url("public", KEY, "noetag"))
    assert "etag" not in h and "last-modified" in h
    # anonymous is for bucket public only; a token opens `lab`
    assert _req(lab, "GET", lab.web_url("lab", KEY, "norange"))[0] == 403
    tok = lab.token()
    assert _req(lab, "GET", lab.web_url("lab", KEY, "token", query={"token": tok}))[2] == BODY
    assert _last(lab)["query"] == "token=" + tok and _last(lab)["auth"] == "token"
    st, _, body = _req(lab, "GET", lab.web_url("lab", KEY, "token", query={"token": tok + "x"}))
    assert st == 403 and b"AuthenticationFailed" in body
    assert _req(lab, "GET", lab.web_url("public", KEY, "bogus"))[0] == 400


def test_web_html_index(lab, objs):
    """`index`: a directory GET answers an autoindex page GDAL's /vsicurl/ parses
    (gdal.ReadDir), titled with the path as requested; without it, s3rver's 404."""
    lab.put_object("public", "fam/sub/deeper.bin", b"x")
    url = lab.web_url("public", "fam/", "index")
    st, h, body = _req(lab, "GET", url)
    assert st == 200 and h["content-type"].startswith("text/html")
    assert b"<title>Index of /_web/index/public/fam/</title>" in body
    assert _req(lab, "GET", lab.web_url("public", "fam/", "noetag"))[0] == 404
    script = "from osgeo import gdal; print(sorted(gdal.ReadDir('/vsicurl/%s') or []))" % url
    out = subprocess.run([PY, "-c", script], env=lab_client.gdal_env({}), capture_output=True,
                         text=True, timeout=60).stdout.strip()
    assert out == str(sorted(["obj.bin", "sub"]))


# -- GCS ---------------------------------------------------------------------------------
def _goog1(method, path, key, secret, date, extra=None):
    goog = "".join(f"{k}:{v}\n" for k, v in sorted((extra or {}).items()))
    sts = f"{method}\n\n\n{date}\n{goog}{path}"
    sig = base64.b64encode(hmac.new(secret.encode(), sts.encode(), hashlib.sha1).digest())
    return dict(extra or {}, Date=date, Authorization=f"GOOG1 {key}:{sig.decode()}")


def test_gcs_hmac(lab, objs):
    info = lab.family("gcs")
    url = f"http://127.0.0.1:{info['endpoints']['gcs-h1']['port']}/lab/{KEY}"
    k, s = info["hmac"]["access_key_id"], info["hmac"]["secret"]
    now = formatdate(usegmt=True)
    h = _goog1("GET", f"/lab/{KEY}", k, s, now, {"x-goog-user-project": "billme"})
    st, _, body = _req(lab, "GET", url, dict(h, Range="bytes=0-9"))
    assert (st, body) == (206, BODY[:10])
    e = _last(lab)
    assert (e["endpoint"], e["auth"], e["sig"], e["xhdr"]) == \
        ("gcs-h1", "goog1", "ok", {"x-goog-user-project": "billme"})
    for hdrs, code in ((_goog1("GET", f"/lab/{KEY}", k, s + "x", now), "SignatureDoesNotMatch"),
                       (_goog1("GET", f"/lab/{KEY}", k, s, formatdate(time.time() - 3600,
                                                                     usegmt=True)),
                        "RequestTimeTooSkewed"),
                       (_goog1("GET", f"/lab/{KEY}", "GOOG1ENOBODY", s, now), "InvalidAccessKeyId"),
                       ({}, "AccessDenied")):
        st, _, body = _req(lab, "GET", url, hdrs)
        assert st == 403 and f"<Code>{code}</Code>".encode() in body, body
        assert _last(lab)["error"] == code
    # the header signed is not the header sent
    h = _goog1("GET", f"/lab/{KEY}", k, s, now, {"x-goog-user-project": "a"})
    h["x-goog-user-project"] = "b"
    assert _req(lab, "GET", url, h)[0] == 403


def _token_call(lab, form):
    info = lab.family("gcs")
    return _req(lab, "POST", info["oauth2"]["token_url"],
                {"Content-Type": "application/x-www-form-urlencoded"},
                urllib.parse.urlencode(form).encode())


def test_gcs_oauth2_grants_and_bearer(lab, objs):
    info = lab.family("gcs")
    o = info["oauth2"]
    form = {"refresh_token": o["refresh_token"], "client_id": o["client_id"],
            "client_secret": o["client_secret"], "grant_type": "refresh_token"}
    st, _, body = _token_call(lab, form)
    assert st == 200
    tok = json.loads(body)["access_token"]
    st, _, body = _token_call(lab, dict(form, client_secret="nope"))
    assert st == 400 and json.loads(body)["error"] == "invalid_client"
    st, _, body = _token_call(lab, dict(form, refresh_token="nope"))
    assert st == 400 and json.loads(body)["error"] == "invalid_grant"
    url = f"http://127.0.0.1:{info['endpoints']['gcs-h1']['port']}/lab/{KEY}"
    assert _req(lab, "GET", url, {"Authorization": f"Bearer {tok}"})[2] == BODY
    assert (_last(lab)["auth"], _last(lab)["akid"]) == ("bearer", "refresh_token")
    st, _, body = _req(lab, "GET", url, {"Authorization": f"Bearer {tok}x"})
    assert st == 401 and b"AuthenticationRequired" in body and _last(lab)["sig"] == "bad"
    # the metadata server wants its header
    st, _, _ = _req(lab, "GET", info["gce_url"])
    assert st == 403 and _last(lab)["endpoint"] == "gcs-auth"
    st, _, body = _req(lab, "GET", info["gce_url"], {"Metadata-Flavor": "Google"})
    assert st == 200 and json.loads(body)["token_type"] == "Bearer"


def _jwt(key_pem, claims):
    """An RS256 JWT signed by `key_pem` with openssl (not the lab's code)."""
    enc = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=")  # noqa: E731
    head = enc(json.dumps({"alg": "RS256", "typ": "JWT"}).encode())
    body = enc(json.dumps(claims).encode())
    sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key_pem],
                         input=head + b"." + body, capture_output=True, check=True).stdout
    return (head + b"." + body + b"." + enc(sig)).decode()


def test_gcs_service_account_jwt(lab, objs, tmp_path):
    info = lab.family("gcs")
    sa = json.loads(open(info["service_account_file"]).read())
    mine = tmp_path / "sa.pem"
    mine.write_text(sa["private_key"])
    other = tmp_path / "other.pem"
    subprocess.run(["openssl", "genrsa", "-out", str(other), "2048"], check=True,
                   capture_output=True)
    now = int(time.time())
    claims = {"iss": sa["client_email"], "aud": info["oauth2"]["token_url"],
              "scope": "https://www.googleapis.com/auth/devstorage.read_write",
              "iat": now, "exp": now + 3600}
    grant = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    st, _, body = _token_call(lab, {"grant_type": grant, "assertion": _jwt(str(mine), claims)})
    assert st == 200, body
    for key, c in ((other, claims), (mine, dict(claims, exp=now - 10, iat=now - 3610)),
                   (mine, dict(claims, iss="someone@else")), (mine, dict(claims, aud="x"))):
        st, _, body = _token_call(lab, {"grant_type": grant, "assertion": _jwt(str(key), c)})
        assert st == 400 and json.loads(body)["error"] == "invalid_grant", (c, body)
        assert _last(lab)["sig"] == "bad"


# -- Azurite ---------------------------------------------------------------------------------
def test_azure_refusal_is_logged(lab):
    lab.put_object("lab", KEY, BODY, family="az")
    env = dict(lab.family_env("az-h1", "shared_key"))
    script = ("from osgeo import gdal; f = gdal.VSIFOpenL('/vsiaz/lab/%s', 'rb'); "
              "print(len(gdal.VSIFReadL(1, 1 << 20, f)) if f else -1)" % KEY)
    run = lambda e: subprocess.run([PY, "-c", script], env=lab_client.gdal_env(e),  # noqa: E731
                                   capture_output=True, text=True, timeout=60).stdout.strip()
    lab.reset()
    assert run(env) == str(len(BODY))
    assert all(e["endpoint"] == "az-h1" and e["auth"] == "sharedkey" and e["sig"] == "ok"
               for e in lab.log())
    lab.reset()
    env["AZURE_STORAGE_ACCESS_KEY"] = base64.b64encode(b"not the key" * 6).decode()
    assert run(env) == "-1"
    log = lab.log()
    assert log and all(e["sig"] == "bad" and e["status"] == 403 for e in log), log


@pytest.mark.parametrize("mode", ["hmac", "refresh_token"])
def test_gcs_user_project_from_gdal(lab, objs, mode):
    """Stock GDAL's GS_USER_PROJECT reaches the front as x-goog-user-project (signed in the
    GOOG1 string when HMAC) and the request verifies."""
    env = dict(lab.family_env("gcs-h1", mode), GS_USER_PROJECT="vsitune-billing")
    script = ("from osgeo import gdal; f = gdal.VSIFOpenL('/vsigs/lab/%s', 'rb'); "
              "print(len(gdal.VSIFReadL(1, 1 << 20, f)) if f else -1)" % KEY)
    lab.reset()
    out = subprocess.run([PY, "-c", script], env=lab_client.gdal_env(env), capture_output=True,
                         text=True, timeout=60).stdout.strip()
    assert out == str(len(BODY))
    data = [e for e in lab.log() if e["endpoint"] == "gcs-h1"]
    assert data and all(e["sig"] == "ok" and e["xhdr"] == {"x-goog-user-project": "vsitune-billing"}
                        for e in data), data
