"""test_creds_providers.py: every network credentials provider (creds.c) and the
region redirect (s3.c) against servers this test starts on 127.0.0.1.

The servers are small http.server instances that answer like STS
(AssumeRoleWithWebIdentity), the ECS/EKS container endpoint and EC2 IMDSv2, and
record every request; the assertions read what they received (the form fields,
the Authorization header, the IMDSv2 PUT and token header), not what the code says
it did. The C side is tests/tools/vt_creds_probe, which runs the real chain
through the real engine. The last tests hand provider credentials to the lab
(tests/lab) and check its SigV4 verifier accepts the signed GETs.

Run with /usr/bin/python3 -m pytest tests/integration/test_creds_providers.py.
"""

import hashlib
import hmac
import json
import os
import re
import subprocess
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import lab_client
from parity import gdal_at_least

# How stock GDAL ends its credentials chain when nothing was found (cpl_aws.cpp), in the
# words of the release under test: the plugin's message starts with them.
NO_CREDS_WORDS = ("No valid AWS credentials found" if gdal_at_least(3, 13) else
                  "AWS_SECRET_ACCESS_KEY and AWS_NO_SIGN_REQUEST configuration options not "
                  "defined")

PROBE_TIMEOUT = 60


def probe_path():
    p = os.environ.get("VT_CREDS_PROBE") or lab_client.build_dir() / "tests" / "tools" / "vt_creds_probe"
    return Path(p)


@pytest.fixture(scope="module")
def probe():
    p = probe_path()
    if not p.is_file():
        pytest.skip(f"vt_creds_probe not built at {p} (tests/tools)")
    return p


