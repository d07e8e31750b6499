"""test_gdal_autotest.py: GDAL 3.6's own /vsis3/ autotest (gcore/vsis3.py, in
../shared/testdata/gdal-autotest-3.6, GDAL's MIT licence beside it), run twice in the same
CI run: with stock GDAL and with the plugin loaded (GDAL_DRIVER_PATH). The rule (issue 9):
every test that passes on stock GDAL passes with the plugin, except tests that pin an exact
request sequence the plugin removes on purpose (PINNED below, one line each on why; the
user-visible part of each is shown right by a standalone test, named beside it).

What served each run is checked once per run: the plugin's counters written at exit
(VSITUNE_STATS_FILE) must be absent on the stock side and, on the plugin side, name /vsis3/
and count at least one request (parity.tool_served_failures).

How it runs: the suite is copied to a temporary directory per side (it writes under
gcore/tmp/), and each side runs `python3 -m pytest gcore/vsis3.py` in its own network
namespace when the kernel lets us (`unshare -n`, loopback brought up): the suite's fake S3
server binds 127.0.0.1:8080 (its expected signatures are computed for ports 8080-8082), so
two runs, or another engineer's run, never collide, and nothing leaves the machine. The
environment is scrubbed of AWS_/GDAL_/CPL_/VSI_/CURL_ settings and HOME points at an empty
directory. Outcomes come from each run's JUnit XML, per test function (a parametrized
function passes when all its instances pass). The per-test comparison is written to
$VT_BUILD_DIR/parity/gdal_autotest.json.

GDAL versions: the suite is 3.6 material, but its harness runs unchanged on GDAL 3.10 and
3.13 (measured with stock GDAL in Debian roots: 47 of 54 tests pass on 3.10.3, 28 of 54 on
3.13.3; the rest pin 3.6 behaviour GDAL has changed since, or need the internet). The rule
compares stock and plugin on the same GDAL, and a test stock GDAL does not pass is skipped, so
it runs on every GDAL. PINNED and KNOWN were established on 3.6: there a KNOWN test that starts
passing fails the run (strict); on other releases the marks are not strict.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import lab_client
from parity import assert_served, tool_served_failures, xfail

PY = "/usr/bin/python3"
SUITE_NAME = "gdal-autotest-3.6"


def suite_dir():
    """The shipped suite: $VT_TESTDATA_DIR, else ../shared/testdata beside the checkout
    (or beside the worktree directory for /work/wt/<name> checkouts)."""
    cands = []
    if os.environ.get("VT_TESTDATA_DIR"):
        cands.append(Path(os.environ["VT_TESTDATA_DIR"]) / SUITE_NAME)
    repo = lab_client.REPO
    cands += [repo.parent / "shared" / "testdata" / SUITE_NAME,
              repo.parent.parent / "shared" / "testdata" / SUITE_NAME]
    for c in cands:
        if (c / "autotest" / "gcore" / "vsis3.py").is_file():
            return c
    return None


SUITE = suite_dir()


def autotest_names(suite="vsis3"):
    """Test functions of gcore/<suite>.py, in file order (read, not imported)."""
    if SUITE is None or not (SUITE / "autotest" / "gcore" / f"{suite}.py").is_file():
        return []
    src = (SUITE / "autotest" / "gcore" / f"{suite}.py").read_text()
    return re.findall(r"^def (test_\w+)\(", src, flags=re.M)


# -- the allow-list: request sequences the plugin changes on purpose -----------------
# name: (why, the standalone test that shows what the user gets is right)
PINNED = {
    "test_vsis3_open_after_config_option_change": (
        "pins GDAL's LIST of the bucket before the GET on open (403 LIST, 403 GET; then an open "
        "answered by a LIST alone); the plugin opens with one GET and lists nothing",
        "test_parity_autotest.py::test_open_after_credentials_change"),
    "test_vsis3_readdir": (
        "its first open must be answered by a LIST of the directory (no GET of the object); the "
        "plugin GETs the object; everything after (ReadDir, stat from the listing, redirects on "
        "LIST) is GDAL's own listing code behind the router",
        "test_parity_autotest.py::test_readdir_after_open; test_parity_vsi.py::test_listing"),
    "test_vsis3_no_useless_requests": (
        "pins one LIST answering two failed opens and a failed stat in one directory; the plugin "
        "asks each name with one GET instead of listing the directory",
        "test_parity_autotest.py::test_missing_names_in_one_directory"),
    "test_vsis3_2": (
        "also pins a 16 KB first range (its fake server answers 403 to any other Range); the "
        "plugin's first GET is 64 KB (VSITUNE_HEADER_SIZE), later ones what the prefix's files "
        "were learned to need (VSITUNE_HEADER_LEARN). Re-run below with "
        "VSITUNE_HEADER_SIZE=16384 and VSITUNE_HEADER_LEARN=NO, where it must pass",
        "this file: test_pinned_with_stock_header_size[test_vsis3_2]"),
}
# Pinned tests that an option of the plugin turns back into stock GDAL's sequence: re-run
# with it, they must pass (or be a known parity bug).
# A fixed 16 KB first GET, as stock's: the size not learned per prefix, not grown (near.h).
STOCK_HEAD = {"VSITUNE_HEADER_SIZE": "16384", "VSITUNE_HEADER_LEARN": "NO",
              "VSITUNE_FIRST_READ_MAX": "0"}
KNOBS = {"test_vsis3_2": STOCK_HEAD}

# -- parity bugs the plugin has today (strict xfail: a fix turns into XPASS) ----------
_TWICE = ("pinned: GDAL fetches {what} twice before the first GET (an already expired answer, "
          "refreshed again in GetCurlHeaders); vsitune once")
KNOWN = {
    "test_vsis3_read_credentials_ec2_imdsv2": (
        "pinned: gdal.GetSignedURL is GDAL's own handler's, whose credentials cache vsitune's "
        "IMDS lookup did not fill, so it asks IMDS again after the test removed its fake "
        "(with a reachable IMDS the signed URL is right)"),
    "test_vsis3_read_credentials_ec2_expiration": _TWICE.format(what="the instance credentials"),
    "test_vsis3_read_credentials_assumed_role": _TWICE.format(what="STS AssumeRole"),
}


def _gdal_version():
    from osgeo import gdal
    return int(gdal.VersionInfo())


def _env(home, vsitune, extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(lab_client._SCRUB_PREFIXES)}
    env["HOME"] = str(home)
    env["GDAL_TEST_HTTP_PORT"] = "8080"
    env.pop("PYTHONPATH", None)
    if vsitune:
        env["GDAL_DRIVER_PATH"] = str(lab_client.plugin_dir())
    env.update(extra or {})
    return env


# Bring the loopback interface up in a fresh network namespace, then become pytest.
_NETNS_BOOT = r'''
import fcntl, os, socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, struct.pack("16sH", b"lo", 0))[:18])[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", flags | 1))
os.execv(sys.argv[1], sys.argv[1:])
'''


def _netns_ok():
    unshare = shutil.which("unshare")
    if not unshare:
        return None
    cp = subprocess.run([unshare, "-n", PY, "-c", _NETNS_BOOT, PY, "-c", "pass"],
                        capture_output=True, timeout=30)
    return unshare if cp.returncode == 0 else None


def _start(side, tmp, vsitune, select=None, extra=None, suite="vsis3"):
    """Start one run of gcore/<suite>.py; returns (Popen, junit path, log path)."""
    work = tmp / side
    shutil.copytree(SUITE, work)
    home = tmp / f"{side}-home"
    home.mkdir()
    junit = tmp / f"{side}.xml"
    log = open(tmp / f"{side}.log", "wb")
    args = [PY, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"gcore/{suite}.py",
            f"--junitxml={junit}", "-o", "junit_logging=system-err"]
    if select:
        args += ["-k", " or ".join(select)]
    unshare = _netns_ok()
    if unshare:
        args = [unshare, "-n", PY, "-c", _NETNS_BOOT] + args
    env = _env(home, vsitune, extra)
    # what served the run: the plugin's counters at exit (parity.tool_served_failures)
    env["VSITUNE_STATS_FILE"] = str(tmp / f"{side}.exit.json")
    p = subprocess.Popen(args, cwd=work / "autotest", env=env, stdout=log,
                         stderr=subprocess.STDOUT)
    log.close()
    return p, junit, tmp / f"{side}.log", bool(unshare), env


def _outcomes(junit):
    """{function name: (outcome, details)}: outcome passed | failed | skipped."""
    per = {}
    for tc in ET.parse(junit).iter("testcase"):
        name = tc.get("name").split("[")[0]
        bad = [c for c in tc if c.tag in ("failure", "error")]
        skipped = [c for c in tc if c.tag == "skipped"]
        err = "".join(c.text or "" for c in tc if c.tag == "system-err")
        if bad:
            o, d = "failed", (f"{tc.get('name')}: {bad[0].get('message', '')[:600]}\n"
                              f"{_complaints(err)}")
        elif skipped:
            o, d = "skipped", f"{tc.get('name')}: {skipped[0].get('message', '')[:300]}"
        else:
            o, d = "passed", ""
        prev = per.get(name)
        rank = {"passed": 0, "skipped": 1, "failed": 2}
        if prev is None or rank[o] > rank[prev[0]]:
            per[name] = (o, d)
    return per


def _complaints(err):
    """What the fake server and the plugin said (unexpected requests, bad headers)."""
    keep = [ln for ln in err.splitlines()
            if re.search(r"Unexpected|Bad |Did not|ERROR|VSITUNE", ln)]
    return "\n".join(dict.fromkeys(keep))[:2500]


def _run(sides, tmp, select=None, extra=None, timeout=900, suite="vsis3"):
    """Run the suite once per side (in parallel); sides named vsitune* load the plugin.
    Returns {side: {function: (outcome, details)}, side + ":isolated": bool}."""
    procs = {s: _start(s, tmp, s.split("@")[0].startswith("vsitune"), select, extra, suite)
             for s in sides}
    out = {}
    for s, (p, junit, log, isolated, env) in procs.items():
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise lab_client.LabError(f"GDAL autotest ({s}) did not finish in {timeout} s: {log}")
        if not junit.exists():
            raise lab_client.LabError(f"GDAL autotest ({s}) wrote no results:\n"
                                      f"{log.read_text(errors='replace')[-3000:]}")
        # The plugin must have served requests in the suites of the prefixes it takes over
        # by default whose fake servers it reaches (/vsis3/, /vsigs/, /vsiaz/); /vsicurl/'s
        # suite's fake servers answer the plugin and GDAL alike.
        assert_served(tool_served_failures(None, s.split("@")[0].startswith("vsitune"), env,
                                           None, env["VSITUNE_STATS_FILE"],
                                           need_request=suite in ("vsis3", "vsigs", "vsiaz")))
        out[s] = _outcomes(junit)
        out[s + ":isolated"] = isolated
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    if SUITE is None:
        pytest.skip(f"{SUITE_NAME} not found (../shared/testdata or $VT_TESTDATA_DIR)")
    if not lab_client.plugin_built():
        pytest.skip(f"gdal_vsitune.so not built in {lab_client.plugin_dir()}")
    tmp = tmp_path_factory.mktemp("gdal-autotest")
    out = _run(["stock", "vsitune"], tmp)
    knobs = {}
    for name, env in KNOBS.items():
        knobs[name] = _run([f"vsitune-{name}"], tmp, select=[name], extra=env)[f"vsitune-{name}"]
    out["knobs"] = knobs
    report = {n: {"stock": out["stock"].get(n, ("absent", ""))[0],
                  "vsitune": out["vsitune"].get(n, ("absent", ""))[0],
                  "class": "pinned" if n in PINNED else "known-bug" if n in KNOWN else "",
                  "why": (PINNED.get(n) or (KNOWN.get(n), None))[0] or "",
                  "vsitune_details": out["vsitune"].get(n, ("", ""))[1][:1500]}
              for n in autotest_names()}
    for name, res in knobs.items():
        report[name]["vsitune_with_knob"] = res.get(name, ("absent", ""))[0]
    path = lab_client.build_dir() / "parity" / "gdal_autotest.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"gdal": _gdal_version(), "isolated_network": out["stock:isolated"],
                                "tests": report}, indent=1) + "\n")
    for n, r in report.items():
        print(f"gdal-autotest {n}: stock {r['stock']}, vsitune {r['vsitune']} {r['class']}")
    return out


def _is_36():
    try:
        return _gdal_version() // 10000 == 306
    except Exception:  # no GDAL bindings: the fixture skips anyway
        return True


def _known(n):
    """KNOWN's mark: strict on GDAL 3.6, where the list was established."""
    return xfail(KNOWN[n]) if _is_36() else pytest.mark.xfail(strict=False, reason=KNOWN[n])


