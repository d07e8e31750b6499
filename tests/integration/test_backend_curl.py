"""test_backend_curl.py: the /vsicurl/ backend's table (vt__backend_curl) driven directly
against the lab's web routes by tests/tools/vt_backend_probe --backend curl, without GDAL's
VSI layer: what the server saw (the lab's request log) and what the table returned, over h1,
h1tls and h2.

- a ranged GET is one GET with exactly that Range, never a HEAD (also on a server that
  refuses HEAD, and on a presigned URL signed for GET only), and its bytes are the file's,
  on the 212 MB s2 fixture far past every buffer;
- GDAL's "?url=...&opt=..." name syntax sends the same request;
- a server that ignores Range: GDAL 3.6's test and words, one request, the 212 MB body
  not waited for; a small object served whole from byte 0 is an answer;
- failures (404, a wrong token, an expired presigned URL) are worded as stock GDAL words
  the same failure, measured beside it (gdalinfo of the same URL, plugin not loaded), and
  no description carries a query value;
- a redirect is followed (the engine reports Location, the backend GETs it) as GDAL does;
- GDAL's header and auth options become the request's headers (build, no server)."""

import hashlib
import os
import time
import urllib.parse

import pytest

import backend_probe
import fixtures as lab_fixtures
import lab_client
import parity

ENDPOINTS = ("h1", "h1tls", "h2")
VT_EPROTO, VT_EACCESS, VT_ENOTFOUND, VT_EREDIRECT, VT_EINVAL = 7, 4, 3, 14, 2
RANGE_WORDS = "Range downloading not supported by this server!"


def _probe_path():
    p = backend_probe.path()
    if not p.exists():
        pytest.fail(f"vt_backend_probe not built at {p} (tests/tools)")
    return str(p)


def _commands(args):
    """The probe's commands for this file's shorthand: "get PATH OFF:LEN[:ETAG]..." (one
    get, or pin, per range) and "build PATH OFF LEN [ETAG]" take the rest of the line."""
    out, i = [], 0
    while i < len(args):
        cmd = args[i]
        if cmd == "get":
            for spec in args[i + 2:]:
                off, n, *etag = spec.split(":", 2)
                out += (["pin", args[i + 1], off, n, etag[0]] if etag
                        else ["get", args[i + 1], off, n])
            break
        if cmd == "build":
            out += args[i:i + 4] + (args[i + 4:i + 5] or ["-"])
            break
        n = 4 if cmd == "curl-note" else 2
        out += args[i:i + n]
        i += n
    return out


def _ca_env(lab, ep):
    env = lab.env(ep)
    return {k: v for k, v in env.items() if k in ("CURL_CA_BUNDLE", "SSL_CERT_FILE",
                                                  "GDAL_CURL_CA_BUNDLE")}


def probe(lab, ep, args, extra=None):
    """Run the probe for backend curl; its JSON lines."""
    env = lab_client.gdal_env(_ca_env(lab, ep), extra=extra)
    _probe_path()
    rc, objs, err = backend_probe.run("curl", _commands(args), env, 300)
    assert rc in (0, 1), err  # 1: an operation failed, as some cases want
    return objs


def stock_errors(lab, ep, url):
    """Stock GDAL (plugin not loaded): gdalinfo of the URL (or of a whole /vsicurl name),
    its CPLError lines as [class, number, first line] (gdalinfo's own "failed - unable to
    open" follows)."""
    env = lab_client.gdal_env(_ca_env(lab, ep))
    name = url if url.startswith("/vsicurl") else "/vsicurl/" + url
    cp, _ = lab_client.run_tool(["gdalinfo", name], env)
    assert cp.returncode != 0, cp.stdout[:300]
    return [[c, n, m.split("\n")[0]] for c, n, m in parity.parse_errors(cp.stderr)]


