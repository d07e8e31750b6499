"""test_reach_takeover.py: GDAL's own /vsigs/ and /vsiaz/ taken over (issue 20,
VSITUNE_TAKEOVER_GS=YES, VSITUNE_TAKEOVER_AZ=YES), differential: the same command under
stock GDAL (plugin not loaded) and with the plugin, against the lab's GCS front (GOOG1
HMAC, h1) and Azurite (shared key, h1), outputs compared; what each side cost read from
the lab's log.

- gdalinfo -json of a COG, a cold one-pixel read, a window and an overview window (the
  small fixture, 4.9 MB: every read past GDAL's first 16 KB): equal to stock's; the plugin
  side costs 1 request for gdalinfo and 2 for the pixel, no HEAD, no LIST (stock's counts
  recorded beside them in $VT_BUILD_DIR/parity/reach_<family>.json and printed);
- a missing object, bad credentials (a wrong secret): the same exit status and the
  same errors (class and GDAL's words) as stock;
- VSIStatL of the object and of a missing name, ReadDir of the directory: equal;
- every plugin side really served: its exit counters name requests, the lab saw them
  with vsitune's User-Agent on the family's endpoint, and none carried stock's;
- the knob: set to NO (VSITUNE_TAKEOVER_GS / _AZ / _CURL), the loaded plugin leaves the
  prefix to GDAL (every request stock's) and /vsis3/ still taken over; unset, each is
  taken over (their default, YES: test_knob_default, test_curl_on_by_default);
- /vsigs/'s credentials as stock uses them: GCE tokens fetched as often as stock fetches
  them (once; or once more than the data requests when announced to expire at once), a
  refresh token with GDAL's own OAuth2 application left to GDAL (every request stock's).
"""

import json
import os
import tempfile
import time

import pytest

import fixtures as lab_fixtures
import lab_client
import parity
import test_lab_reach as reach_oracle  # its window script and places

PY = "/usr/bin/python3"
KEY = lab_fixtures.fixture_key("small")
# family: (endpoint, auth mode, GDAL prefix, the knob, what makes the credentials wrong)
FAMILIES = {
    "gs": ("gcs-h1", "hmac", "/vsigs/", "VSITUNE_TAKEOVER_GS",
           {"GS_SECRET_ACCESS_KEY": "wrong-secret"}),
    "az": ("az-h1", "shared_key", "/vsiaz/", "VSITUNE_TAKEOVER_AZ",
           {"AZURE_STORAGE_ACCESS_KEY": "bm90IHRoZSBrZXk="}),
    "curl": ("h1", None, "/vsicurl/", "VSITUNE_TAKEOVER_CURL", {}),
}
PIXEL, WINDOW = reach_oracle.PIXEL["small"], reach_oracle.WINDOW["small"]

_VSI_SCRIPT = r'''
import json, sys
from osgeo import gdal
def stat(name):
    st = gdal.VSIStatL(name)
    return None if st is None else [st.size, st.IsDirectory(), st.mtime, st.mode]
out = {}
for name in sys.argv[1:]:
    out["stat " + name] = stat(name)
    d = name.rsplit("/", 1)[0]
    out["readdir " + d] = sorted(gdal.ReadDir(d) or [])
    out["stat after its directory's listing " + name] = stat(name)
print(json.dumps(out))
'''