def _param(n):
    marks = [_known(n)] if n in KNOWN and n not in PINNED else []
    return pytest.param(n, marks=marks, id=n)


@pytest.mark.parametrize("name", [_param(n) for n in autotest_names()] or
                         [pytest.param("none", marks=pytest.mark.skip(reason="suite not found"))])
def test_autotest(runs, name):
    stock, stock_details = runs["stock"].get(name, ("absent", ""))
    vt, vt_details = runs["vsitune"].get(name, ("absent", ""))
    if stock != "passed":
        pytest.skip(f"stock GDAL does not pass it here ({stock}): {stock_details[:300]}")
    if name in PINNED and vt != "passed":
        why, standalone = PINNED[name]
        pytest.xfail(f"pinned request sequence: {why} (user-visible part: {standalone})")
    assert vt == "passed", f"passes on stock GDAL, {vt} with the plugin:\n{vt_details}"


@pytest.mark.parametrize("name", [pytest.param(n, marks=[_known(n)] if n in KNOWN else [])
                                  for n in KNOBS])
def test_pinned_with_stock_header_size(runs, name):
    """A pinned test re-run with the plugin set to stock GDAL's wire choice (KNOBS): what
    is left must pass."""
    if runs["stock"].get(name, ("absent",))[0] != "passed":
        pytest.skip("stock GDAL does not pass it here")
    o, details = runs["knobs"][name].get(name, ("absent", ""))
    assert o == "passed", f"with {KNOBS[name]}: {o}\n{details}"