def assert_stock_words(o, stock):
    """The open failure o's report (vt__gdal_error_for_open) is stock's first error."""
    assert stock and stock[0] == [3, o["fail"]["cple"], o["fail"]["message"]], (o["fail"], stock)


def sha(path, off, n):
    with open(path, "rb") as f:
        f.seek(off)
        return hashlib.sha256(f.read(n)).hexdigest()


@pytest.fixture(scope="module")
def public_small(lab):
    return lab_fixtures.upload(lab, names=("small",), bucket="public", siblings=False)["small"]


@pytest.fixture(scope="module")
def public_s2(lab):
    return lab_fixtures.upload(lab, names=("s2",), bucket="public", siblings=False)["s2"]


def _mine(lab, ep):
    return [e for e in lab.log() if e["endpoint"] == ep]


@pytest.mark.parametrize("ep", ENDPOINTS)
def test_ranged_get_no_head(lab, public_small, ep):
    url = lab.object_url("public", public_small["key"], ep)
    off, n = 1_000_000, 300_000
    out = probe(lab, ep, ["get", url, f"{off}:{n}", f"0:16384"])
    assert [o["err"] for o in out] == [0, 0], out
    assert out[0]["sha256"] == sha(public_small["path"], off, n)
    assert out[1]["sha256"] == sha(public_small["path"], 0, 16384)
    assert out[0]["total"] == public_small["size"] and out[0]["has_content_range"]
    log = _mine(lab, ep)
    assert [(e["method"], e["range"]) for e in log] == [
        ("GET", f"bytes={off}-{off + n - 1}"), ("GET", "bytes=0-16383")], log
    assert out[0]["http_version"] == (2 if ep == "h2" else 1)


@pytest.mark.parametrize("ep", ("h1", "h2"))
def test_s2_far_range(lab, public_s2, ep):
    """A 1 MiB range 200 MB into the 212 MB s2 fixture: exactly those bytes."""
    url = lab.object_url("public", public_s2["key"], ep)
    off, n = public_s2["size"] - (3 << 20), 1 << 20
    assert off > 100 * 1024 * 1024
    out = probe(lab, ep, ["get", url, f"{off}:{n}"])
    assert out[0]["err"] == 0 and out[0]["sha256"] == sha(public_s2["path"], off, n), out
    assert [e["range"] for e in _mine(lab, ep)] == [f"bytes={off}-{off + n - 1}"]


@pytest.mark.parametrize("ep", ENDPOINTS)
def test_presigned_get_only_and_nohead(lab, small_cog, public_small, ep):
    """A presigned URL (its signature covers GET) and a server refusing HEAD: GETs only."""
    key = public_small["key"]
    for url, auth in ((lab.presign("lab", key, endpoint=ep), "presigned"),
                      (lab.web_url("public", key, "nohead=405", ep), "anonymous"),
                      (lab.web_url("public", key, "nohead=403", ep), "anonymous")):
        lab.reset()
        out = probe(lab, ep, ["get", url, "0:16384", "2000000:65536"])
        assert [o["err"] for o in out] == [0, 0], out
        assert out[1]["sha256"] == sha(public_small["path"], 2000000, 65536)
        log = _mine(lab, ep)
        assert [e["method"] for e in log] == ["GET", "GET"], log
        assert all(e["auth"] == auth and e["status"] == 206 for e in log), log


@pytest.mark.parametrize("ep", ("h1", "h2"))
def test_option_syntax_same_request(lab, small_cog, public_small, ep):
    """/vsicurl?url=<escaped>&max_retry=0&useragent=...: the URL asked is the same, the
    name's user agent is sent."""
    url = lab.presign("lab", public_small["key"], endpoint=ep)
    name = "?" + urllib.parse.urlencode({"url": url, "max_retry": "0",
                                         "useragent": "probe agent"})
    out = probe(lab, ep, ["get", name, "4096:4096"])
    assert out[0]["err"] == 0 and out[0]["sha256"] == sha(public_small["path"], 4096, 4096)
    (e,) = _mine(lab, ep)
    assert e["auth"] == "presigned" and e["sig"] == "ok" and e["user_agent"] == "probe agent"
    assert e["range"] == "bytes=4096-8191"


