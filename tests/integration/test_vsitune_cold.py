"""test_vsitune_cold.py: the round trips of a cold window read (issue 22, the cold
window), counted from the lab's side and from the engine's own timing.

A fresh `gdal_translate -srcwin` of one 512x512 tile of the 212 MB s2 fixture over the
S3-like front (HTTPS, ALPN http/1.1 only) and the h2 front: the lab accepts one
connection (one TCP and one TLS handshake: no second connection, no HEAD, no LIST), the
header GET and the tile's GET go over it, and the output equals stock GDAL's (run beside
it, plugin not loaded) and the local file's. With CPL_DEBUG=VSITUNE each request's debug
line carries libcurl's phase times (CURLINFO_*_TIME_T: connect, TLS, first byte, total)
and whether it opened a connection: the first did, the second reused it.
"""

import re

import pytest

import lab_client
from test_vsitune_helpers import by_vsitune, last_seq, run_local, s3path, sigcheck  # noqa: F401

SRCWIN = ["4096", "4096", "512", "512"]
PHASES = re.compile(r"VSITUNE: GET \S+ bytes=(\d+)-(\d+) -> 206, \d+ bytes, HTTP/(\d), "
                    r"1 attempt\(s\), [\d.]+ ms \((new|reused) connection; connect [\d.]+, "
                    r"TLS [\d.]+, first byte [\d.]+, total [\d.]+ ms\)")


@pytest.mark.parametrize("endpoint", ["h1tls", "h2"])
def test_cold_window_one_connection_two_gets(lab, gdal, cogs, tmp_path, endpoint):
    cog = cogs["s2"]
    local_out, stock_out, vt_out = (tmp_path / f"{n}.tif" for n in ("local", "stock", "vt"))
    run_local(["gdal_translate", "-q", "-srcwin", *SRCWIN, cog["path"], str(local_out)])
    lab.reset()
    stock, _ = gdal.run(["gdal_translate", "-q", "-srcwin", *SRCWIN, s3path(cog),
                         str(stock_out)], endpoint=endpoint)
    assert stock.returncode == 0, stock.stderr
    lab.reset()
    vt, _ = gdal.run(["gdal_translate", "-q", "-srcwin", *SRCWIN, s3path(cog), str(vt_out)],
                     endpoint=endpoint, vsitune=True, extra={"CPL_DEBUG": "VSITUNE"})
    assert vt.returncode == 0, vt.stderr[-2000:]
    log = lab.log()
    assert [e["kind"] for e in log] == ["GET_RANGE", "GET_RANGE"], \
        [(e["kind"], e["range"]) for e in log]
    assert len(by_vsitune(log)) == 2
    assert lab.connections(endpoint)["accepted"] == 1
    assert vt_out.read_bytes() == stock_out.read_bytes() == local_out.read_bytes()
    lines = PHASES.findall(vt.stderr)
    assert [(first, conn) for first, _, _, conn in lines] == [("0", "new"), (
        lines[1][0] if len(lines) > 1 else "?", "reused")], vt.stderr[-3000:]
    assert lines[0][2] == ("2" if endpoint == "h2" else "1")