def test_every_test_classified_once():
    """An entry in PINNED or KNOWN names a real test; KNOBS only pinned ones."""
    names = set(autotest_names())
    if not names:
        pytest.skip("suite not found")
    assert set(PINNED) <= names and set(KNOWN) <= names and set(KNOBS) <= set(PINNED)
    reach = {f"{s}::{n}" for s in REACH_SUITES for n in autotest_names(s)}
    assert set(PINNED_REACH) <= reach and set(KNOWN_REACH) <= reach
    assert set(KNOBS_REACH) <= set(PINNED_REACH)


# -- GDAL 3.6's /vsicurl/, /vsigs/, /vsiaz/, /vsiadls/ autotests (issue 20) -----------
# The same rule, for the handlers issue 20 takes over: every test stock GDAL passes passes
# with the plugin loaded as shipped (/vsigs/, /vsiaz/ and /vsicurl/ taken over by default),
# but named request-sequence pins (PINNED_REACH). Stock 3.6.2 on
# Debian 12, no network: vsicurl 13 passed + 7 skipped (internet tests), vsigs 18 + 2
# skipped, vsiaz 22 passed + 1 failed (test_vsiaz_fake_write: the suite is 3.6.0's, the
# test changed in 3.6.1). /vsiadls/ is not taken over: its suite (stock 10 of 10 on 3.6.2,
# 9 on 3.10.3, 8 on 3.13.3) shows that loading the plugin, which takes /vsiaz/ over, leaves
# GDAL's ADLS handler as it was. Per-test outcomes:
# $VT_BUILD_DIR/parity/gdal_autotest_reach.json.
REACH_SUITES = ("vsicurl", "vsigs", "vsiaz", "vsiadls")
# "suite::test": (why, the standalone test that shows the user-visible part)
PINNED_REACH = {
    # /vsicurl/ is taken over by default (VSITUNE_TAKEOVER_CURL)
    "vsicurl::test_vsicurl_test_parse_html_filelist_apache": (
        "after GDAL listed /mydir/, VSIStatL of a name its HTML index does not hold is "
        "answered absent from that listing; stock 3.6 sends a HEAD the test pins",
        "test_reach_takeover.py::test_stat_and_readdir[curl]"),
    "vsigs::test_vsigs_readdir": (
        "its first open must be answered by a LIST of the directory (no GET of the object); "
        "the plugin GETs the object; ReadDir and the stats from the listing after it are "
        "GDAL's own listing code behind the router (as test_vsis3_readdir)",
        "test_reach_takeover.py::test_stat_and_readdir"),
}
# Parity bugs of the taken-over prefixes (strict xfail on 3.6: a fix turns into XPASS).
KNOWN_REACH = {
    # (issue 20: vsigs::test_vsigs_2, a server answering 1 byte of any range, passes since
    # a 206 whose body fills its shorter Content-Range is read on from: test_object_read.c)
}
# /vsiaz/ is taken over by default: its pins, analysed with the takeover on (issue 20).
_AZ_RANGE = ("its fake server checks a Shared Key signature, which covers the Range header: "
             "GDAL's first GET asks 16 KB, the plugin's 64 KB (VSITUNE_HEADER_SIZE)")
