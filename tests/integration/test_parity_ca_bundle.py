"""test_parity_ca_bundle.py: which CA file verifies the server, as stock GDAL decides it.

Issue 18, item 7: vsitune took GDAL_CURL_CA_BUNDLE, then CURL_CA_BUNDLE, then
SSL_CERT_FILE for every request. Stock GDAL 3.6's reads take the last of the three that
is set (cpl_http.cpp CPLHTTPGetOptionsFromEnv, each overwriting the last), its listings
and credential fetches the first; from 3.7 every request takes the first (config.h, "CA
bundle"). Debian's rasterio sets GDAL_CURL_CA_BUNDLE to the system bundle on import, so
an endpoint with a private CA in SSL_CERT_FILE read under stock 3.6 and failed under
vsitune.

Differential: the lab's TLS endpoints (a self-signed certificate) with the three options
set to the lab's certificate or to a bundle that does not sign it, in the combinations
that tell the rules apart; the same command under stock GDAL and with the plugin, outputs
compared (parity.assert_same). vsitune reads exactly when stock reads.
"""

import os
import re
import subprocess

import pytest

import lab_client
from parity import assert_same, parse_errors, records, summarise, uploaded
from test_vsitune_helpers import last_seq, s3path

NAMES = ("GDAL_CURL_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")
# Which of the three is the lab's certificate ("lab") or a bundle without it ("other").
COMBOS = [
    {"GDAL_CURL_CA_BUNDLE": "other", "SSL_CERT_FILE": "lab"},   # rasterio + a private CA
    {"GDAL_CURL_CA_BUNDLE": "other", "CURL_CA_BUNDLE": "lab"},
    {"CURL_CA_BUNDLE": "other", "SSL_CERT_FILE": "lab"},
    {"GDAL_CURL_CA_BUNDLE": "lab", "SSL_CERT_FILE": "other"},
    {"CURL_CA_BUNDLE": "lab", "SSL_CERT_FILE": "other"},
    {"GDAL_CURL_CA_BUNDLE": "lab", "CURL_CA_BUNDLE": "other", "SSL_CERT_FILE": "lab"},
    {"GDAL_CURL_CA_BUNDLE": "lab"},
    {"SSL_CERT_FILE": "lab"},
    {"GDAL_CURL_CA_BUNDLE": "", "SSL_CERT_FILE": "lab"},
]


def _id(combo):
    return "+".join(f"{k.split('_')[0] if k != 'CURL_CA_BUNDLE' else 'CURL'}={v or 'empty'}"
                    for k, v in combo.items())


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory):
    """A CA bundle that does not sign the lab's certificate: the system's, else one made
    here."""
    for p in ("/etc/ssl/certs/ca-certificates.crt",):
        if os.path.exists(p):
            return p
    d = tmp_path_factory.mktemp("ca")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(d / "k.pem"), "-out", str(d / "other.pem"), "-days", "1", "-subj",
                    "/CN=other"], check=True, capture_output=True)
    return str(d / "other.pem")


@pytest.fixture(scope="module")
def cases(lab):
    return uploaded(lab)


def _env(lab, endpoint, vsitune, combo, other_ca):
    env = lab_client.gdal_env(lab.env(endpoint), vsitune=vsitune)
    for k in NAMES:
        env.pop(k, None)
    for k, v in combo.items():
        env[k] = {"lab": lab.info["cert"], "other": other_ca}.get(v, v)
    return env


def _both(lab, case, argv, endpoint, combo, other_ca):
    out = []
    for vsitune in (False, True):
        seq = last_seq(lab)
        cp, _ = lab_client.run_tool(argv, _env(lab, endpoint, vsitune, combo, other_ca))
        log = lab.log(since=seq)
        records().add(case, _id(combo), "vsitune" if vsitune else "stock", summarise(log))
        out.append({"rc": cp.returncode, "stdout": cp.stdout,
                    "errors": parse_errors(cp.stderr),
                    "listed": any(e["kind"] == "LIST" and e["status"] == 200 for e in log)})
    return out


