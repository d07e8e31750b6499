"""test_shared_security.py: who may read the shared cache (issue 18, item 1).

Item 1: bytes one process cached are served to another only when that other's own request
would have been answered: a second process with the right access key id and a wrong
secret, with a made-up session token, or reading as another role whose session presents
the same key id, gets stock GDAL's 403 (the same CPLErrors, measured beside it in the
same test) and the lab sees its request, while the first process still holds the window
in the segment.

Real processes against the lab (tests/lab), each with a pool of its own; what was sent
is read from the lab's log.
"""

import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from parity import assert_same
from test_shared_cache import pool, segment, shared, since  # noqa: F401 (pool: a fixture)
from test_vsitune_helpers import Worker, last_seq, sigcheck  # noqa: F401 (autouse)

# Temporary credentials the lab accepts (with their session token).
TEMP = ("ASIAVTSHAREDIDENT001", "shared/ident+Secret=key", "shared-ident-session-token")
NO_ENV_KEYS = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": ""}
WIN = (5000, 5000, 300, 300)  # a window of the s2 scene, far past its header

TRY_READ = """
try:
    ds = gdal.Open(path)
    got = ds.GetRasterBand(1).ReadAsArray(*win)
    result = {"ok": True, "sum": int(got.astype("int64").sum())}
except Exception as e:
    result = {"ok": False, "message": str(e)}
"""

READ_OK = """
ds = gdal.Open(path)
got = ds.GetRasterBand(1).ReadAsArray(*win)
lds = gdal.Open(local)
result = bool(np.array_equal(got, lds.GetRasterBand(1).ReadAsArray(*win)))
"""


# -- a role provider: STS AssumeRole handing out each role's session ---------------------
class Sts(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    roles = {}  # role ARN -> (akid, secret, token); set by the fixture

    def log_message(self, *a):
        pass

    def do_GET(self):
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        creds = self.roles.get(q.get("RoleArn", [""])[0])
        if q.get("Action") != ["AssumeRole"] or not creds:
            body, status = b"<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>", 403
        else:
            exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
            body = (f"<AssumeRoleResponse><AssumeRoleResult><Credentials>"
                    f"<AccessKeyId>{creds[0]}</AccessKeyId><SecretAccessKey>{creds[1]}"
                    f"</SecretAccessKey><SessionToken>{creds[2]}</SessionToken>"
                    f"<Expiration>{exp}</Expiration></Credentials></AssumeRoleResult>"
                    f"</AssumeRoleResponse>").encode()
            status = 200
        self.send_response(status)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


READER_ROLE = "arn:aws:iam::123456789012:role/reader"
OTHER_ROLE = "arn:aws:iam::123456789012:role/other"


@pytest.fixture
def roles(lab, tmp_path):
    """Profiles `reader` and `other`, each assuming its role (source: the lab's static
    keys) at a local STS: `reader` gets TEMP; `other` a session of its own that presents
    the same key id (its secret and token are not TEMP's)."""
    Sts.roles = {READER_ROLE: TEMP,
                 OTHER_ROLE: (TEMP[0], "other/role+Secret=key", "other-role-session-token")}
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Sts)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    env = lab.env("h1")
    (tmp_path / "credentials").write_text(
        f"[base]\naws_access_key_id = {env['AWS_ACCESS_KEY_ID']}\n"
        f"aws_secret_access_key = {env['AWS_SECRET_ACCESS_KEY']}\n")
    (tmp_path / "config").write_text(
        f"[profile reader]\nrole_arn = {READER_ROLE}\nsource_profile = base\n"
        f"[profile other]\nrole_arn = {OTHER_ROLE}\nsource_profile = base\n")
    yield dict(NO_ENV_KEYS, CPL_AWS_CREDENTIALS_FILE=str(tmp_path / "credentials"),
               AWS_CONFIG_FILE=str(tmp_path / "config"), HOME=str(tmp_path),
               AWS_STS_ENDPOINT=f"127.0.0.1:{srv.server_address[1]}", AWS_HTTPS="NO")
    srv.shutdown()
    srv.server_close()


def identities(case, roles):
    """(first process's options, second process's options) for case."""
    akid, secret, token = TEMP
    temp = {"AWS_ACCESS_KEY_ID": akid, "AWS_SECRET_ACCESS_KEY": secret,
            "AWS_SESSION_TOKEN": token}
    if case == "wrong-secret":  # the lab's static key id, another secret
        return {}, {"AWS_SECRET_ACCESS_KEY": "not+the/lab-secret"}
    if case == "bogus-token":
        return temp, dict(temp, AWS_SESSION_TOKEN="a-made-up-session-token")
    return dict(roles, AWS_PROFILE="reader"), dict(roles, AWS_PROFILE="other")


@pytest.mark.parametrize("case", ["wrong-secret", "bogus-token", "other-role"])
def test_cached_bytes_only_for_credentials_that_can_read_them(lab, cogs, pool, sigcheck,
                                                               roles, case):
    """A reads a window of the s2 scene and stays attached; B (the right key id, not the
    right credentials) then asks for the same window under stock GDAL and with vsitune and
    the shared cache: both fail alike (403), and the lab saw vsitune's B ask."""
    sigcheck.allowed.add("bad")  # B's requests are refused by the lab's verifier
    lab.register_credentials(*TEMP, expires_at=int(time.time()) + 7200)
    cog = cogs["s2"]
    path = f"/vsis3/lab/{cog['key']}"
    first, second = identities(case, roles)
    with Worker(lab, extra=shared(pool, **first)) as a:
        assert a.call(READ_OK, path=path, local=cog["path"], win=list(WIN)) is True
        assert segment(pool).exists()
        out = {}
        for vt in (False, True):
            mark = last_seq(lab)
            with Worker(lab, vsitune=vt, extra=shared(pool, **second)) as b:
                res = b.call(TRY_READ, path=path, win=list(WIN))
                out[vt] = ({"result": res, "errors": b.errors},
                           [e for e in since(lab, mark) if e["key"] == cog["key"]])
        # A still reads its window from the segment, for free
        mark = last_seq(lab)
        assert a.call(READ_OK, path=path, local=cog["path"], win=list(WIN)) is True
        assert since(lab, mark) == []
    (stock, stock_log), (vt, vt_log) = out[False], out[True]
    assert stock["result"]["ok"] is False, stock
    assert_same(stock, vt, f"{case}: the second process's read")
    assert stock_log and {e["status"] for e in stock_log} == {403}, stock_log
    # vsitune's B was not served from the segment: the lab saw it ask, and refused it
    assert vt_log, f"{case}: vsitune answered from another process's cache, 0 requests"
    assert {(e["status"], e["error"]) for e in vt_log} == \
        {(e["status"], e["error"]) for e in stock_log}, (stock_log, vt_log)
