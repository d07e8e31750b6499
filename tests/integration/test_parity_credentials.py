"""test_parity_credentials.py: GDAL's /vsis3/ credential chain, STS, instance metadata,
redirect, header-signing and cache-budget options, stock GDAL against GDAL with the plugin
(issue 9). (Headers as sent, path-specific keys and the credential files: test_parity_options.py.)

Each case opens the same COG under stock GDAL and with the plugin, each side in its own
process, with the option under test set as a user sets it (environment, /vsimem/ files,
path-specific options); what GDAL returned must be the same (parity.assert_same), and the
lab's log, or the fake STS / IMDS / redirecting server this file starts on 127.0.0.1, says
what each side sent: which key signed the GETs, which headers reached the server, which STS
and metadata requests were made. Request counts are never compared; only the requests' kind.

Providers the lab has no part of (STS, EC2 instance metadata, a redirecting S3 front) are
small http.server instances below; the credentials they hand out are registered with the
lab's SigV4 verifier, so a GET signed with them is checked by the lab as any other.
"""

import json
import subprocess
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import lab_client
import plugin_defaults
from parity import Side, assert_same, gdal_at_least, last_seq, uploaded, xfail

COG = "/vsis3/lab/parity/cog/scene.tif"
RASTER = {"op": "raster", "path": COG, "checksums": True}
TEMP = ("ASIAVTPARITYOPTS0001", "parity/options+secret=", "parity-options-session-token")


@pytest.fixture(scope="module")
def fixtures(lab):
    out = uploaded(lab)
    akid, secret, token = TEMP
    lab.register_credentials(akid, secret, token, expires_at=int(time.time()) + 7200)
    return out


def run_both(lab, probes, extra=None, extra_stock=None, extra_vt=None):
    """probes in one fresh process per side; returns {side: (results, lab log entries)}."""
    out = {}
    for vt in (False, True):
        env = dict(extra or {})
        env.update((extra_vt if vt else extra_stock) or {})
        seq = last_seq(lab)
        with Side(lab, vt, env) as s:
            res = s.run(probes)
            s.close()
        out["vsitune" if vt else "stock"] = (res, lab.log(since=seq))
    return out


def gets(log, bucket="lab"):
    return [e for e in log if e["method"] == "GET" and e["bucket"] == bucket and e["key"]]


def assert_same_sides(out, what):
    assert out["stock"][0][-1].get("value") is not None, f"stock GDAL failed: {out['stock'][0]}"
    assert_same(out["stock"][0], out["vsitune"][0], what)


def no_keys(tmp_path):
    """Options that leave no credentials in the environment or the shared files."""
    return {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "",
            "CPL_AWS_CREDENTIALS_FILE": "", "AWS_CONFIG_FILE": "", "HOME": str(tmp_path)}


# -- fakes: EC2 instance metadata and STS -------------------------------------------------
class Fake:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []
        self.imds_put_status = 200
        self.expiration = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))

    def record(self, h):
        with self.lock:
            self.requests.append({"method": h.command, "path": h.path,
                                  "headers": {k.lower(): v for k, v in h.headers.items()}})

    def take(self):
        with self.lock:
            r, self.requests = self.requests, []
        return r


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, body=b"", ctype="text/plain", headers=None):
        body = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):
        fake = self.server.fake
        fake.record(self)
        if self.path.endswith("/latest/api/token"):
            if fake.imds_put_status != 200:
                # No body: GDAL 3.6 takes the body of a refused PUT as the token.
                return self.reply(fake.imds_put_status, "")
            return self.reply(200, "imds-token")
        self.reply(404)

    def do_GET(self):
        fake = self.server.fake
        fake.record(self)
        akid, secret, token = TEMP
        p = self.path
        if p.endswith("/latest/meta-data/iam/security-credentials/"):
            return self.reply(200, "parity-role")
        if p.endswith("/latest/meta-data/iam/security-credentials/parity-role"):
            return self.reply(200, json.dumps({"Code": "Success", "AccessKeyId": akid,
                                               "SecretAccessKey": secret, "Token": token,
                                               "Expiration": fake.expiration}),
                              "application/json")
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(p).query)
        action = q.get("Action", [""])[0]
        if action in ("AssumeRole", "AssumeRoleWithWebIdentity"):
            return self.reply(200, f"<{action}Response><{action}Result><Credentials>"
                                   f"<AccessKeyId>{akid}</AccessKeyId>"
                                   f"<SecretAccessKey>{secret}</SecretAccessKey>"
                                   f"<SessionToken>{token}</SessionToken>"
                                   f"<Expiration>{fake.expiration}</Expiration>"
                                   f"</Credentials></{action}Result></{action}Response>",
                              "text/xml")
        self.reply(404)