# -- the fake AWS endpoints ---------------------------------------------------
class Fake:
    """State shared by the handler threads: what to answer, what was received."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []           # dicts: method, path, headers (lowercase), body
        self.expires_in = 3600       # seconds until the credentials handed out expire
        self.sts_error = False
        self.sts_secret = None       # AssumeRole: the secret signatures must verify with
        self.sts_verdicts = []       # (ok, akid, region, service) per AssumeRole request
        self.container_token = None  # Authorization value the container endpoint demands
        self.imds_token = "IMDS-TOKEN-" + os.urandom(6).hex()
        self.imds_put_status = 200   # 405: an IMDSv1-only service; 403: IMDS disabled
        self.issued = 0
        self.fixed_creds = None      # (akid, secret, token) to hand out instead of fresh ones
        self.hold_after = None       # hold the credential request arriving with this number
        self.arrivals = 0
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.redirect_region = "eu-west-2"
        self.redirect_how = "header"  # header | xml-region | xml-endpoint | none
        self.redirect_status = 301
        self.object = b"".join(bytes([i % 251]) for i in range(5000))

    def next_creds(self):
        with self.lock:
            self.issued += 1
            n = self.issued
        if self.fixed_creds:
            return self.fixed_creds + (n,)
        return (f"ASIAFAKE{n:08d}", f"secret/{n}+x", f"token-{n}", n)

    def expiration(self):
        t = time.gmtime(time.time() + self.expires_in)
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", t)

    def of(self, path_prefix, method=None):
        return [r for r in self.requests if r["path"].startswith(path_prefix)
                and (method is None or r["method"] == method)]

    def sts_calls(self, action):
        """The STS requests for action, with their query parsed (GDAL's GET form)."""
        out = []
        for r in self.requests:
            q = urllib.parse.parse_qs(urllib.parse.urlsplit(r["path"]).query)
            if q.get("Action") == [action]:
                out.append(dict(r, query=q))
        return out


def verify_sigv4(method, path, headers, body, secret):
    """Check a header-signed SigV4 request (non-S3 service rules) with an
    implementation independent of sigv4.c. Returns (ok, akid, region, service)."""
    m = re.fullmatch(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request,\s*"
                     r"SignedHeaders=([a-z0-9;-]+),\s*Signature=([0-9a-f]{64})",
                     headers.get("authorization", ""))
    if not m:
        return (False, None, None, None)
    akid, day, region, service, signed, signature = m.groups()
    uri = "/".join(urllib.parse.quote(urllib.parse.unquote(seg), safe="-_.~")
                   for seg in path.split("?", 1)[0].split("/"))
    query = path.split("?", 1)[1] if "?" in path else ""
    pairs = sorted(urllib.parse.parse_qsl(query, keep_blank_values=True))
    canon_query = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}="
                           f"{urllib.parse.quote(v, safe='-_.~')}" for k, v in pairs)
    canon_headers = "".join(f"{h}:{' '.join(headers[h].split())}\n" for h in signed.split(";"))
    creq = "\n".join([method, uri, canon_query, canon_headers, signed,
                      hashlib.sha256(body).hexdigest()])
    scope = f"{day}/{region}/{service}/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", headers["x-amz-date"], scope,
                     hashlib.sha256(creq.encode()).hexdigest()])
    key = ("AWS4" + secret).encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    want = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    return (hmac.compare_digest(want, signature), akid, region, service)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", ctype="text/plain", headers=None):
        if isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def record(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        fake = self.server.fake
        with fake.lock:
            fake.requests.append({"method": self.command, "path": self.path,
                                  "headers": {k.lower(): v for k, v in self.headers.items()},
                                  "body": body})
        return fake, body

    def maybe_hold(self, fake):
        with fake.lock:
            fake.arrivals += 1
            n = fake.arrivals
        if fake.hold_after is not None and n == fake.hold_after:
            fake.arrived.set()
            fake.release.wait(30)

    def do_PUT(self):
        fake, _ = self.record()
        if self.path == "/latest/api/token":
            if not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                return self.reply(400, "missing ttl")
            if fake.imds_put_status != 200:
                return self.reply(fake.imds_put_status, "no")
            return self.reply(200, fake.imds_token)
        self.reply(404)

    def sts(self, fake, body):
        """STS as GDAL calls it: a GET with the parameters in the query string."""
        form = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        action = form.get("Action", [""])[0]
        if action == "AssumeRole":
            verdict = verify_sigv4("GET", self.path,
                                   {k.lower(): v for k, v in self.headers.items()},
                                   body, fake.sts_secret or "")
            fake.sts_verdicts.append(verdict)
            if not verdict[0]:
                return self.reply(403, "<ErrorResponse><Error><Code>SignatureDoesNotMatch</Code>"
                                  "<Message>The request signature we calculated does not "
                                  "match</Message></Error></ErrorResponse>", "text/xml")
            akid, secret, token, _ = fake.next_creds()
            return self.reply(200, f"""<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult><AssumedRoleUser><Arn>arn:aws:sts::1:assumed-role/r/s</Arn></AssumedRoleUser>
    <Credentials><AccessKeyId>{akid}</AccessKeyId><SecretAccessKey>{secret}</SecretAccessKey>
      <SessionToken>{token}</SessionToken><Expiration>{fake.expiration()}</Expiration>
    </Credentials></AssumeRoleResult></AssumeRoleResponse>""", "text/xml")
        if action == "AssumeRoleWithWebIdentity":
            if fake.sts_error:
                return self.reply(400, "<ErrorResponse><Error><Type>Sender</Type>"
                                  "<Code>InvalidIdentityToken</Code><Message>Token "
                                  "expired &amp; rejected</Message></Error></ErrorResponse>",
                                  "text/xml")
            self.maybe_hold(fake)
            akid, secret, token, _ = fake.next_creds()
            return self.reply(200, f"""<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials>
      <AccessKeyId>{akid}</AccessKeyId>
      <SecretAccessKey>{secret}</SecretAccessKey>
      <SessionToken>{token}</SessionToken>
      <Expiration>{fake.expiration()}</Expiration>
    </Credentials>
  </AssumeRoleWithWebIdentityResult>
</AssumeRoleWithWebIdentityResponse>""", "text/xml")
        self.reply(400, "<ErrorResponse><Error><Code>InvalidAction</Code></Error></ErrorResponse>",
                   "text/xml")

    def creds_json(self, fake, imds=False):
        akid, secret, token, _ = fake.next_creds()
        d = {"AccessKeyId": akid, "SecretAccessKey": secret, "Token": token,
             "Expiration": fake.expiration()}
        if imds:
            d.update({"Code": "Success", "Type": "AWS-HMAC"})
        return json.dumps(d, indent=2)

    def do_GET(self):
        fake, body = self.record()
        p = self.path
        if "Action=" in p:
            return self.sts(fake, body)
        if p == "/control/arrived":
            return self.reply(200, "yes" if fake.arrived.is_set() else "no")
        if p == "/control/release":
            fake.release.set()
            return self.reply(200, "yes")
        if p.startswith("/creds"):
            if fake.container_token is not None and \
                    self.headers.get("Authorization") != fake.container_token:
                return self.reply(401, '{"code":"Unauthorized","message":"bad token"}',
                                  "application/json")
            self.maybe_hold(fake)
            return self.reply(200, self.creds_json(fake), "application/json")
        if p.startswith("/latest/meta-data/iam/security-credentials/"):
            v1 = fake.imds_put_status != 200 and "X-aws-ec2-metadata-token" not in self.headers
            if self.headers.get("X-aws-ec2-metadata-token") != fake.imds_token and not v1:
                return self.reply(401)
            role = p[len("/latest/meta-data/iam/security-credentials/"):]
            if role == "":
                return self.reply(200, "vt-test-role\n")
            if role == "vt-test-role":
                return self.reply(200, self.creds_json(fake, imds=True))
            return self.reply(404)
        if p.startswith("/bucket/"):
            return self.s3_get(fake)
        self.reply(404)

    def s3_get(self, fake):
        auth = self.headers.get("Authorization") or ""
        how = fake.redirect_how
        if how == "xml-endpoint":  # GDAL autotest's form: another host:port
            right = self.headers.get("Host", "").startswith("localhost:")
        else:
            right = f"/{fake.redirect_region}/s3/aws4_request" in auth
        if not right:
            hdrs = {"x-amz-bucket-region": fake.redirect_region} if how == "header" else {}
            port = self.server.server_address[1]
            extra = {"xml-region": f"<Region>{fake.redirect_region}</Region>",
                     "xml-endpoint": f"<Endpoint>localhost:{port}</Endpoint>"}.get(how, "")
            code = {400: "AuthorizationHeaderMalformed",
                    307: "TemporaryRedirect"}.get(fake.redirect_status, "PermanentRedirect")
            return self.reply(fake.redirect_status, f"<?xml version=\"1.0\"?><Error><Code>{code}</Code>"
                              f"<Message>Use the right region</Message>{extra}</Error>",
                              "application/xml", hdrs)
        rng = self.headers.get("Range", "")
        a, b = (int(x) for x in rng[len("bytes="):].split("-"))
        body = fake.object[a:b + 1]
        self.reply(206, body, "application/octet-stream",
                   {"Content-Range": f"bytes {a}-{a + len(body) - 1}/{len(fake.object)}"})


@pytest.fixture
def fake():
    f = Fake()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.fake = f
    f.url = f"http://127.0.0.1:{srv.server_address[1]}"
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f
    f.release.set()
    srv.shutdown()
    srv.server_close()


def run(probe, args, env, timeout=PROBE_TIMEOUT):
    cp = subprocess.run([str(probe)] + args, env=env, capture_output=True, text=True,
                        timeout=timeout)
    return cp


def parse_lines(out):
    rows = []
    for line in out.splitlines():
        fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        fields["_who"] = line.split()[0] if "=" not in line.split()[0] else ""
        rows.append(fields)
    return rows


@pytest.fixture
def base_env(tmp_path):
    """A clean environment: no AWS_/GDAL_/CPL_ settings from the caller, an empty
    HOME (no ~/.aws), IMDS off unless a test turns it on."""
    env = lab_client.gdal_env({})
    env["HOME"] = str(tmp_path)
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    return env


# -- web identity ---------------------------------------------------------------
def test_web_identity_sends_token_and_role_as_gdal_does(probe, fake, base_env, tmp_path):
    tok = tmp_path / "token"
    tok.write_text("eyJ.header.sig+/=\n")
    env = dict(base_env, AWS_ROLE_ARN="arn:aws:iam::123456789012:role/vt role",
               AWS_WEB_IDENTITY_TOKEN_FILE=str(tok), AWS_ROLE_SESSION_NAME="vt-session",
               CPL_AWS_STS_ROOT_URL=fake.url + "/sts")
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 0, cp.stderr
    row = parse_lines(cp.stdout)[0]
    assert row["source"] == "web-identity"
    assert row["key"] == "ASIAFAKE00000001"
    assert row["token"] == "1"
    assert abs(int(row["expires"]) - (time.time() + 3600)) < 120
    sts = fake.sts_calls("AssumeRoleWithWebIdentity")
    assert len(sts) == 1 and sts[0]["method"] == "GET"
    # GDAL's URL: CPL_AWS_STS_ROOT_URL + "/?Action=...&RoleSessionName=...
    # &Version=...&RoleArn=...&WebIdentityToken=...", parameters in that order.
    assert sts[0]["path"].startswith("/sts/?Action=AssumeRoleWithWebIdentity&RoleSessionName=")
    assert [k for k, _ in urllib.parse.parse_qsl(sts[0]["path"].split("?", 1)[1])] == [
        "Action", "RoleSessionName", "Version", "RoleArn", "WebIdentityToken"]
    q = sts[0]["query"]
    assert q["Version"] == ["2011-06-15"]
    assert q["RoleArn"] == ["arn:aws:iam::123456789012:role/vt role"]
    assert q["RoleSessionName"] == ["vt-session"]
    assert q["WebIdentityToken"] == ["eyJ.header.sig+/="]
    assert "authorization" not in sts[0]["headers"]  # the call is unsigned by design


def test_web_identity_defaults_are_gdals(probe, fake, base_env, tmp_path):
    # No session name: GDAL's "gdal". AWS_STS_ENDPOINT given as a URL (the AWS
    # SDKs' form) is taken as the root too.
    tok = tmp_path / "token"
    tok.write_text("t")
    env = dict(base_env, AWS_ROLE_ARN="arn:aws:iam::1:role/r",
               AWS_WEB_IDENTITY_TOKEN_FILE=str(tok), AWS_STS_ENDPOINT=fake.url + "/sts/")
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 0, cp.stderr
    assert fake.sts_calls("AssumeRoleWithWebIdentity")[0]["query"]["RoleSessionName"] == ["gdal"]


def test_web_identity_error_is_clear(probe, fake, base_env, tmp_path):
    # GDAL goes on down the chain after a failed web identity call; the final
    # error (GDAL's words) carries STS's answer, never the token.
    tok = tmp_path / "token"
    tok.write_text("secret-jwt")
    fake.sts_error = True
    env = dict(base_env, AWS_ROLE_ARN="arn:aws:iam::1:role/r",
               AWS_WEB_IDENTITY_TOKEN_FILE=str(tok), CPL_AWS_STS_ROOT_URL=fake.url + "/sts")
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 1
    assert NO_CREDS_WORDS in cp.stderr
    assert "HTTP 400 InvalidIdentityToken: Token expired & rejected" in cp.stderr
    assert "secret-jwt" not in cp.stderr
    assert len(fake.sts_calls("AssumeRoleWithWebIdentity")) == 1


# -- AssumeRole from a profile (role_arn + source_profile) --------------------------
def write_role_profiles(tmp_path, base_secret, extra=""):
    (tmp_path / "credentials").write_text(
        "[base]\naws_access_key_id = AKIDBASE\n"
        f"aws_secret_access_key = {base_secret}\n")
    (tmp_path / "config").write_text(
        "[profile dev]\nrole_arn = arn:aws:iam::123456789012:role/dev-role\n"
        "source_profile = base\nrole_session_name = vt-dev\nexternal_id = ext-42\n" + extra)
    return {"AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
            "AWS_CONFIG_FILE": str(tmp_path / "config"), "AWS_PROFILE": "dev"}


def sts_host_env(fake):
    """GDAL's AssumeRole options: AWS_STS_ENDPOINT is a host[:port], the scheme
    comes from AWS_HTTPS."""
    return {"AWS_STS_ENDPOINT": fake.url[len("http://"):], "AWS_HTTPS": "NO"}


def test_assume_role_signed_with_source_profile(probe, fake, base_env, tmp_path):
    fake.sts_secret = "base/secret+key"
    env = dict(base_env, **write_role_profiles(tmp_path, "base/secret+key"),
               **sts_host_env(fake), AWS_STS_REGION="eu-central-1")
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 0, cp.stderr
    row = parse_lines(cp.stdout)[0]
    assert (row["source"], row["key"], row["token"]) == ("assume-role", "ASIAFAKE00000001", "1")
    assert fake.sts_verdicts == [(True, "AKIDBASE", "eu-central-1", "sts")]
    call = fake.sts_calls("AssumeRole")[0]
    assert call["method"] == "GET"
    # GDAL's request: sorted parameters in the query, SignedHeaders=host,
    # X-Amz-Date sent beside.
    assert call["path"] == ("/?Action=AssumeRole&ExternalId=ext-42&RoleArn=arn%3Aaws%3Aiam%3A%3A"
                            "123456789012%3Arole%2Fdev-role&RoleSessionName=vt-dev&Version=2011-06-15")
    assert ",SignedHeaders=host," in call["headers"]["authorization"]
    assert re.fullmatch(r"\d{8}T\d{6}Z", call["headers"]["x-amz-date"])


def test_assume_role_defaults_are_gdals(probe, fake, base_env, tmp_path):
    # AWS_STS_REGION unset: us-east-1; no role_session_name: GDAL-session.
    fake.sts_secret = "s"
    (tmp_path / "credentials").write_text("[base]\naws_access_key_id = AKIDBASE\n"
                                          "aws_secret_access_key = s\n")
    (tmp_path / "config").write_text("[profile dev]\nrole_arn = arn:aws:iam::1:role/r\n"
                                     "source_profile = base\n")
    env = dict(base_env, AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "credentials"),
               AWS_CONFIG_FILE=str(tmp_path / "config"), AWS_PROFILE="dev",
               **sts_host_env(fake))
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 0, cp.stderr
    assert fake.sts_verdicts == [(True, "AKIDBASE", "us-east-1", "sts")]
    assert fake.sts_calls("AssumeRole")[0]["query"]["RoleSessionName"] == ["GDAL-session"]