# curl's words for a failed TLS handshake are its TLS back-end's: Debian's GDAL links
# libcurl-gnutls ("server verification failed: certificate signer not trusted", and
# no words at all for an empty CA file: "HTTP response code: 0"), the plugin libcurl
# with OpenSSL ("SSL certificate problem: self-signed certificate"). The class, the
# number and the rest of the message are compared.
_TLS_WORDS = re.compile(r"^(CURL error: .*|HTTP response code: 0)$", re.M)


def _tls_gist(r):
    r = dict(r)
    r["errors"] = [[c, n, _TLS_WORDS.sub("<TLS failure>", m) if n == 11 else m]
                   for c, n, m in r["errors"]]
    return r


def _assert_same(stock, vt, what):
    """Reads exactly when stock reads, the same output, the same errors (TLS words
    aside, above). Except where stock's listing got through and its reads did not (a
    read failing on every attempt after the listing found the file): stock then says
    only "not recognized as a supported file format", vsitune names the transport
    failure. That wording is not the CA rule's (any transport failure of the header
    read gives it); recorded in docs/compatibility.md, and rc and output compared."""
    listed = stock.pop("listed")
    vt.pop("listed")
    stock, vt = _tls_gist(stock), _tls_gist(vt)
    if stock["rc"] != 0 and listed:
        stock.pop("errors")
        vt.pop("errors")
    assert_same(stock, vt, what)


@pytest.mark.parametrize("endpoint", ["h2", "h1tls"])
@pytest.mark.parametrize("combo", COMBOS, ids=_id)
def test_cog_read_trusts_as_stock(lab, small_cog, other_ca, combo, endpoint):
    argv = ["gdallocationinfo", "-valonly", s3path(small_cog), "1500", "700"]
    stock, vt = _both(lab, "ca_bundle_cog", argv, endpoint, combo, other_ca)
    _assert_same(stock, vt, f"{_id(combo)} on {endpoint}")


@pytest.mark.parametrize("combo", COMBOS[:5], ids=_id)
@pytest.mark.parametrize("layout", ["tiled_ovr", "striped"])
def test_listing_and_sidecars_trust_as_stock(lab, cases, other_ca, combo, layout):
    # A TIFF that is not a COG: stock GDAL lists its directory and reads its overview
    # sidecar; vsitune lists the stem. Each request verifies the server as stock's.
    c = cases[layout]
    argv = ["gdalinfo", "-checksum", c.path]
    stock, vt = _both(lab, f"ca_bundle_{layout}", argv, "h2", combo, other_ca)
    _assert_same(stock, vt, f"{layout}, {_id(combo)}")


RASTERIO_WINDOWS = r'''
import json, sys
import rasterio  # Debian's sets GDAL_CURL_CA_BUNDLE to the system bundle on import
from rasterio.windows import Window
ok = []
for i in range(16):
    try:
        with rasterio.open(sys.argv[1]) as ds:
            ds.read(1, window=Window((i % 4) * 512, (i // 4) * 512, 512, 512))
        ok.append(True)
    except rasterio.errors.RasterioIOError:
        ok.append(False)
print(json.dumps(ok))
'''


@pytest.mark.parametrize("endpoint", ["h2", "h1tls"])
def test_rasterio_with_private_ca_in_ssl_cert_file(lab, small_cog, other_ca, endpoint):
    # The case: a private CA in SSL_CERT_FILE, rasterio imported. Stock GDAL 3.6
    # reads every window (its reads take SSL_CERT_FILE), 3.10 and 3.13 none (they take
    # GDAL_CURL_CA_BUNDLE, the system's): vsitune reads exactly the windows stock reads.
    path = s3path(small_cog)
    got = []
    for vsitune in (False, True):
        env = _env(lab, endpoint, vsitune, {"SSL_CERT_FILE": "lab"}, other_ca)
        cp, _ = lab_client.run_tool(["/usr/bin/python3", "-c", RASTERIO_WINDOWS, path], env)
        assert cp.returncode == 0, cp.stderr
        got.append(cp.stdout.strip())
    assert got[1] == got[0]
    from osgeo import gdal
    want = "true" if int(gdal.VersionInfo("VERSION_NUM")) < 3070000 else "false"
    assert got[0] == "[" + ", ".join([want] * 16) + "]"