PINNED_REACH.update({
    "vsiaz::test_vsiaz_fake_basic": (
        _AZ_RANGE + "; then a stat answered by a HEAD only (the plugin stats with its GET of "
        "the header). With both answered for the plugin's requests, the rest (/vsiaz_streaming/, "
        "AZURE_NO_SIGN_REQUEST) passes (measured)",
        "test_reach_takeover.py (az: gdalinfo, pixel, stat); test_backend_az.py (signatures)"),
    "vsiaz::test_vsiaz_fake_readdir": (
        "its first open must be answered by a LIST of the directory (no GET of the object); the "
        "plugin GETs the object. Without that open, the rest (ReadDir, stat from the listing, "
        "errors, containers) passes (measured)",
        "test_reach_takeover.py (az: stat and ReadDir)"),
    "vsiaz::test_vsiaz_read_credentials_simulated_azure_vm_expiration": (
        "pins GDAL's two fetches of an already expired managed identity token before its one "
        "GET; the plugin asks once per request it signs (the GET reads with the token)",
        "test_backend_az.py::test_managed_identity_not_asked_for_the_endpoint"),
    "vsiaz::test_vsiaz_read_credentials_config_file_connection_string": (
        _AZ_RANGE + ". Re-run below with VSITUNE_HEADER_SIZE=16384, where it must pass",
        "this file: test_reach_pinned_with_stock_header_size"),
    "vsiaz::test_vsiaz_read_credentials_config_file_account_and_key": (
        _AZ_RANGE + ". Re-run below with VSITUNE_HEADER_SIZE=16384, where it must pass",
        "this file: test_reach_pinned_with_stock_header_size"),
})
# Pinned reach tests an option turns back into stock's sequence: re-run with it, must pass.
KNOBS_REACH = {
    "vsiaz::test_vsiaz_read_credentials_config_file_connection_string":
        STOCK_HEAD,
    "vsiaz::test_vsiaz_read_credentials_config_file_account_and_key":
        STOCK_HEAD,
}