class Fam:
    """One family's lab: its endpoint, environment, paths and knob."""

    def __init__(self, lab, name):
        self.lab, self.name = lab, name
        self.ep, self.auth, self.prefix, self.knob, self.bad = FAMILIES[name]
        # /vsicurl/: a public object's URL (the prefix is the URL's); what vsitune finds no
        # object for (a missing name, an expired URL, a directory) GDAL's own handler answers
        self.gdal_answers = name == "curl"
        if name == "curl":
            self.prefix = f"/vsicurl/{lab.endpoint_url(self.ep)}/"
        self.bucket = "public" if name == "curl" else "lab"
        self.path = f"{self.prefix}{self.bucket}/{KEY}"

    def bad_case(self):
        """(path, environment) that the service refuses: wrong credentials, or for
        /vsicurl/ a presigned URL that expired an hour ago."""
        if self.name != "curl":
            return self.path, self.bad
        url = self.lab.presign("lab", KEY, endpoint=self.ep, expires=60,
                               signed_at=int(time.time()) - 3600)
        return "/vsicurl/" + url, {}

    def log(self, since):
        fam = self.ep.split("-")[0]
        return [e for e in self.lab.log(since=since)
                if (e.get("endpoint") or "") == fam or
                (e.get("endpoint") or "").startswith(fam + "-")]

    def env(self):
        if self.name == "curl":
            return {}
        return self.lab.family_env(self.ep, self.auth)


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def fam(lab, request):
    name = request.param
    path = lab_fixtures.generate("small")
    if name == "curl":
        lab.put_object("public", KEY, path)
    elif name == "gs":
        lab.family("gcs")
        lab.put_object("lab", KEY, path)  # the GCS front serves s3rver's buckets
    else:
        lab.put_object("lab", KEY, path, family="az")
    return Fam(lab, name)


def _env(fam, vsitune, extra=None, knob="YES"):
    env = lab_client.gdal_env(fam.env(), vsitune=vsitune)
    if knob is not None:
        env[fam.knob] = knob
    env.update(extra or {})
    return env


def _is_list(e):
    return e.get("kind") == "LIST"


def _run(fam, argv, vsitune, extra=None, gdal_lists=False, gdal_answers=False):
    """argv on one side; (result, the lab's requests). The plugin side must have served:
    its exit document counts the requests the lab saw from vsitune on the GCS front, and
    every other request is a listing GDAL's own ReadDir made (gdal_lists) or none is, or
    (gdal_answers: /vsicurl/'s missing names) vsitune asked first and GDAL answered."""
    env = _env(fam, vsitune, extra)
    with tempfile.TemporaryDirectory() as d:
        stats = os.path.join(d, "exit.json")
        env["VSITUNE_STATS_FILE"] = stats
        seq = parity.last_seq(fam.lab)
        cp, _ = lab_client.run_tool(argv, env)
        log = fam.log(seq)
        ua_vt = [e for e in log if (e.get("user_agent") or "").startswith(parity.VT_UA)]
        if vsitune:
            assert os.path.exists(stats), f"plugin side: no exit counters ({cp.stderr[-600:]})"
            doc = json.loads(open(stats).read())
            answered = sum(n for kind in doc["http"].values() for cls, n in kind.items()
                           if cls != "none")
            assert answered == len(ua_vt), (doc["http"], log)
            other = [e for e in log if e not in ua_vt and not (gdal_lists and _is_list(e))]
            assert not [e for e in ua_vt if e["method"] == "HEAD"], ua_vt  # never a HEAD
            if gdal_answers and fam.gdal_answers:
                assert ua_vt and log[0] in ua_vt, f"plugin side: vsitune did not ask: {log}"
            else:
                assert ua_vt and not other, f"plugin side: requests not vsitune's: {other}"
        else:
            assert not os.path.exists(stats), "stock side: the plugin was loaded"
            assert not ua_vt, log
    return {"rc": cp.returncode, "stdout": cp.stdout,
            "errors": parity.parse_errors(cp.stderr)}, log


def _counts(log):
    return {"requests": len(log), "head": sum(e["method"] == "HEAD" for e in log),
            "list": sum(_is_list(e) for e in log),
            "get": sum(e["method"] == "GET" and not _is_list(e) for e in log)}


def _record(fam, what, stock, vt):
    path = lab_client.build_dir() / "parity" / f"reach_{fam.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(path.read_text()) if path.exists() else {}
    data[what] = {"stock": stock, "vsitune": vt}
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"reach {fam.name} {what}: stock {stock} vsitune {vt}")


def _both(fam, argv, extra=None, gdal_lists=False, gdal_answers=False):
    (s, slog), (v, vlog) = (_run(fam, argv, False, extra),
                            _run(fam, argv, True, extra, gdal_lists, gdal_answers))
    return s, v, _counts(slog), _counts(vlog)