@pytest.mark.parametrize("ep", ENDPOINTS)
def test_norange_is_refused_as_stock_does(lab, public_s2, ep):
    """A server that ignores Range, on the 212 MB object: one GET, GDAL's words, and the
    whole body is not waited for (the probe returns well before 212 MB would arrive: the
    timeout below is a hang bound, not a speed measure)."""
    url = lab.web_url("public", public_s2["key"], "norange", ep)
    out = probe(lab, ep, ["get", url, "65536:16384", "0:16384"])
    for o in out:
        assert o["err"] == VT_EPROTO and o["status"] == 200, o
        assert o["fail"]["transport"] == RANGE_WORDS, o
    log = _mine(lab, ep)
    assert [e["method"] for e in log] == ["GET", "GET"], log


@pytest.mark.parametrize("ep", ("h1", "h2"))
def test_norange_small_object_whole(lab, ep):
    """From byte 0, an object no more than ten times the range is an answer (GDAL's
    rule): 200 with the whole body."""
    data = os.urandom(100_000)
    lab.put_object("public", "curl/tiny.bin", data)
    lab.reset()
    url = lab.web_url("public", "curl/tiny.bin", "norange", ep)
    (o,) = probe(lab, ep, ["get", url, "0:16384"])
    assert o["err"] == 0 and o["status"] == 200 and o["body_len"] == len(data), o
    assert o["sha256"] == hashlib.sha256(data).hexdigest()


def _assert_redacted(o, secret):
    for field in (o["errbuf"], o["fail"]["where"]):
        assert secret not in field, field


@pytest.mark.parametrize("ep", ("h1", "h2"))
def test_missing_object_words(lab, public_small, ep):
    """A 404, stock measured beside: stock opens a plain URL with a HEAD (no body: the
    status alone). (A "/vsicurl?url=" name stock 3.6 opens without asking for errors:
    "does not exist in the file system", the GDAL face's wording, not the backend's.)"""
    url = lab.object_url("public", "curl/no-such.tif", ep)
    name = "/vsicurl/" + url
    (o,) = probe(lab, ep, ["get", url, "0:16384"])
    assert o["err"] == VT_ENOTFOUND and o["status"] == 404
    assert [e["method"] for e in _mine(lab, ep)] == ["GET"]
    assert_stock_words(o, stock_errors(lab, ep, name))
    assert o["fail"]["message"].startswith("HTTP response code: 404")


@pytest.mark.parametrize("ep", ("h1", "h2"))
def test_bad_token_words_and_redaction(lab, small_cog, public_small, ep):
    url = lab.web_url("lab", public_small["key"], "token", ep, {"token": "not-issued-secret"})
    (o,) = probe(lab, ep, ["get", url, "0:16384"])
    assert o["err"] == VT_EACCESS and o["status"] == 403, o
    _assert_redacted(o, "not-issued-secret")
    assert "token=***" in o["errbuf"]
    (e,) = _mine(lab, ep)
    assert e["method"] == "GET" and e["sig"] == "bad", e
    assert_stock_words(o, stock_errors(lab, ep, url))


@pytest.mark.parametrize("ep", ("h1tls", "h2"))
def test_expired_presigned_words(lab, small_cog, public_small, ep):
    url = lab.presign("lab", public_small["key"], endpoint=ep, expires=60,
                      signed_at=int(time.time()) - 7200)
    (o,) = probe(lab, ep, ["get", url, "0:16384"])
    assert o["err"] == VT_EACCESS and o["status"] == 403, o
    sig = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["X-Amz-Signature"][0]
    _assert_redacted(o, sig)
    assert [e["sig"] for e in _mine(lab, ep)] == ["expired"]
    assert_stock_words(o, stock_errors(lab, ep, url))