@pytest.fixture
def fake():
    f = Fake()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.fake = f
    f.host = f"127.0.0.1:{srv.server_address[1]}"
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f
    srv.shutdown()
    srv.server_close()


def run_with_fake(lab, extra, fake):
    """RASTER in a fresh process per side; {side: (results, lab log, fake's requests)}."""
    out = {}
    for vt in (False, True):
        seq = last_seq(lab)
        with Side(lab, vt, extra) as s:
            res = s.run([RASTER])
            s.close()
        out["vsitune" if vt else "stock"] = (res, lab.log(since=seq), fake.take())
    return out


def imds_env(fake, tmp_path):
    # lab_client.gdal_env turns IMDS off with the AWS SDKs' switch: these cases turn it on.
    return dict(no_keys(tmp_path), CPL_AWS_EC2_API_ROOT_URL=f"http://{fake.host}",
                CPL_AWS_AUTODETECT_EC2="NO", AWS_EC2_METADATA_DISABLED="false")


@pytest.mark.parametrize("put_status", [200, 403], ids=["imdsv2", "imdsv1-after-403"])
def test_missing_default_profile_goes_on_to_ec2(lab, fixtures, fake, tmp_path, put_status):
    """AWS_PROFILE=default that no file has: GDAL goes on down the chain to EC2 instance
    metadata, and to IMDSv1 when the token PUT is refused (403)."""
    fake.imds_put_status = put_status
    out = run_with_fake(lab, dict(imds_env(fake, tmp_path), AWS_PROFILE="default"), fake)
    assert_same_sides(out, "missing default profile -> EC2")
    for side, (_, log, meta) in out.items():
        assert {(e["akid"], e["sig"]) for e in gets(log)} == {(TEMP[0], "ok")}, side
        kinds = {(r["method"], r["path"]) for r in meta}
        assert ("PUT", "/latest/api/token") in kinds, (side, kinds)
        assert ("GET", "/latest/meta-data/iam/security-credentials/parity-role") in kinds, side
        creds_gets = [r for r in meta if r["path"].endswith("/parity-role")]
        tok = {r["headers"].get("x-aws-ec2-metadata-token") for r in creds_gets}
        assert tok == ({"imds-token"} if put_status == 200 else {None}), (side, tok)


def write_profiles(tmp_path, config, creds=""):
    (tmp_path / "credentials").write_text(creds)
    (tmp_path / "config").write_text(config)
    return {"CPL_AWS_CREDENTIALS_FILE": str(tmp_path / "credentials"),
            "AWS_CONFIG_FILE": str(tmp_path / "config")}


