"""test_lab_reach.py: the oracle runs for issue 20 ("Reach"): stock GDAL (the plugin NOT
loaded) reads a COG through /vsicurl/ (also from a server with an HTML directory index), /vsigs/ and /vsiaz/ against the lab's real servers
(S3 endpoints and their /_web/ routes, the GCS front, Azurite) and gets the local file's
values; what each read cost on the wire is recorded (per case and GDAL release, in
$VT_BUILD_DIR/parity/reach_stock.json and printed), so the plugin's backends can be
compared with it.

Per case, three runs of stock GDAL's tools, each against a fresh log:
  gdalinfo -json PATH            equal to gdalinfo -json of the local file minus file names
  gdallocationinfo -valonly      a cold one-pixel read: the local file's value
  a window read (python osgeo)   md5 of a 256 x 256 window and of an overview window: the
                                 local file's
and the lab must have seen the authentication the case is about (every request on the
case's endpoint authenticated that way and accepted), at least one request, and no other
endpoint's. Bad credentials (wrong key, expired presigned URL, wrong SAS) give stock's
error, and the lab says why it refused. test_stock_redirect_memory measures what stock
remembers of a 302 to a presigned URL (CPL_VSIL_CURL_USE_S3_REDIRECT, an expiring target).

Sizes: the small fixture (4.9 MB, every read well past GDAL's first 16 KB) for every case;
the 212 MB s2 fixture on one case per backend over h2.
"""

import json
import os
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest

import fixtures as lab_fixtures
import lab_client
import parity

PY = "/usr/bin/python3"
KEYS = {name: lab_fixtures.fixture_key(name) for name in ("small", "s2")}
PIXEL = {"small": (1234, 987), "s2": (7001, 5003)}
WINDOW = {"small": (1100, 600, 256, 256), "s2": (6200, 4100, 256, 256)}

# What a window read prints: md5 of a full-resolution window and of the first
# overview's window at the same place, and the raster's size.
_WINDOW_SCRIPT = r'''
import hashlib, json, sys
from osgeo import gdal
gdal.UseExceptions()
x, y, w, h = (int(v) for v in sys.argv[2:6])
ds = gdal.Open(sys.argv[1])
b = ds.GetRasterBand(1)
o = b.GetOverview(0)
print(json.dumps({"size": [ds.RasterXSize, ds.RasterYSize],
                  "full": hashlib.md5(b.ReadRaster(x, y, w, h)).hexdigest(),
                  "ovr": hashlib.md5(o.ReadRaster(x // 2, y // 2, w // 2, h // 2)).hexdigest()}))
'''


# -- the cases ------------------------------------------------------------------------
# (id, backend, endpoint, how the path is made, auth mode, the `auth` the lab must log)
def _cases():
    out = []
    for ep in ("h1", "h1tls", "h2"):
        out += [
            (f"curl-{ep}-public", "curl", ep, "public", None, {"anonymous"}),
            (f"curl-{ep}-presigned", "curl", ep, "presigned", None, {"presigned"}),
            (f"curl-{ep}-redirect302", "curl", ep, "redirect=302", None, {"anonymous", "presigned"}),
            (f"curl-{ep}-redirect307", "curl", ep, "redirect=307", None, {"anonymous", "presigned"}),
            (f"curl-{ep}-nohead405", "curl", ep, "nohead=405", None, {"anonymous"}),
            (f"curl-{ep}-nohead403", "curl", ep, "nohead=403", None, {"anonymous"}),
            (f"curl-{ep}-norange", "curl", ep, "norange", None, {"anonymous"}),
            (f"curl-{ep}-novalidators", "curl", ep, "noetag,nolm", None, {"anonymous"}),
            (f"curl-{ep}-token", "curl", ep, "token", None, {"token"}),
            (f"curl-{ep}-index", "curl", ep, "index", None, {"anonymous"}),
        ]
    for ep in ("gcs-h1", "gcs-h2"):
        for mode, auth in (("hmac", "goog1"), ("refresh_token", "bearer"),
                           ("service_account", "bearer"), ("gce", "bearer"),
                           ("nosign", "anonymous")):
            out.append((f"gs-{ep[4:]}-{mode}", "gs", ep, None, mode, {auth}))
    for ep in ("az-h1", "az-h2"):
        for mode, auth in (("shared_key", "sharedkey"), ("sas", "sas"),
                           ("connection_string", "sharedkey"), ("nosign", "anonymous")):
            out.append((f"az-{ep[3:]}-{mode}", "az", ep, None, mode, {auth}))
    return out