def test_assume_role_bad_source_secret_is_clear(probe, fake, base_env, tmp_path):
    fake.sts_secret = "the-real-secret"
    env = dict(base_env, **write_role_profiles(tmp_path, "a-wrong-secret"),
               **sts_host_env(fake))
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 1
    assert "assume role (STS AssumeRole)" in cp.stderr
    assert "HTTP 403 SignatureDoesNotMatch" in cp.stderr
    assert [v[0] for v in fake.sts_verdicts] == [False]


def test_assume_role_with_mfa_sends_serial_number_as_gdal_does(probe, fake, base_env, tmp_path):
    # GDAL passes mfa_serial as SerialNumber (and no TokenCode: it has none to
    # give); whatever STS answers is the answer.
    fake.sts_secret = "s"
    env = dict(base_env, **write_role_profiles(tmp_path, "s", "mfa_serial = arn:aws:iam::1:mfa/u\n"),
               **sts_host_env(fake))
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 0, cp.stderr
    q = fake.sts_calls("AssumeRole")[0]["query"]
    assert q["SerialNumber"] == ["arn:aws:iam::1:mfa/u"]
    assert "TokenCode" not in q


def test_source_profile_with_web_identity(probe, fake, base_env, tmp_path):
    # GDAL: a source_profile that itself has role_arn + web_identity_token_file
    # gets web identity credentials, which then sign the AssumeRole.
    (tmp_path / "token").write_text("jwt-src\n")
    (tmp_path / "credentials").write_text("")
    (tmp_path / "config").write_text(
        "[profile src]\nrole_arn = arn:aws:iam::1:role/src-role\n"
        f"web_identity_token_file = {tmp_path / 'token'}\n"
        "[profile main]\nrole_arn = arn:aws:iam::1:role/main-role\nsource_profile = src\n")
    fake.fixed_creds = ("ASIASOURCE", "source-secret", "source-token")
    fake.sts_secret = "source-secret"
    env = dict(base_env, AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "credentials"),
               AWS_CONFIG_FILE=str(tmp_path / "config"), AWS_PROFILE="main",
               CPL_AWS_STS_ROOT_URL=fake.url, **sts_host_env(fake))
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 0, cp.stderr
    assert parse_lines(cp.stdout)[0]["source"] == "assume-role"
    wi = fake.sts_calls("AssumeRoleWithWebIdentity")
    ar = fake.sts_calls("AssumeRole")
    assert [c["query"]["RoleArn"] for c in wi] == [["arn:aws:iam::1:role/src-role"]]
    assert [c["query"]["RoleArn"] for c in ar] == [["arn:aws:iam::1:role/main-role"]]
    assert fake.sts_verdicts == [(True, "ASIASOURCE", "us-east-1", "sts")]
    assert ar[0]["headers"]["x-amz-security-token"] == "source-token"


