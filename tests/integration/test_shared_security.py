"""test_shared_security.py: who may read the shared cache, and who owns its name (issue 18,
items 1 and 5).

Item 1: bytes one process cached are served to another only when that other's own request
would have been answered: a second process with the right access key id and a wrong
secret, with a made-up session token, or reading as another role whose session presents
the same key id, gets stock GDAL's 403 (the same CPLErrors, measured beside it in the
same test) and the lab sees its request, while the first process still holds the window
in the segment.

Item 5: a name planted under the segment's (a file, a copy of a real segment, a symbolic
link, a FIFO, owned by another uid) is never followed, opened for I/O, used or removed;
the process reads through its own cache, does not hang, and warns once (CE_Warning,
without CPL_DEBUG), naming the file and the options that avoid it.

Real processes against the lab (tests/lab), each with a pool of its own; what was sent
is read from the lab's log.
"""

import json
import os
import shutil
import stat
import subprocess
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import lab_client
from parity import assert_same
from test_shared_cache import READER, W1, W2, pool, read, segment, shared, since  # noqa: F401
from test_vsitune_helpers import PY, Worker, last_seq, sigcheck  # noqa: F401 (autouse)

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


# -- item 5: a name planted under the segment's -----------------------------------------
SQUATTER = 65534


def plant(kind, name, tmp_path, lab, small_cog, owner=SQUATTER):
    """Put `kind` at name, owned by `owner`; returns what must stay as it is."""
    if kind == "file":
        name.write_bytes(b"\0" * (1 << 20))
        os.chmod(name, 0o666)
    elif kind == "segment":  # a real segment's bytes, readable and writable by all
        other = f"{name.name.split('-', 2)[2]}x"
        with Worker(lab, extra=shared(other)) as w:
            read(w, small_cog, W1)
            shutil.copyfile(segment(other), name)
        os.chmod(name, 0o666)
    elif kind == "symlink":  # to a file of the victim's
        target = tmp_path / "victims-file"
        target.write_bytes(b"the victim's own bytes\n")
        os.chmod(target, 0o600)
        os.symlink(target, name)
    elif kind == "fifo":
        os.mkfifo(name, 0o666)
    os.lchown(name, owner, owner)
    return snapshot(name)


def snapshot(name):
    st = os.lstat(name)
    out = {"ino": st.st_ino, "mode": st.st_mode, "uid": st.st_uid, "nlink": st.st_nlink}
    if stat.S_ISREG(st.st_mode):
        out["bytes"] = name.read_bytes()
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(name)
        out["target"] = (target, open(target, "rb").read(), os.stat(target).st_size)
    return out


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to plant a file as another uid")
@pytest.mark.parametrize("kind", ["file", "segment", "symlink", "fifo"])
def test_planted_segment_name_is_left_alone_and_warned(lab, small_cog, pool, tmp_path, kind):
    """Another uid planted `kind` under this user's segment name: the process reads right
    through its own cache (no segment, no hang: every call is bounded), never touches what
    was planted, and says so once, as a CE_Warning, with CPL_DEBUG off."""
    name = segment(pool)
    before = plant(kind, name, tmp_path, lab, small_cog)
    try:
        warnings = []
        with Worker(lab, extra=shared(pool, CPL_DEBUG="OFF")) as v:
            for win in (W1, W2, W1):
                read(v, small_cog, win)
                warnings += [e for e in v.errors if e[0] == 2]  # CE_Warning
            stats = v.call("result = json.loads(gdal.GetDriverByName('VSITUNE')"
                           ".GetMetadataItem('STATS'))")
        assert "shared" not in stats, stats["shared"]
        assert len(warnings) == 1, warnings
        msg = warnings[0][2]
        assert str(name) in msg and "VSITUNE_SHARED_CACHE" in msg, msg
        assert f"uid {SQUATTER}" in msg and "VSITUNE_SHM_DIR" in msg, msg
        assert snapshot(name) == before
    finally:
        os.unlink(name)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run processes as two other uids")
@pytest.mark.parametrize("kind", ["file", "fifo"])
def test_planted_name_unprivileged_victim_sees_gdals_warning(lab, small_cog, pool, tmp_path, kind):
    """The same as an unprivileged user (uid 65534, whose segment uid 65533 squats: in sticky
    /dev/shm neither can remove the other's file), through GDAL's own error handler: one
    "Warning 1:" line on stderr, the windows read right, no segment used."""
    victim = SQUATTER
    name = segment(pool, victim)
    before = plant(kind, name, tmp_path, lab, small_cog, owner=victim - 1)
    if kind == "file":
        os.chmod(name, 0o600)  # the victim cannot even open it
        before = snapshot(name)
    try:
        env = lab_client.gdal_env(lab.env("h1"), vsitune=True, extra=shared(pool))
        env["HOME"] = "/tmp"
        args = ["setpriv", f"--reuid={victim}", f"--regid={victim}", "--clear-groups",
                PY, str(READER), "--key", small_cog["key"], "--local", small_cog["path"]]
        args += [",".join(map(str, w)) for w in (W1, W2, W1)]
        cp = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
        assert cp.returncode == 0, cp.stderr[-2000:]
        res = json.loads(cp.stdout.strip().splitlines()[-1])
        assert res["nerrors"] == 0, res["errors"]
        assert "shared" not in res["stats"]
        warned = [ln for ln in cp.stderr.splitlines() if "VSITUNE_SHARED_CACHE" in ln]
        assert len(warned) == 1 and warned[0].startswith("Warning 1: "), cp.stderr[-2000:]
        assert str(name) in warned[0] and f"uid {victim - 1}" in warned[0], warned
        assert snapshot(name) == before
    finally:
        os.unlink(name)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to plant a file as another uid")
def test_squatter_cannot_take_over_a_segment_in_use(lab, small_cog, pool):
    """While this user's segment exists, another uid cannot put anything under its name
    (sticky /dev/shm: no rename or unlink of another's file): as that uid, the attempts
    fail, and a second process of the user still shares the first's window for free."""
    with Worker(lab, extra=shared(pool)) as a:
        read(a, small_cog, W1)
        name = segment(pool)
        assert os.stat("/dev/shm").st_mode & stat.S_ISVTX
        evil = f"/dev/shm/vt-evil-{pool}"
        code = ("import os, sys\n"
                f"open({evil!r}, 'wb').close()\n"
                "bad = []\n"
                f"for f in (lambda: os.rename({evil!r}, {str(name)!r}),\n"
                f"          lambda: os.unlink({str(name)!r})):\n"
                "    try:\n        f(); bad.append('done')\n"
                "    except PermissionError:\n        pass\n"
                "sys.exit(1 if bad else 0)\n")
        try:
            cp = subprocess.run(["setpriv", f"--reuid={SQUATTER}", f"--regid={SQUATTER}",
                                 "--clear-groups", "/usr/bin/python3", "-c", code],
                                capture_output=True, text=True, timeout=60)
        finally:
            if os.path.exists(evil):
                os.unlink(evil)
        assert cp.returncode == 0, cp.stderr
        assert os.stat(name).st_uid == os.geteuid()
        with Worker(lab, extra=shared(pool)) as b:
            mark = last_seq(lab)
            read(b, small_cog, W1)
            assert since(lab, mark) == []