@pytest.mark.parametrize("ep", ("h1", "h2"))
def test_redirect_followed(lab, public_small, ep):
    """A redirect is followed as GDAL's libcurl follows it (the engine reports Location,
    the backend GETs it): the redirect, then the target's range; the bytes are the
    object's and no failure words are left behind (README.md, "Redirects")."""
    url = lab.web_url("public", public_small["key"], "redirect=302", ep)
    (o,) = probe(lab, ep, ["get", url, "0:16384"])
    assert o["err"] == 0 and o["status"] == 206 and o["errbuf"] == "", o
    assert o["sha256"] == sha(public_small["path"], 0, 16384), o
    log = _mine(lab, ep)
    assert [(e["method"], e["status"], e["route"]) for e in log] == \
        [("GET", 302, "redirect=302"), ("GET", 206, None)], log


def test_headers_from_options(lab):
    """GDAL's options as the request's headers (no server asked)."""
    url = "http://127.0.0.1:9/x.tif?token=abc"
    extra = {"GDAL_HTTP_HEADERS": "X-One: 1,X-Two: \"a,b\"", "GDAL_HTTP_USERPWD": "alice:s3cret:x",
             "GDAL_HTTP_COOKIE": "c=1"}
    (b,) = probe(lab, "h1", ["build", url, "10", "20", '"etag1"'], extra)
    assert b["err"] == 0 and b["url"] == url
    # CSLT_HONOURSTRINGS: the quotes keep the comma and are dropped
    assert b["headers"] == ["X-One: 1", "X-Two: a,b", "Range: bytes=10-29",
                            'If-Match: "etag1"', "Cookie: c=1",
                            "Authorization: Basic YWxpY2U6czNjcmV0Ong="], b
    # the name's own cookie wins over GDAL_HTTP_COOKIE; referer and useragent sent
    name = "?url=" + urllib.parse.quote(url, safe="") + "&cookie=d%3D2&referer=http://r/&useragent=ua"
    (b,) = probe(lab, "h1", ["build", name, "0", "0"], {"GDAL_HTTP_COOKIE": "c=1"})
    assert b["headers"] == ["User-Agent: ua", "Referer: http://r/", "Cookie: d=2"], b
    # GDAL_HTTP_AUTH=BEARER exists from GDAL 3.9 (3.6 ignores it with a warning)
    from osgeo import gdal as _gdal
    (b,) = probe(lab, "h1", ["build", url, "0", "0"],
                 {"GDAL_HTTP_AUTH": "BEARER", "GDAL_HTTP_BEARER": "tok"})
    bearer = int(_gdal.VersionInfo("VERSION_NUM")) >= 3090000
    assert b["headers"] == (["Authorization: Bearer tok"] if bearer else []), b
    # what the engine cannot apply per request: refused, naming it
    for extra, name in (({"GDAL_HTTPS_PROXY": "http://p:1"}, url),
                        ({"GDAL_HTTP_AUTH": "NTLM", "GDAL_HTTP_USERPWD": "a:b"}, url),
                        ({}, "?url=" + urllib.parse.quote(url, safe="") + "&proxy=http://p:1")):
        (b,) = probe(lab, "h1", ["build", name, "0", "16384"], extra)
        assert b["err"] == VT_EINVAL and "not applied" in b["errbuf"], b