def test_gdalinfo_one_request(fam):
    s, v, sc, vc = _both(fam, ["gdalinfo", "-json", fam.path])
    _record(fam, "gdalinfo", sc, vc)
    assert s["rc"] == 0, s
    assert json.loads(v["stdout"]) == json.loads(s["stdout"])
    assert v["errors"] == s["errors"]
    assert vc == {"requests": 1, "head": 0, "list": 0, "get": 1}, vc


def test_cold_pixel_two_requests(fam):
    x, y = PIXEL
    s, v, sc, vc = _both(fam, ["gdallocationinfo", "-valonly", fam.path, str(x), str(y)])
    _record(fam, "pixel", sc, vc)
    assert s["rc"] == 0 and s["stdout"].strip(), s
    assert v["stdout"] == s["stdout"] and v["rc"] == 0
    assert vc == {"requests": 2, "head": 0, "list": 0, "get": 2}, vc


def test_window_and_overview(fam):
    s, v, sc, vc = _both(fam, [PY, "-c", reach_oracle._WINDOW_SCRIPT, fam.path] + [str(n) for n in WINDOW])
    _record(fam, "window", sc, vc)
    assert s["rc"] == 0, s
    assert json.loads(v["stdout"]) == json.loads(s["stdout"])
    assert vc["head"] == 0 and vc["list"] == 0, vc


def test_missing_object(fam):
    s, v, sc, vc = _both(fam, ["gdalinfo",
                               f"{fam.prefix}{fam.bucket}/reach/no-such-{os.getpid()}.tif"],
                         gdal_answers=True)
    _record(fam, "missing", sc, vc)
    assert s["rc"] != 0
    assert v["rc"] == s["rc"]
    assert parity.errors_match(s["errors"], v["errors"]), (s["errors"], v["errors"])
    assert vc["requests"] >= 1  # the plugin side asked (served it)


def test_bad_credentials(fam):
    path, bad = fam.bad_case()
    s, v, sc, vc = _both(fam, ["gdalinfo", path], bad, gdal_answers=True)
    _record(fam, "bad_credentials", sc, vc)
    assert s["rc"] != 0
    assert v["rc"] == s["rc"]
    assert parity.errors_match(s["errors"], v["errors"]), (s["errors"], v["errors"])
    assert vc["requests"] >= 1


def test_stat_and_readdir(fam):
    names = [fam.path,
             f"{fam.prefix}{fam.bucket}/{KEY.rsplit('/', 1)[0]}/no-such-{os.getpid()}.tif"]
    if fam.name == "curl":  # a directory behind a web server's HTML index, and an object
        # on a server that ignores Range (its 200 is the whole object): GDAL's answers
        names.append("/vsicurl/" + fam.lab.web_url("public", KEY.rsplit("/", 1)[0], "index",
                                                   fam.ep))
        names.append("/vsicurl/" + fam.lab.web_url("public", KEY, "norange", fam.ep))
        names.append("/vsicurl/" + fam.lab.web_url("public", KEY, "index", fam.ep))
    s, v, sc, vc = _both(fam, [PY, "-c", _VSI_SCRIPT] + names, gdal_lists=True,
                         gdal_answers=True)
    _record(fam, "stat_readdir", sc, vc)
    assert s["rc"] == 0, s
    assert json.loads(v["stdout"]) == json.loads(s["stdout"])
    assert vc["head"] == 0 or fam.gdal_answers, vc  # /vsicurl/: GDAL's HEAD of the missing name


def test_knob_off_leaves_the_prefix_to_gdal(fam):
    env = _env(fam, True, knob="NO")
    seq = parity.last_seq(fam.lab)
    cp, _ = lab_client.run_tool(["gdalinfo", "--debug", "on", fam.path], env)
    log = fam.log(seq)
    assert cp.returncode == 0, cp.stderr[-800:]
    assert "vsitune" in cp.stderr and "active on /vsis3/" in cp.stderr, cp.stderr[-800:]
    assert log and not [e for e in log if (e.get("user_agent") or "").startswith(parity.VT_UA)]
    if fam.name == "curl":  # stock's own open asks with a HEAD
        assert _counts(log)["head"] >= 1, log
    else:
        assert _counts(log)["list"] >= 1, log  # stock's own open lists the directory