def test_missing_profile_goes_on_down_the_chain(probe, fake, base_env, tmp_path):
    # AWS_PROFILE=default (or any name) that no file has: GDAL goes on to web
    # identity, container and EC2; so does vsitune.
    env = dict(base_env, AWS_PROFILE="default",
               AWS_CONTAINER_CREDENTIALS_FULL_URI=fake.url + "/creds")
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 0, cp.stderr
    assert parse_lines(cp.stdout)[0]["source"] == "container"
    env = dict(base_env, AWS_PROFILE="nosuchprofile",
               AWS_EC2_METADATA_SERVICE_ENDPOINT=fake.url)
    del env["AWS_EC2_METADATA_DISABLED"]
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 0, cp.stderr
    assert parse_lines(cp.stdout)[0]["source"] == "imds"


# -- container credentials ----------------------------------------------------------
def test_container_full_uri_sends_token(probe, fake, base_env):
    fake.container_token = "Bearer abc.def"
    env = dict(base_env, AWS_CONTAINER_CREDENTIALS_FULL_URI=fake.url + "/creds/v1",
               AWS_CONTAINER_AUTHORIZATION_TOKEN="Bearer abc.def")
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 0, cp.stderr
    row = parse_lines(cp.stdout)[0]
    assert (row["source"], row["key"], row["token"]) == ("container", "ASIAFAKE00000001", "1")
    got = fake.of("/creds")
    assert [r["headers"].get("authorization") for r in got] == ["Bearer abc.def"]


