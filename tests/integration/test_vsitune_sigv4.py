"""test_vsitune_sigv4.py: vsitune's requests as the lab's SigV4 verifier judges them.

Issue 3: every integration request passes the verifier (the autouse `sigcheck`
in every test_vsitune_* file); a wrong secret gives a clear error naming
SignatureDoesNotMatch; a missing key a clear 404; AWS_NO_SIGN_REQUEST=YES reads
the public bucket anonymously; keys with spaces, +, %, #, ? and non-ASCII
characters are encoded and signed right and read byte-exact.
"""

import hashlib

import pytest

import lab_client
from test_vsitune_helpers import (Worker, by_vsitune, kinds, not_by_vsitune, run_local,
                                  s3path, sigcheck)  # noqa: F401 (autouse fixture)


def test_wrong_secret_names_signature_does_not_match(lab, gdal, small_cog, sigcheck):
    sigcheck.allowed = {"bad"}
    cp, _ = gdal.run(["gdalinfo", s3path(small_cog)], vsitune=True,
                     extra={"AWS_SECRET_ACCESS_KEY": "wrong"})
    assert cp.returncode != 0
    assert "SignatureDoesNotMatch" in cp.stderr, cp.stderr
    assert small_cog["key"] in cp.stderr and "lab" in cp.stderr, cp.stderr
    assert "403" in cp.stderr, cp.stderr
    log = lab.log()
    assert log and not_by_vsitune(log) == []
    assert all(e["sig"] == "bad" and e["status"] == 403 for e in log), log
    # no HEAD; a LIST only as stock GDAL's stat makes one (is it a directory?)
    assert "HEAD" not in kinds(log)
    assert all(e["query"].endswith("%2F") for e in log if e["kind"] == "LIST"), log


def test_wrong_secret_in_python_raises(lab, small_cog, sigcheck):
    sigcheck.allowed = {"bad"}
    with Worker(lab, extra={"AWS_SECRET_ACCESS_KEY": "wrong"}) as w:
        got = w.call("try:\n"
                     "    gdal.Open(path)\n"
                     "    result = 'opened'\n"
                     "except RuntimeError as e:\n"
                     "    result = str(e)\n", path=s3path(small_cog))
    assert "SignatureDoesNotMatch" in got, got
    assert all(e["sig"] == "bad" for e in lab.log())


def test_missing_key_is_a_clear_404(lab, gdal):
    key = "scenes/no-such-scene/B04.tif"
    cp, _ = gdal.run(["gdalinfo", f"/vsis3/lab/{key}"], vsitune=True)
    assert cp.returncode != 0
    assert key in cp.stderr, cp.stderr
    assert "404" in cp.stderr or "NoSuchKey" in cp.stderr, cp.stderr
    log = lab.log()
    assert log and not_by_vsitune(log) == []
    # one GET (404), and the listings stock GDAL also makes for a missing
    # name: its directory (empty here, so the 404 is reported) and name/
    assert [(e["kind"], e["status"], e["key"]) for e in log if e["kind"] != "LIST"] == [
        ("GET_RANGE", 404, key)]
    lists = sorted(e["query"] for e in log if e["kind"] == "LIST")
    assert lists == sorted(set(lists)) and len(lists) <= 2, lists


def test_no_sign_request_on_public_bucket(lab, small_cog, sigcheck):
    sigcheck.allowed = {"anonymous"}
    key = "anon/" + small_cog["key"].rsplit("/", 1)[1]
    lab.put_object("public", key, small_cog["path"])
    want = run_local(["gdallocationinfo", "-valonly", small_cog["path"], "1500", "700"]).stdout
    # No credentials at all in the environment: only the opt-out.
    env = lab_client.gdal_env(lab.env("h1"), vsitune=True, extra={"AWS_NO_SIGN_REQUEST": "YES"})
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        env.pop(k)
    cp, _ = lab_client.run_tool(["gdallocationinfo", "-valonly", f"/vsis3/public/{key}",
                                 "1500", "700"], env)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout == want
    log = lab.log()
    assert kinds(log) == ["GET_RANGE", "GET_RANGE"] and not_by_vsitune(log) == []
    assert all(e["sig"] == "anonymous" and e["akid"] is None and e["status"] == 206
               for e in log), log


KEYS = [
    "scenes/dir with space/a+b%25c#d?e=\u00e9.tif",
    "k/plus+sign.tif",
    "k/percent%2Fliteral%.tif",
    "k/hash#tag.tif",
    "k/query?x=1&y=2.tif",
    "k/\u00fcn\u00efc\u00f8d\u00e9 \u65e5\u672c/\u00e9t\u00e9.tif",
    "k/tilde~star*paren(1)=eq;semi,comma!bang'quote$@:.tif",
]

READ_CODE = r'''
import hashlib
whole = read_all(path)
ds = gdal.Open(path)
result = [hashlib.sha256(whole).hexdigest(), len(whole),
          int(ds.GetRasterBand(1).ReadAsArray(1500, 700, 1, 1)[0][0])]
'''


@pytest.mark.parametrize("key", KEYS, ids=range(len(KEYS)))
def test_keys_needing_encoding(lab, small_cog, key):
    lab.put_object("lab", key, small_cog["path"])
    data = open(small_cog["path"], "rb").read()
    want = int(run_local(["gdallocationinfo", "-valonly", small_cog["path"], "1500", "700"]).stdout)
    with Worker(lab, endpoint="h2") as w:
        got = w.call(READ_CODE, path=f"/vsis3/lab/{key}")
    assert got == [hashlib.sha256(data).hexdigest(), len(data), want]
    log = lab.log()
    assert log and not_by_vsitune(log) == []
    assert {e["key"] for e in log} == {key}  # the lab decoded exactly this key
    assert all(e["status"] == 206 and e["sig"] == "ok" for e in by_vsitune(log))


def test_session_token_is_signed(lab, gdal, small_cog, sigcheck):
    akid, secret, token = "ASIAVSITUNETEMP00001", "temp/secret+key=", "tok/en+==with/slash"
    lab.register_credentials(akid, secret, token=token)
    creds = {"AWS_ACCESS_KEY_ID": akid, "AWS_SECRET_ACCESS_KEY": secret}
    cp, _ = gdal.run(["gdalinfo", s3path(small_cog)], vsitune=True,
                     extra={**creds, "AWS_SESSION_TOKEN": token})
    assert cp.returncode == 0, cp.stderr
    ok = lab.log()
    assert [(e["akid"], e["sig"], e["status"]) for e in ok] == [(akid, "ok", 206)]
    sigcheck.allowed = {"ok", "bad"}  # the wrong token below is refused by design
    lab.reset()
    cp, _ = gdal.run(["gdalinfo", s3path(small_cog)], vsitune=True,
                     extra={**creds, "AWS_SESSION_TOKEN": "not-the-token"})
    assert cp.returncode != 0 and "InvalidToken" in cp.stderr, cp.stderr
    assert {e["status"] for e in lab.log()} == {403}