@pytest.fixture(scope="module")
def curl(lab):
    for bucket in ("public", "lab"):  # lab: private, read with presigned URLs
        lab.put_object(bucket, KEY, lab_fixtures.generate("small"))
    return Fam(lab, "curl")


def _web(curl, options):
    return "/vsicurl/" + curl.lab.web_url("public", KEY, options, curl.ep)


@pytest.mark.parametrize("what", ["presigned_get_only", "nohead", "noetag_nolm"])
def test_curl_web_servers(curl, what):
    """What web servers and presigned URLs do that S3 does not: a URL signed for GET only
    (the lab answers its HEAD 403), a server refusing HEAD (405), one sending neither ETag
    nor Last-Modified. gdalinfo -json, a cold pixel and VSIStatL equal stock's; vsitune
    sends no HEAD and serves every request of the reads (2 for gdalinfo and the pixel)."""
    path = {"presigned_get_only": "/vsicurl/" + curl.lab.presign("lab", KEY, endpoint=curl.ep),
            "nohead": _web(curl, "nohead=405"),
            "noetag_nolm": _web(curl, "noetag,nolm")}[what]
    _reads_equal(curl, what, path, 1, 2)


def _reads_equal(curl, what, path, n_info, n_pixel):
    """gdalinfo -json, a cold pixel and VSIStatL of path: equal to stock's; vsitune sent
    n_info and n_pixel GETs for the first two, and no HEAD."""
    x, y = PIXEL
    s, v, sc, vc = _both(curl, ["gdalinfo", "-json", path])
    assert s["rc"] == 0 and v["rc"] == 0, (s, v)
    assert json.loads(v["stdout"]) == json.loads(s["stdout"]) and v["errors"] == s["errors"]
    assert vc == {"requests": n_info, "head": 0, "list": 0, "get": n_info}, vc
    s2, v2, sc2, vc2 = _both(curl, ["gdallocationinfo", "-valonly", path, str(x), str(y)])
    assert s2["stdout"].strip() and v2["stdout"] == s2["stdout"] and v2["rc"] == s2["rc"] == 0
    assert vc2 == {"requests": n_pixel, "head": 0, "list": 0, "get": n_pixel}, vc2
    s3, v3, _, _ = _both(curl, [PY, "-c", _VSI_SCRIPT, path], gdal_answers=True)
    assert json.loads(v3["stdout"]) == json.loads(s3["stdout"]), (s3, v3)
    _record(curl, what, {"gdalinfo": sc, "pixel": sc2}, {"gdalinfo": vc, "pixel": vc2})


def test_curl_server_ignoring_range(curl):
    """A server that ignores Range (200 with the whole 4.9 MB object to a 16 KB range): the
    same exit status and errors as stock (GDAL 3.6: "Range downloading not supported by this
    server!"); vsitune asked first."""
    s, v, sc, vc = _both(curl, ["gdalinfo", _web(curl, "norange")], gdal_answers=True)
    _record(curl, "norange", sc, vc)
    assert v["rc"] == s["rc"]
    assert parity.errors_match(s["errors"], v["errors"]), (s["errors"], v["errors"])


@pytest.mark.parametrize("code", ["302", "307"])
def test_curl_redirect(curl, code):
    """A web URL answering every GET with a redirect to a presigned S3 URL (valid an hour), as
    CDNs and data portals do: gdalinfo -json, a cold pixel and VSIStatL equal stock's, which
    follows it (libcurl FOLLOWLOCATION) and remembers the signed target
    (CPL_VSIL_CURL_USE_S3_REDIRECT). vsitune follows it too and serves every request: the
    redirect and the target's range for gdalinfo (2), then the target straight (pixel: 3)."""
    _reads_equal(curl, f"redirect_{code}", _web(curl, f"redirect={code}"), 2, 3)