def test_container_token_file_wins(probe, fake, base_env, tmp_path):
    f = tmp_path / "eks-token"
    f.write_text("from-file-token\n")
    fake.container_token = "from-file-token"
    env = dict(base_env, AWS_CONTAINER_CREDENTIALS_FULL_URI=fake.url + "/creds",
               AWS_CONTAINER_AUTHORIZATION_TOKEN="from-env-token",
               AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=str(f))
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 0, cp.stderr
    assert [r["headers"].get("authorization") for r in fake.of("/creds")] == ["from-file-token"]


def test_container_refused_token_is_an_error(probe, fake, base_env):
    fake.container_token = "right"
    env = dict(base_env, AWS_CONTAINER_CREDENTIALS_FULL_URI=fake.url + "/creds",
               AWS_CONTAINER_AUTHORIZATION_TOKEN="wrong")
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 1
    assert "container credentials" in cp.stderr and "HTTP 401" in cp.stderr
    assert "bad token" in cp.stderr


def test_environment_comes_first(probe, fake, base_env):
    env = dict(base_env, AWS_ACCESS_KEY_ID="AKENV", AWS_SECRET_ACCESS_KEY="SKENV",
               AWS_CONTAINER_CREDENTIALS_FULL_URI=fake.url + "/creds")
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 0, cp.stderr
    assert parse_lines(cp.stdout)[0]["source"] == "environment"
    assert fake.requests == []