@pytest.mark.parametrize("mfa", [False, True], ids=["plain", "mfa_serial"])
def test_assume_role_over_http(lab, fixtures, fake, tmp_path, mfa):
    """role_arn + source_profile: STS AssumeRole at AWS_STS_ENDPOINT over plain HTTP
    (AWS_HTTPS=NO); with mfa_serial, GDAL passes it as SerialNumber. Both sides send the
    same STS request and read with what it returned."""
    env = lab.env("h1")
    files = write_profiles(
        tmp_path,
        "[profile dev]\nrole_arn = arn:aws:iam::123456789012:role/parity\nsource_profile = base\n"
        "external_id = ext-1\nrole_session_name = parity-session\n"
        + ("mfa_serial = arn:aws:iam::123456789012:mfa/u\n" if mfa else ""),
        f"[base]\naws_access_key_id = {env['AWS_ACCESS_KEY_ID']}\n"
        f"aws_secret_access_key = {env['AWS_SECRET_ACCESS_KEY']}\n")
    extra = dict(no_keys(tmp_path), **files, AWS_PROFILE="dev", AWS_STS_ENDPOINT=fake.host,
                 AWS_HTTPS="NO")
    out = run_with_fake(lab, extra, fake)
    assert_same_sides(out, "assume role")
    sts = {}
    for side, (_, log, reqs) in out.items():
        assert {(e["akid"], e["sig"]) for e in gets(log)} == {(TEMP[0], "ok")}, side
        calls = [r for r in reqs if "Action=AssumeRole" in r["path"]]
        assert calls and all(r["method"] == "GET" for r in calls), (side, reqs)
        sts[side] = {r["path"] for r in calls}
        assert all(",SignedHeaders=host," in r["headers"]["authorization"] for r in calls)
    assert sts["stock"] == sts["vsitune"]
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(next(iter(sts["stock"]))).query)
    assert q.get("SerialNumber") == (["arn:aws:iam::123456789012:mfa/u"] if mfa else None)


def test_source_profile_with_web_identity(lab, fixtures, fake, tmp_path):
    """A source_profile that has role_arn + web_identity_token_file: its web identity
    credentials sign the AssumeRole of the profile in use."""
    (tmp_path / "token").write_text("parity-jwt\n")
    files = write_profiles(
        tmp_path,
        f"[profile src]\nrole_arn = arn:aws:iam::1:role/src\n"
        f"web_identity_token_file = {tmp_path / 'token'}\n"
        "[profile main]\nrole_arn = arn:aws:iam::1:role/main\nsource_profile = src\n")
    extra = dict(no_keys(tmp_path), **files, AWS_PROFILE="main", AWS_STS_ENDPOINT=fake.host,
                 CPL_AWS_STS_ROOT_URL=f"http://{fake.host}")
    out = run_with_fake(lab, extra, fake)
    assert_same_sides(out, "source profile with web identity")
    for side, (_, log, reqs) in out.items():
        assert {(e["akid"], e["sig"]) for e in gets(log)} == {(TEMP[0], "ok")}, side
        actions = [urllib.parse.parse_qs(urllib.parse.urlsplit(r["path"]).query)
                   .get("Action", [""])[0] for r in reqs]
        assert actions[:2] == ["AssumeRoleWithWebIdentity", "AssumeRole"], (side, actions)