def test_curl_on_by_default(curl):
    """VSITUNE_TAKEOVER_CURL unset: the loaded plugin serves /vsicurl/ reads (1 GET)."""
    seq = parity.last_seq(curl.lab)
    cp, _ = lab_client.run_tool(["gdalinfo", "-json", curl.path], _env(curl, True, knob=None))
    log = curl.log(seq)
    assert cp.returncode == 0, cp.stderr[-600:]
    assert _counts(log) == {"requests": 1, "head": 0, "list": 0, "get": 1}, log
    assert (log[0].get("user_agent") or "").startswith(parity.VT_UA), log


def test_curl_header_options(curl):
    """GDAL_HTTP_HEADERS (applied by vsitune, backends/userhdr.c): the server sees the same
    extra header from both sides; gdalinfo -json equal; vsitune served the read."""
    extra = {"GDAL_HTTP_HEADERS": "X-Vt-Probe: curl-takeover"}
    env_s, env_v = _env(curl, False, extra), _env(curl, True, extra)
    out = {}
    for side, env in (("stock", env_s), ("vsitune", env_v)):
        seq = parity.last_seq(curl.lab)
        cp, _ = lab_client.run_tool(["gdalinfo", "-json", curl.path], env)
        log = curl.log(seq)
        assert cp.returncode == 0 and log, cp.stderr[-600:]
        out[side] = (json.loads(cp.stdout), [(e.get("xhdr") or {}) for e in log], log)
    assert out["vsitune"][0] == out["stock"][0]
    for side in out:
        assert all(h.get("x-vt-probe") == "curl-takeover" for h in out[side][1]), out[side][1]
    assert all((e.get("user_agent") or "").startswith(parity.VT_UA) for e in out["vsitune"][2])


def test_curl_declined_option_stays_gdal(curl):
    """An option vsitune's engine cannot apply per request (GDAL_HTTP_PROXYUSERPWD) leaves
    the name to GDAL's own handler, read exactly as stock reads it: every request stock's,
    the same output."""
    extra = {"GDAL_HTTP_PROXYUSERPWD": "user:secret"}
    seq = parity.last_seq(curl.lab)
    cs, _ = lab_client.run_tool(["gdalinfo", "-json", curl.path], _env(curl, False, extra))
    slog = curl.log(seq)
    seq = parity.last_seq(curl.lab)
    cv, _ = lab_client.run_tool(["gdalinfo", "-json", curl.path], _env(curl, True, extra))
    vlog = curl.log(seq)
    assert cs.returncode == 0 and cv.returncode == 0, cv.stderr[-600:]
    assert json.loads(cv.stdout) == json.loads(cs.stdout)
    assert vlog and not [e for e in vlog if (e.get("user_agent") or "").startswith(parity.VT_UA)]
    assert _counts(vlog) == _counts(slog), (_counts(slog), _counts(vlog))


# -- /vsigs/'s credentials as stock 3.6 uses them (gs_token.c, gs_creds.c) ---------------

def _gs_run(lab, vsitune, mode, extra):
    """gdalinfo of the small COG through /vsigs/ on gcs-h1 with auth `mode`: (result, the
    data requests (gcs-h1), the token requests (gcs-auth))."""
    env = lab_client.gdal_env(lab.family_env("gcs-h1", mode), vsitune=vsitune)
    env["VSITUNE_TAKEOVER_GS"] = "YES"
    env.update(extra)
    seq = parity.last_seq(lab)
    cp, _ = lab_client.run_tool(["gdalinfo", "-json", f"/vsigs/lab/{KEY}"], env)
    log = [e for e in lab.log(since=seq) if (e.get("endpoint") or "").startswith("gcs")]
    data = [e for e in log if e["endpoint"] == "gcs-h1"]
    tokens = [e for e in log if e["endpoint"] == "gcs-auth"]
    return ({"rc": cp.returncode, "stdout": cp.stdout,
             "errors": parity.parse_errors(cp.stderr)}, data, tokens)