# -- EC2 IMDSv2 ---------------------------------------------------------------------
def test_imds_v2_put_then_token_header(probe, fake, base_env):
    env = dict(base_env, AWS_EC2_METADATA_SERVICE_ENDPOINT=fake.url)
    del env["AWS_EC2_METADATA_DISABLED"]
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 0, cp.stderr
    row = parse_lines(cp.stdout)[0]
    assert (row["source"], row["key"]) == ("imds", "ASIAFAKE00000001")
    seq = [(r["method"], r["path"]) for r in fake.requests]
    assert seq == [("PUT", "/latest/api/token"),
                   ("GET", "/latest/meta-data/iam/security-credentials/"),
                   ("GET", "/latest/meta-data/iam/security-credentials/vt-test-role")]
    assert int(fake.requests[0]["headers"]["x-aws-ec2-metadata-token-ttl-seconds"]) > 0
    for r in fake.requests[1:]:
        assert r["headers"]["x-aws-ec2-metadata-token"] == fake.imds_token


def test_imds_v1_fallback_when_put_refused(probe, fake, base_env):
    fake.imds_put_status = 405
    env = dict(base_env, AWS_EC2_METADATA_SERVICE_ENDPOINT=fake.url)
    del env["AWS_EC2_METADATA_DISABLED"]
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 0, cp.stderr
    assert parse_lines(cp.stdout)[0]["source"] == "imds"
    assert [(r["method"], r["path"]) for r in fake.requests] == [
        ("PUT", "/latest/api/token"),
        ("GET", "/latest/meta-data/iam/security-credentials/"),
        ("GET", "/latest/meta-data/iam/security-credentials/vt-test-role")]
    assert all("x-aws-ec2-metadata-token" not in r["headers"] for r in fake.requests[1:])


def test_imds_v1_fallback_when_put_forbidden(probe, fake, base_env):
    # GDAL goes on with IMDSv1 whatever the token PUT answered, 403 included.
    fake.imds_put_status = 403
    env = dict(base_env, CPL_AWS_EC2_API_ROOT_URL=fake.url)  # GDAL's option name
    del env["AWS_EC2_METADATA_DISABLED"]
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 0, cp.stderr
    assert parse_lines(cp.stdout)[0]["source"] == "imds"
    assert [(r["method"], r["path"]) for r in fake.requests] == [
        ("PUT", "/latest/api/token"),
        ("GET", "/latest/meta-data/iam/security-credentials/"),
        ("GET", "/latest/meta-data/iam/security-credentials/vt-test-role")]
    assert all("x-aws-ec2-metadata-token" not in r["headers"] for r in fake.requests[1:])


def test_imds_disabled_sends_nothing(probe, fake, base_env):
    env = dict(base_env, AWS_EC2_METADATA_SERVICE_ENDPOINT=fake.url,
               AWS_EC2_METADATA_DISABLED="true")
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 1
    assert NO_CREDS_WORDS in cp.stderr
    assert "EC2 instance metadata disabled" in cp.stderr
    assert fake.requests == []