def test_netrc_leaves_the_name_to_gdal(lab, tmp_path):
    """curl (GDAL_HTTP_NETRC on by default) would send a .netrc's credentials for the
    host; the engine does not read netrc files, so build refuses such a URL (GDAL serves
    it); another host's entry, or GDAL_HTTP_NETRC=NO, changes nothing."""
    url = "http://127.0.0.1:9/x.tif"
    (tmp_path / ".netrc").write_text("machine other.example login a password b\n")
    (b,) = probe(lab, "h1", ["build", url, "0", "16384"], {"HOME": str(tmp_path)})
    assert b["err"] == 0, b
    (tmp_path / ".netrc").write_text("machine 127.0.0.1 login a password b\n")
    (b,) = probe(lab, "h1", ["build", url, "0", "16384"], {"HOME": str(tmp_path)})
    assert b["err"] == VT_EINVAL and "GDAL_HTTP_NETRC" in b["errbuf"], b
    (b,) = probe(lab, "h1", ["build", url, "0", "16384"],
                 {"HOME": str(tmp_path), "GDAL_HTTP_NETRC": "NO"})
    assert b["err"] == 0, b


def test_names_and_identity(lab):
    url = "https://Host.Example:8443/a/b.tif?sig=1"
    (s,) = probe(lab, "h1", ["split", url])
    assert s == {"op": "split", "err": 0, "container": "", "key": url}
    (e,) = probe(lab, "h1", ["endpoint", "?url=" + urllib.parse.quote(url, safe="")])
    assert e["endpoint"] == "https://host.example:8443"
    (i,) = probe(lab, "h1", ["ident", url])
    assert i["ident"] == "anonymous"
    (a,) = probe(lab, "h1", ["ident", url], {"GDAL_HTTP_USERPWD": "alice:pw1"})
    (b,) = probe(lab, "h1", ["ident", url], {"GDAL_HTTP_USERPWD": "alice:pw2"})
    assert a["ident"].startswith("signed:") and a["ident"] != b["ident"]
    assert "pw1" not in a["ident"] and "alice" not in a["ident"]
    (m,) = probe(lab, "h1", ["split", "?use_head=no"])
    assert m["err"] == VT_EINVAL


@pytest.mark.parametrize("ep", ("h1", "h2"))
def test_remembered_redirect_target(lab, small_cog, ep):
    """A redirect to a presigned URL, taught as the engine will teach it (probe_curl.c):
    the reads go straight to the target while it is valid (GDAL's
    CPL_VSIL_CURL_USE_S3_REDIRECT); with the option off, to the redirect; a target the
    server refuses (expired early) sends the read back to the redirect once."""
    key = small_cog["key"]
    frm = lab.web_url("lab", key, "redirect=302", ep)
    target = lab.presign("lab", key, endpoint=ep, expires=3600)
    out = probe(lab, ep, ["curl-note", frm, target, "0", "get", frm, "0:16384", "1000000:4096"])
    assert out[0] == {"op": "curl-note", "kept": 1}
    assert [o["err"] for o in out[1:]] == [0, 0], out
    assert out[2]["sha256"] == sha(small_cog["path"], 1000000, 4096)
    log = _mine(lab, ep)
    assert [(e["auth"], e["route"], e["sig"]) for e in log] == [("presigned", None, "ok")] * 2, log

    lab.reset()
    out = probe(lab, ep, ["curl-note", frm, target, "0", "get", frm, "0:16384"],
                {"CPL_VSIL_CURL_USE_S3_REDIRECT": "NO"})
    assert out[1]["err"] == 0 and out[1]["errbuf"] == "", out  # the redirect, followed
    assert [(e["route"], e["status"]) for e in _mine(lab, ep)] == \
        [("redirect=302", 302), (None, 206)]

    lab.reset()
    stale = lab.presign("lab", key, endpoint=ep, expires=3600, signed_at=int(time.time()) - 7200)
    out = probe(lab, ep, ["curl-note", frm, stale, "7100", "get", frm, "0:16384"])
    assert out[0]["kept"] == 1 and out[1]["err"] == 0, out
    log = _mine(lab, ep)
    assert [(e["sig"], e["status"]) for e in log] == \
        [("expired", 403), (log[1]["sig"], 302), ("ok", 206)], log
    assert log[1]["route"] == "redirect=302"