@pytest.mark.parametrize("announce", [None, 0])
def test_gce_tokens_fetched_as_stock(fam, announce):
    """GCE metadata tokens as GOA2Manager fetches them: the first lookup asks the metadata
    server whether GCE works (one fetch), then each request takes that token until 5 s
    before the announced expires_in; a token announced to expire at once is fetched again
    for every request. So GDAL 3.6's metadata server sees 1 fetch (3600 s) or one more
    than the data requests (0 s), and so do vsitune's own fetches (its User-Agent) beside
    vsitune's data requests, on every release (3.10 and 3.13 fetch an expired token more
    often still: fewer token requests, the same answers). The plugin side also shows GDAL's own handler's one probe: asked
    whether its cache knows the name (handler.c's stat_known), GDAL builds its GCS helper,
    whose GCE lookup asks the metadata server once (then GDAL's static manager holds it)."""
    if fam.name != "gs":
        pytest.skip("GCE is /vsigs/'s")
    url = fam.lab.family_env("gcs-h1", "gce")["CPL_GCE_CREDENTIALS_URL"]
    extra = {} if announce is None else {"CPL_GCE_CREDENTIALS_URL": f"{url}?expires_in={announce}"}
    sides = {vt: _gs_run(fam.lab, vt, "gce", extra) for vt in (False, True)}
    (s, sdata, stok), (v, vdata, vtok) = sides[False], sides[True]
    ours = lambda log: [e for e in log if (e.get("user_agent") or "").startswith(parity.VT_UA)]
    _record(fam, f"gce_expires_{announce}", {"data": len(sdata), "gce": len(stok)},
            {"data": len(vdata), "gce": len(vtok), "gce_vsitune": len(ours(vtok))})
    assert s["rc"] == 0, s
    assert json.loads(v["stdout"]) == json.loads(s["stdout"]) and v["errors"] == s["errors"]
    assert ours(vdata) and len(ours(vdata)) == len(vdata), vdata
    assert all(e.get("route") == "gce" for e in stok + vtok), (stok, vtok)
    want = lambda data: 1 if announce is None else len(data) + 1
    assert len(ours(vtok)) == want(vdata), (len(vdata), len(ours(vtok)))
    # Stock's own count is 3.6's rule there; 3.10 and 3.13 ask the metadata server for an
    # expired token more often still (measured: 7 fetches for 2 requests), never less.
    if parity.gdal_at_least(3, 10):
        assert len(stok) >= want(sdata), (len(sdata), len(stok))
    else:
        assert len(stok) == want(sdata), (len(sdata), len(stok))
    assert len(vtok) - len(ours(vtok)) <= len(stok), (vtok, stok)  # GDAL's own probes


def test_refresh_token_with_gdal_app_left_to_gdal(fam):
    """A refresh token without a client id and secret is GDAL's own OAuth2 application,
    whose pair vsitune does not carry: the plugin leaves the name to GDAL's handler, so
    every request (the token grant, the data requests) is stock's own and the answer is
    stock's (the lab refuses GDAL's client: both sides fail alike)."""
    if fam.name != "gs":
        pytest.skip("OAuth2 refresh tokens are /vsigs/'s")
    extra = {"GS_OAUTH2_CLIENT_ID": "", "GS_OAUTH2_CLIENT_SECRET": ""}
    s, sdata, stok = _gs_run(fam.lab, False, "refresh_token", extra)
    v, vdata, vtok = _gs_run(fam.lab, True, "refresh_token", extra)
    assert stok, "stock side: no token grant asked"
    assert v["rc"] == s["rc"] and parity.errors_match(s["errors"], v["errors"]), (s, v)
    assert not [e for e in vdata + vtok
                if (e.get("user_agent") or "").startswith(parity.VT_UA)], vdata + vtok
    shape = lambda log: [(e["endpoint"], e["method"], e.get("route"), e.get("kind"))
                         for e in log]
    assert shape(vtok) == shape(stok) and shape(vdata) == shape(sdata), (vdata, sdata)


_OPEN_AGAIN_SCRIPT = r'''
import json, sys
from osgeo import gdal
gdal.PushErrorHandler("CPLQuietErrorHandler")
out = []
for name in sys.argv[1:]:
    for i in range(3):
        if i == 2:  # GDAL forgets what it kept under the directory: a first failure again
            gdal.VSICurlPartialClearCache(name.rsplit("/", 1)[0])
        gdal.VSIErrorReset()
        f = gdal.VSIFOpenExL(name, "rb", True)
        out.append([name, i, f is not None, gdal.VSIGetLastErrorNo(), gdal.VSIGetLastErrorMsg()])
        if f:
            gdal.VSIFCloseL(f)
print(json.dumps(out))
'''