def test_imds_unreachable_fails_fast_with_reason(probe, base_env):
    # Port 9 (discard) on loopback is closed: connection refused, clear text.
    env = dict(base_env, AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:9")
    del env["AWS_EC2_METADATA_DISABLED"]
    cp = run(probe, ["creds"], env, timeout=30)
    assert cp.returncode == 1
    # The token PUT is refused, IMDSv1 is tried (as GDAL does) and refused too.
    assert "EC2 instance metadata: GET http://127.0.0.1:9/latest/meta-data/iam/" \
        "security-credentials/" in cp.stderr


# -- refresh ------------------------------------------------------------------------
def test_fresh_credentials_are_cached(probe, fake, base_env):
    fake.expires_in = 3600
    env = dict(base_env, AWS_CONTAINER_CREDENTIALS_FULL_URI=fake.url + "/creds")
    cp = run(probe, ["creds", "--repeat", "3"], env)
    assert cp.returncode == 0, cp.stderr
    assert [r["key"] for r in parse_lines(cp.stdout)] == ["ASIAFAKE00000001"] * 3
    assert len(fake.of("/creds")) == 1


def test_refresh_ahead_of_expiry(probe, fake, base_env):
    # 200 s left is inside the 5-minute refresh window: the next use after the
    # minimum refresh interval (5 s) fetches new ones.
    fake.expires_in = 200
    env = dict(base_env, AWS_CONTAINER_CREDENTIALS_FULL_URI=fake.url + "/creds")
    cp = run(probe, ["creds", "--repeat", "2", "--sleep", "6"], env)
    assert cp.returncode == 0, cp.stderr
    assert [r["key"] for r in parse_lines(cp.stdout)] == ["ASIAFAKE00000001", "ASIAFAKE00000002"]
    assert len(fake.of("/creds")) == 2


def test_refresh_does_not_stall_readers(probe, fake, base_env, tmp_path):
    # The second credentials request is held by the server until the probe
    # releases it; meanwhile readers must get the still-valid first credentials.
    # Web identity: its 10 s STS timeout leaves room to hold the request.
    fake.expires_in = 200
    fake.hold_after = 2
    env = dict(provider_env("web-identity", fake, base_env, tmp_path),
               VT_PROBE_CONTROL=fake.url + "/control")
    cp = run(probe, ["hold", "--readers", "4"], env)
    assert cp.returncode == 0, (cp.returncode, cp.stderr)
    rows = parse_lines(cp.stdout)
    assert rows[0]["key"] == "ASIAFAKE00000001"
    readers = [r for r in rows if r["_who"] == "reader"]
    assert [r["key"] for r in readers] == ["ASIAFAKE00000001"] * 4
    assert [r["key"] for r in rows if r["_who"] == "refresher"] == ["ASIAFAKE00000002"]
    # readers did not start refreshes of their own
    assert len(fake.sts_calls("AssumeRoleWithWebIdentity")) == 2


def test_fork_during_refresh_does_not_hang_the_child(probe, fake, base_env, tmp_path):
    # Credentials too close to expiry to use: every use refreshes. The parent's
    # refresh (request 2) is held; the forked child must run its own (request 3)
    # instead of waiting for a thread it does not have.
    fake.expires_in = 5
    fake.hold_after = 2
    env = dict(provider_env("web-identity", fake, base_env, tmp_path),
               VT_PROBE_CONTROL=fake.url + "/control")
    cp = run(probe, ["fork"], env)
    assert cp.returncode == 0, (cp.returncode, cp.stderr)
    rows = parse_lines(cp.stdout)
    assert [r for r in rows if r.get("child-exit")] == [{"child-exit": "0", "_who": ""}], cp.stderr
    child = [r for r in rows if r["_who"] == "child"]
    assert [r["key"] for r in child] == ["ASIAFAKE00000002"]  # answered while 2 is held
    assert len(fake.sts_calls("AssumeRoleWithWebIdentity")) == 3


# -- S3 region redirect ---------------------------------------------------------------
@pytest.mark.parametrize("status,how", [(301, "header"), (307, "header"), (400, "header"),
                                        (400, "xml-region"), (301, "xml-endpoint"),
                                        (307, "xml-endpoint")])
def test_region_redirect_retries_once_in_the_right_region(probe, fake, base_env, status, how):
    fake.redirect_status, fake.redirect_how = status, how
    env = dict(base_env, AWS_S3_ENDPOINT=fake.url[len("http://"):], AWS_HTTPS="NO",
               AWS_ACCESS_KEY_ID="AKIDREDIRECT", AWS_SECRET_ACCESS_KEY="secret",
               AWS_REGION="us-east-1")
    cp = run(probe, ["get", "bucket/dir/a b+c.bin", "100", "50"], env)
    assert cp.returncode == 0, cp.stderr
    row = parse_lines(cp.stdout)[0]
    assert row["status"] == "206"
    assert row["sha256"] == hashlib.sha256(fake.object[100:150]).hexdigest()
    got = fake.of("/bucket/")
    assert len(got) == 2
    assert got[0]["path"] == "/bucket/dir/a%20b%2Bc.bin"
    assert "/us-east-1/s3/aws4_request" in got[0]["headers"]["authorization"]
    if how == "xml-endpoint":  # the endpoint GDAL would switch to, same region
        assert got[1]["headers"]["host"].startswith("localhost:")
        assert "/us-east-1/s3/aws4_request" in got[1]["headers"]["authorization"]
    else:
        assert "/eu-west-2/s3/aws4_request" in got[1]["headers"]["authorization"]
    assert got[1]["headers"]["range"] == "bytes=100-149"


def test_right_region_needs_no_retry(probe, fake, base_env):
    env = dict(base_env, AWS_S3_ENDPOINT=fake.url[len("http://"):], AWS_HTTPS="NO",
               AWS_ACCESS_KEY_ID="AK", AWS_SECRET_ACCESS_KEY="SK",
               AWS_REGION="eu-west-2")
    # Right region from the start: one request, no retry.
    cp = run(probe, ["get", "bucket/k", "0", "10"], env)
    assert cp.returncode == 0, cp.stderr
    assert len(fake.of("/bucket/")) == 1


def test_redirect_without_region_is_a_clear_error(probe, fake, base_env):
    fake.redirect_how = "none"
    env = dict(base_env, AWS_S3_ENDPOINT=fake.url[len("http://"):], AWS_HTTPS="NO",
               AWS_ACCESS_KEY_ID="AK", AWS_SECRET_ACCESS_KEY="SK")
    cp = run(probe, ["get", "bucket/k", "0", "10"], env)
    assert cp.returncode == 1
    assert "s3://bucket/k: HTTP 301 PermanentRedirect: Use the right region" in cp.stderr
    assert len(fake.of("/bucket/")) == 1


# -- the lab's verifier accepts what providers hand out --------------------------------
def lab_probe_env(lab, base_env, **extra):
    """The lab's h1 endpoint addressing, without its static keys, plus extra."""
    lab_env = lab.env("h1")
    return dict(base_env, AWS_S3_ENDPOINT=lab_env["AWS_S3_ENDPOINT"], AWS_HTTPS="NO",
                AWS_VIRTUAL_HOSTING="FALSE", AWS_REGION=lab_env["AWS_REGION"], **extra)



def provider_env(provider, fake, base_env, tmp_path):
    """Settings that make `provider` the one that answers, from `fake`."""
    if provider == "container":
        return dict(base_env, AWS_CONTAINER_CREDENTIALS_FULL_URI=fake.url + "/creds")
    if provider == "web-identity":
        (tmp_path / "token").write_text("jwt")
        return dict(base_env, AWS_ROLE_ARN="arn:aws:iam::1:role/r",
                    AWS_WEB_IDENTITY_TOKEN_FILE=str(tmp_path / "token"),
                    CPL_AWS_STS_ROOT_URL=fake.url + "/sts")
    if provider == "assume-role":
        fake.sts_secret = "src-secret"
        return dict(base_env, **write_role_profiles(tmp_path, "src-secret"),
                    **sts_host_env(fake))
    env = dict(base_env, AWS_EC2_METADATA_SERVICE_ENDPOINT=fake.url)
    del env["AWS_EC2_METADATA_DISABLED"]
    return env


@pytest.mark.parametrize("provider", ["container", "web-identity", "assume-role", "imds"])
def test_lab_accepts_provider_credentials(probe, fake, base_env, lab, tmp_path, provider):
    akid, secret, token = "ASIAVTCREDSPROBE0001", "probe/secret+key=", "probe-session-token"
    lab.register_credentials(akid, secret, token, expires_at=int(time.time()) + 3600)
    data = os.urandom(70000)
    key = "creds probe/obj+1 é.bin"
    lab.put_object("lab", key, data)
    fake.fixed_creds = (akid, secret, token)
    env = lab_probe_env(lab, provider_env(provider, fake, base_env, tmp_path))
    lab.reset()
    cp = run(probe, ["creds"], env)
    assert cp.returncode == 0, cp.stderr
    assert parse_lines(cp.stdout)[0]["source"] == provider
    cp = run(probe, ["get", f"lab/{key}", "1000", "30000"], env)
    assert cp.returncode == 0, cp.stderr
    row = parse_lines(cp.stdout)[0]
    assert row["status"] == "206"
    assert row["sha256"] == hashlib.sha256(data[1000:31000]).hexdigest()
    log = [e for e in lab.log() if e.get("method") == "GET"]
    assert len(log) == 1
    assert log[0]["sig"] == "ok" and log[0]["akid"] == akid


def test_lab_rejects_wrong_secret_with_clear_error(probe, fake, base_env, lab):
    lab.put_object("lab", "creds-probe/wrong.bin", b"x" * 100)
    env = lab_probe_env(lab, base_env, AWS_ACCESS_KEY_ID=lab.env("h1")["AWS_ACCESS_KEY_ID"],
                        AWS_SECRET_ACCESS_KEY="not-the-secret")
    lab.reset()
    cp = run(probe, ["get", "lab/creds-probe/wrong.bin", "0", "10"], env)
    assert cp.returncode == 1
    assert "s3://lab/creds-probe/wrong.bin: HTTP 403 SignatureDoesNotMatch" in cp.stderr
    log = [e for e in lab.log() if e.get("method") == "GET"]
    assert len(log) == 1 and log[0]["sig"] == "bad"


# -- a failed search is remembered briefly ----------------------------------------------
def test_failed_search_is_not_repeated_at_once(probe, fake, base_env):
    # The metadata endpoint answers 404 to the token PUT: the search fails. A
    # second use right after gets the same clear error without asking again.
    env = dict(base_env, AWS_EC2_METADATA_SERVICE_ENDPOINT=fake.url + "/norole")
    del env["AWS_EC2_METADATA_DISABLED"]
    cp = run(probe, ["creds", "--repeat", "2", "--keep-going"], env)
    assert cp.returncode == 1
    assert cp.stdout.split() == ["error=1", "error=1"]
    errs = [l for l in cp.stderr.splitlines() if "AWS_NO_SIGN_REQUEST configuration" in l]
    assert len(errs) == 2 and errs[0] == errs[1]
    assert [(r["method"], r["path"]) for r in fake.requests] == [
        ("PUT", "/norole/latest/api/token"),  # 404: try IMDSv1, 404 again
        ("GET", "/norole/latest/meta-data/iam/security-credentials/")]