@pytest.fixture(scope="module")
def reach_runs(tmp_path_factory):
    if SUITE is None:
        pytest.skip(f"{SUITE_NAME} not found (../shared/testdata or $VT_TESTDATA_DIR)")
    sides = ["stock"] + (["vsitune"] if lab_client.plugin_built() else [])
    tmp = tmp_path_factory.mktemp("gdal-autotest-reach")
    out = {}
    for suite in REACH_SUITES:
        if not autotest_names(suite):
            continue
        res = _run([f"{side}@{suite}" for side in sides], tmp, suite=suite)
        out[suite] = {side: res.get(f"{side}@{suite}", {}) for side in sides}
    knobs = {}
    for key, env in (KNOBS_REACH.items() if "vsitune" in sides else ()):
        suite, name = key.split("::")
        side = f"vsitune-{name}@{suite}"
        knobs[key] = _run([side], tmp, select=[name], extra=env, suite=suite)[side]
    out["knobs"] = knobs
    report = {f"{suite}::{n}": {side: out[suite][side].get(n, ("absent", ""))[0] for side in sides}
              for suite in REACH_SUITES if suite in out for n in autotest_names(suite)}
    path = lab_client.build_dir() / "parity" / "gdal_autotest_reach.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"gdal": _gdal_version(), "tests": report}, indent=1) + "\n")
    for n, r in report.items():
        print(f"gdal-autotest {n}: " + ", ".join(f"{k} {v}" for k, v in r.items()))
    return out