CASES = _cases()
# Cases stock GDAL 3.6.2 cannot read, with the error it gives (the oracle there too): a
# server that ignores Range (GDAL refuses it), a HEAD refused with 403 on a URL that is not
# S3-signed (no fallback to GET; 405 gets one).
STOCK_FAILS = {"norange": "Range downloading not supported by this server",
               "nohead=403": "HTTP response code: 403"}
BIG = {"curl-h2-presigned", "gs-h2-hmac", "az-h2-shared_key"}  # also run on s2


# -- the lab, with the fixtures everywhere --------------------------------------------
class _Fixtures:
    """The fixture COGs on every backend (s3rver buckets lab and public, Azurite's
    containers of the same names; the GCS front serves s3rver's), uploaded on first use,
    with the local file's observations."""

    def __init__(self, lab):
        self.lab = lab
        self.local = {}
        lab.family("gcs")

    def ensure(self, name):
        if name not in self.local:
            path = lab_fixtures.generate(name)
            for bucket in ("lab", "public"):
                self.lab.put_object(bucket, KEYS[name], path)
                self.lab.put_object(bucket, KEYS[name], path, family="az")
            self.local[name] = _observe(str(path), name, lab_client.gdal_env({}))
        return self.local[name]


@pytest.fixture(scope="module")
def reach(lab):
    return _Fixtures(lab)


def _ca_env(lab, endpoint):
    """The CA settings of an https endpoint (for /vsicurl/, which takes no AWS_ settings)."""
    env = lab.env(endpoint)
    return {k: v for k, v in env.items() if k in ("CURL_CA_BUNDLE", "SSL_CERT_FILE",
                                                  "GDAL_CURL_CA_BUNDLE")}


def case_target(lab, case, name, bucket=None):
    """(GDAL path, environment) of a case for fixture `name`."""
    cid, backend, ep, how, mode, _ = case
    key = KEYS[name]
    if backend == "gs":
        return f"/vsigs/{bucket or _gs_bucket(mode)}/{key}", lab.family_env(ep, mode)
    if backend == "az":
        return f"/vsiaz/{bucket or _gs_bucket(mode)}/{key}", lab.family_env(ep, mode)
    env = _ca_env(lab, ep)
    if how == "public":
        url = lab.object_url("public", key, ep)
    elif how == "presigned":
        url = lab.presign("lab", key, endpoint=ep)
    elif how == "token":
        url = lab.web_url("lab", key, "token", ep, {"token": lab.token()})
    elif how.startswith("redirect"):
        url = lab.web_url("lab", key, how, ep)
    else:
        url = lab.web_url("public", key, how, ep)
    return "/vsicurl/" + url, env


def _gs_bucket(mode):
    return "public" if mode == "nosign" else "lab"


def _observe(path, name, env):
    """gdalinfo -json, the pixel and the windows of `path` under `env` (stock GDAL), each
    with what the lab saw (None here: callers attach it). Raises on a tool failure."""
    out = {}
    cp, _ = lab_client.run_tool(["gdalinfo", "-json", path], env, timeout=300)
    out["info_rc"], out["info_err"] = cp.returncode, parity.parse_errors(cp.stderr)
    out["info"] = _strip_names(json.loads(cp.stdout)) if cp.returncode == 0 else None
    x, y = PIXEL[name]
    cp, _ = lab_client.run_tool(["gdallocationinfo", "-valonly", path, str(x), str(y)], env)
    out["pixel"] = cp.stdout.strip() if cp.returncode == 0 else None
    cp, _ = lab_client.run_tool([PY, "-c", _WINDOW_SCRIPT, path] + [str(v) for v in WINDOW[name]],
                                env)
    out["window"] = json.loads(cp.stdout) if cp.returncode == 0 else cp.stderr[-800:]
    return out


def _strip_names(info):
    """gdalinfo -json minus what names the file (description, files)."""
    info = dict(info)
    info.pop("description", None)
    info.pop("files", None)
    for b in info.get("bands", []):
        b.pop("description", None)
    return info