# the knob's default, per family: each is taken over unless told otherwise
DEFAULT_ON = {"gs": True, "az": True, "curl": True}


def test_knob_default(fam):
    """With the knob unset, the prefix is served by vsitune (every request with its
    User-Agent, no LIST)."""
    env = _env(fam, True, knob=None)
    seq = parity.last_seq(fam.lab)
    cp, _ = lab_client.run_tool(["gdalinfo", fam.path], env)
    log = fam.log(seq)
    assert cp.returncode == 0, cp.stderr[-800:]
    vt = [e for e in log if (e.get("user_agent") or "").startswith(parity.VT_UA)]
    if DEFAULT_ON[fam.name]:
        assert log and len(vt) == len(log) and _counts(log)["list"] == 0, log
    else:
        assert log and not vt, log


_TWICE_SCRIPT = r'''
import json, sys
from osgeo import gdal
gdal.UseExceptions()
out = []
for i in range(2):
    errs = []
    gdal.PushErrorHandler(lambda c, n, m: errs.append([c, n, m]))
    try:
        gdal.OpenEx(sys.argv[1], gdal.OF_RASTER | gdal.OF_VERBOSE_ERROR)
    except Exception as e:
        errs.append(["exc", str(e)])
    gdal.PopErrorHandler()
    out.append(errs)
print(json.dumps(out))
'''


@pytest.mark.parametrize("case", ["missing", "refused"])
def test_open_failing_again(fam, case):
    """An open (errors asked) of a name, twice: a missing object, and an object refused
    (a wrong secret). Stock GDAL keeps the first failure in its cache of file properties
    and words the second open from it (3.6: no VSI error at all; 3.10+: "HTTP response
    code: n" again); vsitune asks again and words it as stock would from its cache
    when the answer is the same failure (backends/failmem.h, which the /vsis3/, /vsigs/
    and /vsiaz/ backends note their failures in). A third open after a
    VSICurlPartialClearCache of its directory is a first failure again on both sides (the
    backend's forget)."""
    names = [f"{fam.prefix}lab/reach/no-such-{os.getpid()}.tif"] if case == "missing" \
        else [fam.path]
    extra = fam.bad if case == "refused" else None
    # /vsicurl/: a name vsitune finds no object for is GDAL's to answer (its listing, HEAD)
    s, v, sc, vc = _both(fam, [PY, "-c", _OPEN_AGAIN_SCRIPT] + names, extra,
                         gdal_answers=fam.name == "curl")
    assert s["rc"] == 0 and v["rc"] == 0, (s, v)
    # equal rows; a message up to what names the request (3.13's Azure words: RequestId, Time)
    rows = [[r[:-1] + [parity._norm_msg(r[-1])] for r in json.loads(x["stdout"])]
            for x in (v, s)]
    assert rows[0] == rows[1], rows
    assert vc["requests"] >= 1


def test_missing_object_twice(fam):
    """The same missing name opened twice in one process: the second open is worded as
    stock words a failure it remembers (nothing more on 3.6, its cached status from 3.10)."""
    name = f"{fam.prefix}lab/reach/twice-{os.getpid()}.tif"
    s, v, sc, vc = _both(fam, [PY, "-c", _TWICE_SCRIPT, name], gdal_answers=fam.name == "curl")
    _record(fam, "missing_twice", sc, vc)
    a, b = json.loads(s["stdout"]), json.loads(v["stdout"])
    assert len(a) == len(b) == 2
    for x, y in zip(a, b):
        assert parity.errors_match([e for e in x if e[0] != "exc"],
                                   [e for e in y if e[0] != "exc"]), (a, b)
        # the exception is GDAL's words alone: equal, not merely containing stock's
        assert [parity._norm_msg(e[1]) for e in x if e[0] == "exc"] == \
            [parity._norm_msg(e[1]) for e in y if e[0] == "exc"], (a, b)