def _reach_mark(key):
    why = KNOWN_REACH[key]
    return xfail(why) if _is_36() else pytest.mark.xfail(strict=False, reason=why)


def _reach_params():
    out = [pytest.param(suite, n, id=f"{suite}::{n}",
                        marks=[_reach_mark(f"{suite}::{n}")]
                        if f"{suite}::{n}" in KNOWN_REACH else [])
           for suite in REACH_SUITES for n in autotest_names(suite)]
    return out or [pytest.param("none", "none", marks=pytest.mark.skip(reason="suite not found"))]


@pytest.mark.parametrize("suite,name", _reach_params())
def test_autotest_reach(reach_runs, suite, name):
    """GDAL's own test of /vsicurl/, /vsigs/, /vsiaz/ or /vsiadls/: if stock GDAL passes
    it, so does GDAL with the plugin loaded."""
    stock, stock_details = reach_runs[suite]["stock"].get(name, ("absent", ""))
    if stock != "passed":
        pytest.skip(f"stock GDAL does not pass it here ({stock}): {stock_details[:300]}")
    if "vsitune" not in reach_runs[suite]:
        pytest.skip(f"gdal_vsitune.so not built in {lab_client.plugin_dir()}: stock passes")
    vt, vt_details = reach_runs[suite]["vsitune"].get(name, ("absent", ""))
    key = f"{suite}::{name}"
    if key in PINNED_REACH and vt != "passed":
        why, standalone = PINNED_REACH[key]
        pytest.xfail(f"pinned request sequence: {why} (user-visible part: {standalone})")
    assert vt == "passed", f"passes on stock GDAL, {vt} with the plugin:\n{vt_details}"


@pytest.mark.parametrize("key", list(KNOBS_REACH))
def test_reach_pinned_with_stock_header_size(reach_runs, key):
    """A pinned reach test re-run with the plugin set to stock GDAL's wire choice
    (KNOBS_REACH): what is left must pass."""
    suite, name = key.split("::")
    if reach_runs[suite]["stock"].get(name, ("absent",))[0] != "passed":
        pytest.skip("stock GDAL does not pass it here")
    if key not in reach_runs["knobs"]:
        pytest.skip(f"gdal_vsitune.so not built in {lab_client.plugin_dir()}")
    o, details = reach_runs["knobs"][key].get(name, ("absent", ""))
    assert o == "passed", f"with {KNOBS_REACH[key]}: {o}\n{details}"


if __name__ == "__main__":  # print the comparison without pytest: python3 test_gdal_autotest.py
    with tempfile.TemporaryDirectory() as d:
        res = _run(["stock", "vsitune"], Path(d))
        for n in autotest_names():
            print(f"{n:75s} stock={res['stock'].get(n, ('absent',))[0]:8s} "
                  f"vsitune={res['vsitune'].get(n, ('absent',))[0]}", file=sys.stdout)