# -- recording ------------------------------------------------------------------------
def _gdal_release():
    from osgeo import gdal
    return gdal.__version__


class _Record:
    def __init__(self):
        self.path = lab_client.build_dir() / "parity" / "reach_stock.json"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.data = {"gdal": _gdal_release(), "cases": {}}

    def add(self, cid, what, counts):
        self.data["cases"].setdefault(cid, {})[what] = counts
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, self.path)
        print(f"reach stock {self.data['gdal']} {cid}/{what}: "
              + " ".join(f"{k}={v}" for k, v in counts.items() if v and k != "bytes"))


_REC = None


def record():
    global _REC
    if _REC is None:
        _REC = _Record()
    return _REC


def _counts(log, endpoint):
    """What the lab saw on the case's endpoint, plus the token requests (gcs-auth)."""
    mine = [e for e in log if e["endpoint"] == endpoint]
    c = parity.summarise(mine)
    c["tokens"] = sum(1 for e in log if e["endpoint"] == "gcs-auth")
    c["refused"] = sum(1 for e in mine if e["sig"] not in ("ok", "anonymous") or
                       e["status"] in (401, 403))
    return c


def _run_one(lab, op, path, env, name):
    lab.reset()
    if op == "info":
        r = lab_client.run_tool(["gdalinfo", "-json", path], env, timeout=300)[0]
    elif op == "pixel":
        x, y = PIXEL[name]
        r = lab_client.run_tool(["gdallocationinfo", "-valonly", path, str(x), str(y)], env)[0]
    else:
        r = lab_client.run_tool([PY, "-c", _WINDOW_SCRIPT, path] + [str(v) for v in WINDOW[name]],
                                env)[0]
    # a finished tool's requests have all completed; give the log a moment for 'close'
    time.sleep(0.05)
    return r, lab.log()


def _check_log(log, case, what, key):
    """What the lab saw agrees with the case: the object's bytes were read on the case's
    endpoint with its authentication, nothing went elsewhere. (Stock's other requests,
    refused or not, are recorded (`refused`), not judged: a HEAD refused by a GET-signed
    URL, listings and sidecar probes answered 403/404; GDAL 3.13 appends sidecar suffixes
    and the directory's slash after a presigned URL's query, which then does not verify.)"""
    cid, backend, ep, how, mode, auths = case
    bad = []
    mine = [e for e in log if e["endpoint"] == ep]
    others = sorted({e["endpoint"] for e in log} - {ep, "gcs-auth"})
    if others:
        bad.append(f"{what}: requests on other endpoints {others}")
    reads = [e for e in mine if e["key"] == key and e["method"] == "GET" and 200 <= e["status"] < 300]
    if not reads:
        bad.append(f"{what}: the lab saw no successful GET of {key} on {ep}")
    for e in reads:
        if e["auth"] not in auths:
            bad.append(f"{what}: GET {e['path']} authenticated as {e['auth']}, want {sorted(auths)}")
    if mode in ("refresh_token", "service_account", "gce"):
        grants = [e for e in log if e["endpoint"] == "gcs-auth"]
        want = {"refresh_token": "refresh_token", "gce": "metadata",
                "service_account": "urn:ietf:params:oauth:grant-type:jwt-bearer"}[mode]
        if not grants or any(g["auth"] != want or g["sig"] != "ok" for g in grants):
            bad.append(f"{what}: token requests {[(g['auth'], g['sig']) for g in grants]}, "
                       f"want {want} accepted")
        if any(e["akid"] != {"refresh_token": "refresh_token", "gce": "gce",
                             "service_account": "service_account"}[mode]
               for e in mine if e["auth"] == "bearer"):
            bad.append(f"{what}: bearer tokens not from the {mode} grant")
    if how and how.startswith("redirect"):
        if not any(e["route"] == how for e in mine) or \
                not any(e["auth"] == "presigned" and e["route"] is None for e in mine):
            bad.append(f"{what}: no redirect followed to the presigned URL")
    return bad


def _params():
    out = []
    for c in CASES:
        out.append(pytest.param(c, "small", id=f"{c[0]}-small"))
        if c[0] in BIG:
            out.append(pytest.param(c, "s2", id=f"{c[0]}-s2"))
    return out


