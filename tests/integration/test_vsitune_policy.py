"""test_vsitune_policy.py: what vsitune asks the server, and what it answers itself.

Issue 3's "open without waste" and S3 semantics, from the lab's log: a region
redirect is retried once and remembered; GDAL's CPL_VSIL_CURL_ALLOWED_EXTENSIONS
is honoured as stock GDAL honours it; the sidecar opt-in brings stock GDAL's
listing back; TLS trust follows GDAL's options.
"""

import lab_client
from test_vsitune_helpers import (Worker, by_vsitune, kinds, not_by_vsitune, run_local, s3path,
                                  sigcheck)  # noqa: F401 (autouse fixture)


def test_wrong_region_is_retried_once_and_remembered(lab, small_cog, sigcheck):
    sigcheck.allowed = {"ok", "bad"}  # the first request is signed for eu-west-1
    with Worker(lab, extra={"AWS_REGION": "eu-west-1"}) as w:
        got = w.call("result = [gdal.Open(p).RasterXSize, gdal.VSIStatL(q) is None]",
                     p=s3path(small_cog), q="/vsis3/lab/elsewhere/none.tif")
    assert got == [2048, True]
    log = lab.log()
    # the 404's directory check (a LIST of the name's stem, which answers
    # "name/?" as stock GDAL's LIST of name/ does, and the next probes of the
    # stem) is signed for the remembered region too
    assert [(e["status"], e["sig"]) for e in log] == [(400, "bad"), (206, "ok"), (404, "ok"),
                                                     (200, "ok")]
    assert log[0]["error"] == "AuthorizationHeaderMalformed"
    assert log[0]["range"] == log[1]["range"] and log[2]["key"] == "elsewhere/none.tif"
    assert log[3]["kind"] == "LIST" and log[3]["query"].endswith("prefix=elsewhere%2Fnone")
    assert not_by_vsitune(log) == []


def test_allowed_extensions_option(lab, small_cog):
    """GDAL's CPL_VSIL_CURL_ALLOWED_EXTENSIONS: any other name neither stats nor
    opens, with no request (as stock GDAL); unset, every name is asked for."""
    lab.put_object("lab", "ext/data.bin", b"x" * 100000)
    code = ("result = [None if st is None else st.size for st in map(gdal.VSIStatL, paths)]"
            " + [gdal.VSIFOpenL(p, 'rb') is None for p in paths]")
    paths = [s3path(small_cog), "/vsis3/lab/ext/data.bin"]
    with Worker(lab, extra={"CPL_VSIL_CURL_ALLOWED_EXTENSIONS": ".bin"}) as w:
        got = w.call(code, paths=paths)
    assert got == [None, 100000, True, False]
    assert [e["key"] for e in lab.log()] == ["ext/data.bin"]
    lab.reset()
    with Worker(lab) as w:  # unset: every name exists if the server says so
        got = w.call(code, paths=paths)
    assert got == [small_cog["size"], 100000, False, False]
    assert sorted(e["key"] for e in lab.log()) == sorted([small_cog["key"], "ext/data.bin"])


def test_sidecars_opt_in_lists_like_stock(lab, gdal, small_cog):
    cp, _ = gdal.run(["gdalinfo", s3path(small_cog)], vsitune=True,
                     extra={"VSITUNE_SIDECARS": "YES"})
    assert cp.returncode == 0, cp.stderr
    log = lab.log()
    assert "LIST" in kinds(log)
    assert [e["kind"] for e in by_vsitune(log)] == ["GET_RANGE"]


def _tls_env(lab, **extra):
    env = lab_client.gdal_env(lab.env("h2"), vsitune=True, extra=extra)
    for k in ("GDAL_CURL_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"):
        if k not in extra:
            env.pop(k, None)
    return env


def test_tls_trust_options(lab, small_cog):
    args = ["gdallocationinfo", "-valonly", s3path(small_cog), "1500", "700"]
    want = run_local(["gdallocationinfo", "-valonly", small_cog["path"], "1500", "700"]).stdout
    # The lab's certificate is self-signed: without its CA the read must fail clearly.
    cp, _ = lab_client.run_tool(args, _tls_env(lab))
    assert cp.returncode != 0
    assert any(w in cp.stderr.lower() for w in ("certificate", "ssl", "tls")), cp.stderr
    assert lab.log() == []  # nothing got through the TLS front
    # CURL_CA_BUNDLE alone is enough (stock GDAL 3.6.2 also needs SSL_CERT_FILE).
    cp, _ = lab_client.run_tool(args, _tls_env(lab, CURL_CA_BUNDLE=lab.info["cert"]))
    assert (cp.returncode, cp.stdout) == (0, want), cp.stderr
    assert kinds(lab.log()) == ["GET_RANGE"] * 2
    lab.reset()
    cp, _ = lab_client.run_tool(args, _tls_env(lab, GDAL_HTTP_UNSAFESSL="YES"))
    assert (cp.returncode, cp.stdout) == (0, want), cp.stderr
    assert kinds(lab.log()) == ["GET_RANGE"] * 2
