"""test_parity_netfail.py: failures to reach the server, stock GDAL beside vsitune (issue 18,
item 11).

A name that does not resolve, HTTPS spoken to a plain-HTTP port, and a refused connection
cannot heal within a retry's backoff, and stock GDAL retries none of them (cpl_http.cpp
retries on statuses and on curl's words for a timeout or a reset only). For each, gdalinfo
runs once under stock GDAL and once with the plugin: the error lines must match (class,
CPLE number, stock's message inside the plugin's, which adds the object and the cause), and
the plugin must make no retry: counted in its engine's stats (VSITUNE_STATS_FILE; a DNS
failure or a refused connection never reaches a server) and, for the TLS mismatch, on the
wire (connections the lab's plain-HTTP endpoint accepted, against stock's).
"""

import json
import re
import socket

import pytest

from parity import gdal_at_least, gist_in, tool

TLS_WORDS = re.compile(r"^CURL error: ")


def _closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    return port


def _cases(lab):
    h1 = lab.env("h1")
    return {
        "unresolvable": {**h1, "AWS_S3_ENDPOINT": "nosuchhost.invalid", "AWS_HTTPS": "NO"},
        "https-to-http": {**h1, "AWS_HTTPS": "YES"},
        "refused": {**h1, "AWS_S3_ENDPOINT": f"127.0.0.1:{_closed_port()}", "AWS_HTTPS": "NO"},
    }


@pytest.mark.parametrize("case", ["unresolvable", "https-to-http", "refused"])
def test_failure_that_cannot_heal_is_not_retried(lab, tmp_path, case):
    extra = _cases(lab)[case]
    path = "/vsis3/lab/netfail/scene.tif"
    stats = tmp_path / "stats.json"
    sides = {}
    for vsitune in (False, True):
        before = lab.connections("h1")["accepted"]
        more = {"VSITUNE_STATS_FILE": str(stats)} if vsitune else {}
        r = tool(lab, ["gdalinfo", path], vsitune, extra={**extra, **more}, timeout=120)
        r["accepted"] = lab.connections("h1")["accepted"] - before
        sides["vsitune" if vsitune else "stock"] = r
    stock, vt = sides["stock"], sides["vsitune"]
    assert stock["rc"] == vt["rc"] == 1, sides
    # GDAL's words, then the plugin's cause (docs/credentials.md).
    assert len(stock["errors"]) == len(vt["errors"]), sides
    for (c1, n1, m1), (c2, n2, m2) in zip(stock["errors"], vt["errors"]):
        assert (c1, n1) == (c2, n2), sides
        if case == "https-to-http" and m1.startswith("CURL error: "):
            # curl's words for a TLS failure are its TLS library's (stock GDAL's
            # libcurl-gnutls, the plugin's libcurl-openssl: docs/architecture.md)
            assert TLS_WORDS.match(m2), sides
        else:
            assert gist_in(m1, m2), sides
    # No retry: the engine's own count, and what the server saw.
    engine = json.loads(stats.read_text())["engine"]
    assert engine["retries"] == 0, engine
    if case == "https-to-http":
        # One connection per request the engine made (none resent), and no more than
        # stock's, but for the four stats GDAL 3.13 makes after a failed open that
        # stock answers from its memory of the failure (docs/reliability.md).
        assert 1 <= vt["accepted"] == engine["requests"], (engine, sides)
        extra_313 = 4 if gdal_at_least(3, 13) else 0
        assert vt["accepted"] <= stock["accepted"] + extra_313, sides
    (first,) = [m for _, _, m in vt["errors"] if m.startswith("CURL error: ")][:1]
    assert "(vsitune: s3://lab/netfail/scene.tif: network error, not retried: " in first, first