@pytest.mark.parametrize("case,name", _params())
def test_stock_reads(lab, reach, case, name):
    """Stock GDAL through the case's backend gets the local file's values; the lab saw the
    case's authentication; the requests are recorded."""
    path, lab_env = case_target(lab, case, name)
    env = lab_client.gdal_env(lab_env)
    local = reach.ensure(name)
    bad = []
    fails = STOCK_FAILS.get(case[3])
    for op in ("info", "pixel", "window"):
        r, log = _run_one(lab, op, path, env, name)
        counts = _counts(log, case[2])
        if r.returncode != 0:
            counts["errors"] = parity.parse_errors(r.stderr)
        record().add(f"{case[0]}-{name}", op, counts)
        if fails:
            if r.returncode == 0 or fails not in r.stderr:
                bad.append(f"{op}: stock GDAL should fail with {fails!r}: rc {r.returncode}, "
                           f"{parity.parse_errors(r.stderr)}")
            if not any(e["endpoint"] == case[2] and e["key"] == KEYS[name] for e in log):
                bad.append(f"{op}: the lab saw no request for {KEYS[name]}")
            continue
        if r.returncode != 0:
            bad.append(f"{op}: rc {r.returncode}: {parity.parse_errors(r.stderr)}")
            continue
        if op == "info" and _strip_names(json.loads(r.stdout)) != local["info"]:
            bad.append("info: gdalinfo -json differs from the local file's: "
                       + "; ".join(parity.diff(local["info"], _strip_names(json.loads(r.stdout))))[:800])
        if op == "pixel" and r.stdout.strip() != local["pixel"]:
            bad.append(f"pixel: {r.stdout.strip()!r}, local {local['pixel']!r}")
        if op == "window" and json.loads(r.stdout) != local["window"]:
            bad.append(f"window: {r.stdout.strip()}, local {local['window']}")
        bad += _check_log(log, case, op, KEYS[name])
    assert not bad, "\n".join(bad)


# -- refusals: stock's error, the lab's reason -----------------------------------------
def _bad_cases():
    return [
        ("curl-h2-expired", "curl", "h2", {"expired"}),
        ("curl-h1-badtoken", "curl", "h1", {"bad"}),
        ("gs-h2-badsecret", "gs", "gcs-h2", {"bad"}),
        ("gs-h1-badkeyid", "gs", "gcs-h1", {"unknown-key"}),
        ("gs-h1-badbearer", "gs", "gcs-h1", {"bad"}),
        ("az-h2-badkey", "az", "az-h2", {"bad"}),
        ("az-h1-expiredsas", "az", "az-h1", {"bad"}),
    ]


def _bad_target(lab, cid, ep):
    key = KEYS["small"]
    if cid == "curl-h2-expired":
        return "/vsicurl/" + lab.presign("lab", key, endpoint=ep, expires=60,
                                         signed_at=int(time.time()) - 7200), _ca_env(lab, ep)
    if cid == "curl-h1-badtoken":
        return "/vsicurl/" + lab.web_url("lab", key, "token", ep, {"token": "not-issued"}), {}
    if cid.startswith("gs-"):
        env = lab.family_env(ep, "hmac")
        if cid.endswith("badsecret"):
            env["GS_SECRET_ACCESS_KEY"] = "wrong" + env["GS_SECRET_ACCESS_KEY"][5:]
        elif cid.endswith("badkeyid"):
            env["GS_ACCESS_KEY_ID"] = "GOOG1EUNKNOWN"
        else:  # a bearer the lab never issued, through GDAL_HTTP_HEADER_FILE
            env = lab.family_env(ep, "nosign")
            env.pop("GS_NO_SIGN_REQUEST")
            hdr = Path(lab.dir) / "gs-bad-bearer.txt"
            hdr.write_text("Authorization: Bearer ya29.not-issued\n")
            env["GDAL_HTTP_HEADER_FILE"] = str(hdr)
        return f"/vsigs/lab/{key}", env
    if cid == "az-h2-badkey":
        env = lab.family_env(ep, "shared_key")
        env["AZURE_STORAGE_ACCESS_KEY"] = "d3Jvbmcga2V5" * 7 + "d3Jvbmc="
        return f"/vsiaz/lab/{key}", env
    env = lab.family_env(ep, "sas")
    env["AZURE_STORAGE_SAS_TOKEN"] = lab.family("az")["expired_sas_token"]
    return f"/vsiaz/lab/{key}", env