# -- redirects ----------------------------------------------------------------------------
class Redirector(BaseHTTPRequestHandler):
    """An S3 front that sends every request to the lab with S3's 301 PermanentRedirect or
    307 TemporaryRedirect naming the lab's endpoint, as GDAL's autotest server does."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        srv = self.server
        with srv.lock:
            srv.seen.append(self.path)
        code = "TemporaryRedirect" if srv.status == 307 else "PermanentRedirect"
        body = (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code>"
                f"<Message>Please use the endpoint</Message><Endpoint>{srv.target}</Endpoint>"
                "</Error>").encode()
        self.send_response(srv.status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_GET


@pytest.mark.parametrize("status", [301, 307])
def test_redirect_to_endpoint(lab, fixtures, status):
    """AWS_S3_ENDPOINT answers with an <Endpoint> redirect: both sides read the COG from
    the endpoint named (the lab)."""
    target = lab.env("h1")["AWS_S3_ENDPOINT"]
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Redirector)
    srv.daemon_threads = True
    srv.lock, srv.seen, srv.status, srv.target = threading.Lock(), [], status, target
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        front = f"127.0.0.1:{srv.server_address[1]}"
        out = run_both(lab, [RASTER], {"AWS_S3_ENDPOINT": front})
        assert_same_sides(out, f"{status} redirect")
        for side, (_, log) in out.items():
            assert gets(log), f"{side}: nothing read from the endpoint the redirect named"
        assert srv.seen, "the front was never asked"
    finally:
        srv.shutdown()
        srv.server_close()


# -- headers ------------------------------------------------------------------------------
def test_crlf_header_list_is_a_documented_difference(lab, fixtures):
    """GDAL_HTTP_HEADERS as a "\r\n" list starting with an x-amz-* header: stock GDAL 3.6
    signs the whole list as that one header's value, so S3 (here the lab) refuses the
    signature; the plugin signs each header as itself and reads (docs/compatibility.md).
    GDAL 3.10 splits such a list itself (cpl_http.cpp): there both sides read the same,
    every GET signed right and carrying both headers."""
    hdrs = {"x-amz-meta-parity-a": "one", "x-amz-meta-parity-b": "two"}
    out = run_both(lab, [RASTER], {"GDAL_HTTP_HEADERS": "\r\n".join(
        f"{k}: {v}" for k, v in hdrs.items())})
    stock, vt = out["stock"][0][0], out["vsitune"][0][0]
    assert vt["value"] is not None, vt
    for e in gets(out["vsitune"][1]):
        assert e["sig"] == "ok" and all((e.get("amz") or {}).get(k) == v
                                        for k, v in hdrs.items()), e
    if gdal_at_least(3, 10):
        assert_same(out["stock"][0], out["vsitune"][0], "crlf headers")
        assert {e["sig"] for e in gets(out["stock"][1])} == {"ok"}
    else:
        assert stock["value"] is None
        assert [3, 16] in [e[:2] for e in stock["errors"]], stock  # SignatureDoesNotMatch
        assert {e["sig"] for e in gets(out["stock"][1])} == {"bad"}


def test_unreadable_header_file_is_gdals_error(lab, fixtures, tmp_path):
    """GDAL_HTTP_HEADER_FILE that cannot be read: GDAL's CPLE_FileIO "Cannot read ...", on
    every request (how many times it is said follows the requests made), and the requests
    go on without it. GDAL 3.6's GeoTIFF driver then refuses the open on both sides; from
    3.10 it opens, and the block reads' "Cannot read" are warnings (its reads turn failures
    into warnings): the same kinds of error on both sides, and the same answer."""
    missing = str(tmp_path / "no-such-headers")
    out = run_both(lab, [RASTER], {"GDAL_HTTP_HEADER_FILE": missing})
    kinds = {}
    for side, (res, log) in out.items():
        kinds[side] = {tuple(e) for e in res[0]["errors"]}
        assert (3, 3, f"Cannot read {missing}") in kinds[side], side
        assert kinds[side] <= {(c, 3, f"Cannot read {missing}") for c in (2, 3)}, side
        assert gets(log), side
    assert kinds["stock"] == kinds["vsitune"]
    assert out["stock"][0][0]["value"] == out["vsitune"][0][0]["value"]


# -- CPL_VSIL_CURL_CACHE_SIZE -----------------------------------------------------------
_BUDGET = r'''
import json, sys
from osgeo import gdal
f = gdal.VSIFOpenL(sys.argv[1], "rb")
gdal.VSIFReadL(1, 100, f)
gdal.VSIFCloseL(f)
print(json.loads(gdal.GetDriverByName("VSITUNE").GetMetadataItem("STATS"))["cache"]["budget"])
'''


@pytest.mark.parametrize("opts,want", [
    ({}, plugin_defaults.cache_size_default()),
    ({"CPL_VSIL_CURL_CACHE_SIZE": "3000000"}, 3000000),
    ({"CPL_VSIL_CURL_CACHE_SIZE": "3000000", "VSITUNE_CACHE_SIZE": "5M"}, 5 << 20),
], ids=["default", "gdal-option", "vsitune-option-wins"])
def test_cache_budget_follows_gdal_option(lab, fixtures, opts, want):
    """GDAL's CPL_VSIL_CURL_CACHE_SIZE bounds the plugin's cache when VSITUNE_CACHE_SIZE is
    unset: the plugin's cache is what serves /vsis3/ reads (stock GDAL's own is not used
    for them), so a deployment sized for stock GDAL keeps its memory bound."""
    env = lab_client.gdal_env(lab.env("h1"), vsitune=True, extra=opts)
    cp = subprocess.run(["/usr/bin/python3", "-c", _BUDGET, COG], env=env, capture_output=True,
                        text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    assert int(cp.stdout.strip().splitlines()[-1]) == want


# -- the shared files read as GDAL reads them (issue 18, item 9) --------------------------
# Each case: (credentials file, config file, whose key stock GDAL signs with: "lab" (the
# lab's key, read from the file), "imds" (nothing usable in the files: the chain goes on to
# the fake EC2 metadata) or "other" (a key the lab does not know, or a wrong secret)).
# What the server saw must be the same on both sides, and what GDAL returned.
WRONG = "AKIAVTWRONGPROFILE01"
PAD = "# " + "p" * 98 + "\n"  # 101 bytes a line


def _quirk_files(lab, case):
    env = lab.env("h1")
    ak, sk = env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]
    keys = f"aws_access_key_id = {ak}\naws_secret_access_key = {sk}\n"
    wrong = f"aws_access_key_id = {WRONG}\naws_secret_access_key = wrong\n"
    return {
        # the first [default] is the profile; a second one is never read
        "duplicate_default": (f"[default]\n{keys}[default]\n{wrong}", "", "lab"),
        # a header is the whole line "[default]": no blanks inside the brackets
        "spaced_header": (f"[ default ]\n{keys}", "", "imds"),
        # 10 MB of comments before the profile: read through, as GDAL does
        "ten_megabytes": (PAD * (10 * 1024 * 1024 // len(PAD)) + f"[default]\n{keys}", "",
                          "lab"),
        # no inline comments: "# ..." is part of the value
        "inline_comment_key_id": (f"[default]\naws_access_key_id = {ak} # the lab's\n"
                                  f"aws_secret_access_key = {sk}\n", "", "other"),
        "inline_comment_secret": (f"[default]\naws_access_key_id = {ak}\n"
                                  f"aws_secret_access_key = {sk} # the lab's\n", "", "other"),
        # a value keeps its trailing blanks
        "trailing_blank": (f"[default]\naws_access_key_id = {ak}  \n"
                           f"aws_secret_access_key = {sk}\n", "", "other"),
        # the region with its comment signs the scope; the lab accepts any region (S3 would
        # not); vsitune refuses a region that is no host-name part (s3_route.c)
        "inline_comment_region": (f"[default]\n{keys}", "[default]\nregion = us-east-1 # note\n",
                                  "lab"),
        # config file: the first of [default] and [profile default]
        "config_first_of_either": ("", f"[default]\n{keys}[profile default]\n{wrong}", "lab"),
    }[case]


@pytest.mark.parametrize("case", ["duplicate_default", "spaced_header", "ten_megabytes",
                                  "inline_comment_key_id", "inline_comment_secret",
                                  "trailing_blank", "config_first_of_either",
                                  pytest.param("inline_comment_region", marks=xfail(
                                      "vsitune refuses a region that cannot be part of a host "
                                      "name (vt__s3_valid_region); stock GDAL signs with it"))])
def test_shared_files_parsed_as_gdal(lab, fixtures, fake, tmp_path, case):
    creds, config, signer = _quirk_files(lab, case)
    extra = dict(imds_env(fake, tmp_path), **write_profiles(tmp_path, config, creds))
    out = run_with_fake(lab, extra, fake)
    seen = {side: {(e["akid"], e["sig"]) for e in gets(log)} for side, (_, log, _) in out.items()}
    lab_key = lab.env("h1")["AWS_ACCESS_KEY_ID"]
    # what stock GDAL did, measured here: the case is the one it is meant to be
    if signer == "lab":
        assert seen["stock"] == {(lab_key, "ok")}, seen
    elif signer == "imds":
        assert seen["stock"] == {(TEMP[0], "ok")}, seen
    else:
        assert seen["stock"] and all(s != "ok" for _, s in seen["stock"]), seen
        assert out["stock"][0][-1].get("value") is None, out["stock"][0]
    assert seen["vsitune"] == seen["stock"], seen
    imds = {side: [(r["method"], r["path"]) for r in meta] for side, (_, _, meta) in out.items()}
    assert bool(imds["vsitune"]) == bool(imds["stock"]), imds
    assert_same(out["stock"][0], out["vsitune"][0], f"shared files: {case}")