@pytest.mark.parametrize("cid,backend,ep,verdicts", [pytest.param(*c, id=c[0]) for c in _bad_cases()])
def test_stock_refusals(lab, reach, cid, backend, ep, verdicts):
    """gdalinfo fails under stock GDAL; the lab refused for the case's reason; stock's
    error text is recorded (what the plugin must say too)."""
    reach.ensure("small")
    path, lab_env = _bad_target(lab, cid, ep)
    r, log = _run_one(lab, "info", path, lab_client.gdal_env(lab_env), "small")
    counts = _counts(log, ep)
    counts["errors"] = parity.parse_errors(r.stderr)
    record().add(cid, "info", counts)
    assert r.returncode != 0, f"stock GDAL opened it: {r.stdout[:300]}"
    mine = [e for e in log if e["endpoint"] == ep]
    assert mine and any(e["sig"] in verdicts for e in mine), \
        [(e["method"], e["path"], e["sig"], e["error"]) for e in mine]
    assert all(e["status"] >= 400 for e in mine if e["sig"] in verdicts)


# -- redirects: what stock remembers ---------------------------------------------------
_TWO_READS = r'''
import hashlib, sys, time
from osgeo import gdal
gdal.UseExceptions()
ds = gdal.Open(sys.argv[1])
b = ds.GetRasterBand(1)
print(hashlib.md5(b.ReadRaster(100, 100, 64, 64)).hexdigest())
time.sleep(float(sys.argv[2]))
print(hashlib.md5(b.ReadRaster(1500, 1500, 64, 64)).hexdigest())
'''


@pytest.mark.parametrize("use,ttl,pause,remembers", [
    pytest.param("YES", 3600, 0, True, id="remembered"),
    pytest.param("NO", 3600, 0, False, id="use_s3_redirect_off"),
    pytest.param("YES", 12, 13, True, id="expires_between_reads"),
])
def test_stock_redirect_memory(lab, reach, use, ttl, pause, remembers):
    """Stock GDAL 3.6 and a 302 to a presigned URL (S3 / CDN style), measured: with
    CPL_VSIL_CURL_USE_S3_REDIRECT=YES (default) it remembers the target until it expires
    (range GETs go straight to it); with NO, every range GET goes through the redirect;
    when the remembered target has expired between two reads, its 403 "Request has
    expired" sends GDAL back to the redirect once, and the read succeeds. (A target that
    expires within a few seconds is not remembered at all.)"""
    reach.ensure("small")
    key = KEYS["small"]
    path = "/vsicurl/" + lab.web_url("lab", key, f"redirect=302,ttl={ttl}")
    env = lab_client.gdal_env({}, extra={"CPL_VSIL_CURL_USE_S3_REDIRECT": use})
    local = _two_reads(str(lab_fixtures.generate("small")), 0, lab_client.gdal_env({}))
    lab.reset()
    got = _two_reads(path, pause, env)
    log = lab.log()
    counts = parity.summarise(log)
    via = [e for e in log if e["route"] and e["kind"] == "GET_RANGE"]
    direct = [e for e in log if e["route"] is None and e["kind"] == "GET_RANGE"]
    counts.update(redirected_ranges=len(via), direct_ranges=len(direct),
                  expired=sum(1 for e in log if e["sig"] == "expired"))
    record().add(f"curl-h1-redirect-{use}-ttl{ttl}-pause{pause}", "two_reads", counts)
    assert got == local
    assert all(e["auth"] == "presigned" and e["sig"] == "ok" and e["status"] == 206
               for e in direct if e["sig"] != "expired"), direct
    if not remembers:
        assert len(via) == len(direct), "every range GET goes through the redirect"
    elif pause:
        assert counts["expired"] == 1 and len(via) == 1, counts
    else:
        assert via == [] and direct, counts


def _two_reads(path, pause, env):
    r = lab_client.run_tool([PY, "-c", _TWO_READS, path, str(pause)], env, timeout=120)[0]
    assert r.returncode == 0, r.stderr[-800:]
    return r.stdout.split()
