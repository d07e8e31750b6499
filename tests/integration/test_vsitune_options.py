"""test_vsitune_options.py: options whose value is not one they take.

Issue 18, item 6: `VSITUNE_MAX_STREAMS=nan` made every read hang with no request and no
warning (the engine's parser took NaN, and `(long)NaN` capped the transfers in flight
below one); `GDAL_HTTP_MAX_RETRY=nan` silently turned retries off. Every numeric option
now goes through config.c's table: NaN, infinities, overflow and trailing garbage give
the option's default and a warning naming it. What the server saw comes from the lab's
log; a hang is a failure (a generous subprocess timeout), never a measured time.

Issue 19: vsitune's own booleans and enum (VSITUNE_SIDECARS, VSITUNE_TAKEOVER,
VSITUNE_SHARED_CACHE, VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS) went through
CPLTestBool, where any word but NO/FALSE/OFF/0 is YES: VSITUNE_SIDECARS=maybe had GDAL
list the directory, VSITUNE_SHARED_CACHE=maybe turned the shared cache on. Now a value
that is not one of theirs gives the default and a warning naming the option and the
values it takes, as the numeric ones do. GDAL's own booleans keep CPLTestBool.
"""

import json
import os
import tempfile
import uuid

import pytest

import lab_client
from test_vsitune_helpers import by_vsitune, kinds, run_local, s3path, sigcheck  # noqa: F401

PIXEL = ("1500", "700")  # a tile far from the header: the header GET, then the tile's
HANG = 90  # s: a read of one pixel that takes this long hangs

# The engine's options, read for every batch of requests (config.c vt__opts).
ENGINE_OPTS = ["GDAL_HTTP_MAX_RETRY", "GDAL_HTTP_RETRY_DELAY", "GDAL_HTTP_TIMEOUT",
               "GDAL_HTTP_CONNECTTIMEOUT", "GDAL_HTTP_LOW_SPEED_TIME",
               "GDAL_HTTP_LOW_SPEED_LIMIT", "VSITUNE_RETRY_WINDOW", "VSITUNE_MAX_CONNECTIONS",
               "VSITUNE_MAX_STREAMS"]
# Sizes every read of a COG reads.
READ_SIZES = ["VSITUNE_HEADER_SIZE", "VSITUNE_MERGE_GAP", "VSITUNE_MAX_REQUEST_SIZE",
              "VSITUNE_READAHEAD_MAX", "VSITUNE_METADATA_TTL", "VSITUNE_NEGATIVE_TTL",
              "VSITUNE_BLOCK_SIZE", "VSITUNE_CACHE_SIZE"]
NOT_NUMBERS = ["inf", "-inf", "1e999", "99999999999999999999", "3x"]


def _pixel(gdal, cog, endpoint, extra):
    args = ["gdallocationinfo", "-valonly", s3path(cog), *PIXEL]
    try:
        cp, _ = gdal.run(args, endpoint=endpoint, vsitune=True, extra=extra, timeout=HANG)
    except lab_client.LabError as e:
        pytest.fail(f"{extra}: the read hung: {e}")
    return cp


def _want(cog):
    return run_local(["gdallocationinfo", "-valonly", cog["path"], *PIXEL]).stdout


def _check(lab, gdal, cog, endpoint, name, value):
    lab.reset()
    cp = _pixel(gdal, cog, endpoint, {name: value})
    assert (cp.returncode, cp.stdout) == (0, _want(cog)), cp.stderr
    # The warning names the option and the value, once.
    said = [ln for ln in cp.stderr.splitlines() if f"vsitune: {name}={value} is not a" in ln]
    assert len(said) == 1 and said[0].startswith("Warning"), cp.stderr
    # The requests of the default: the header GET and the tile's.
    assert kinds(lab.log()) == ["GET_RANGE"] * 2


@pytest.mark.parametrize("endpoint", ["h1", "h2"])
@pytest.mark.parametrize("name", ENGINE_OPTS + READ_SIZES)
def test_nan_option_reads_with_default_and_warns(lab, gdal, small_cog, name, endpoint):
    _check(lab, gdal, small_cog, endpoint, name, "nan")


@pytest.mark.parametrize("value", NOT_NUMBERS)
@pytest.mark.parametrize("name", ["VSITUNE_MAX_STREAMS", "GDAL_HTTP_MAX_RETRY",
                                  "GDAL_HTTP_CONNECTTIMEOUT"])
def test_non_number_option_reads_with_default_and_warns(lab, gdal, small_cog, name, value):
    _check(lab, gdal, small_cog, "h2", name, value)


def test_max_retry_nan_keeps_retrying(lab, gdal, small_cog):
    # A 503 on the header GET: the default's retries read the pixel. Before: no retry.
    lab.reset()
    lab.fault("slowdown", count=2, key=small_cog["key"], request_kind="GET_RANGE")
    cp = _pixel(gdal, small_cog, "h1", {"GDAL_HTTP_MAX_RETRY": "nan",
                                        "GDAL_HTTP_RETRY_DELAY": "0.05"})
    assert (cp.returncode, cp.stdout) == (0, _want(small_cog)), cp.stderr
    assert "vsitune: GDAL_HTTP_MAX_RETRY=nan is not a number in [0, 100]; using 3" in cp.stderr
    log = lab.log()
    assert [(e["status"], e["fault"]) for e in log][:3] == [(503, "slowdown")] * 2 + [(206, None)]
    assert log[0]["range"] == log[1]["range"] == log[2]["range"]
    assert kinds(log) == ["GET_RANGE"] * 4


def test_retry_delay_nan_waits_the_default(lab, gdal, small_cog):
    # GDAL_HTTP_RETRY_DELAY=nan: the default backoff (0.5 s base), not NaN seconds.
    lab.reset()
    lab.fault("slowdown", count=1, key=small_cog["key"], request_kind="GET_RANGE")
    cp = _pixel(gdal, small_cog, "h1", {"GDAL_HTTP_RETRY_DELAY": "nan"})
    assert (cp.returncode, cp.stdout) == (0, _want(small_cog)), cp.stderr
    assert "vsitune: GDAL_HTTP_RETRY_DELAY=nan is not a number in [0, 60]; using 0.5" in cp.stderr
    assert [e["status"] for e in lab.log()] == [503, 206, 206]


# ---- booleans and enums ---------------------------------------------------------------

def _said_once(stderr, name, value, accepted, using):
    line = f"vsitune: {name}={value} is not one of {accepted}"
    said = [ln for ln in stderr.splitlines() if line in ln]
    assert len(said) == 1 and said[0].startswith("Warning"), stderr
    assert said[0].endswith(f"; using {using}"), said[0]


YES_NO = "(or TRUE, ON, 1, FALSE, OFF, 0)"


def test_sidecars_not_a_value_is_auto_and_warns(lab, gdal, small_cog):
    # Before: CPLTestBool("maybe") is YES, and GDAL listed the COG's directory.
    runs = {}
    for value in ("maybe", "AUTO"):
        lab.reset()
        cp, _ = gdal.run(["gdalinfo", s3path(small_cog)], vsitune=True,
                         extra={"VSITUNE_SIDECARS": value})
        assert cp.returncode == 0, cp.stderr
        runs[value] = (cp, kinds(lab.log()))
    cp, got = runs["maybe"]
    # AUTO's requests: the COG's one GET, no LIST.
    assert got == runs["AUTO"][1] == ["GET_RANGE"]
    assert cp.stdout == runs["AUTO"][0].stdout
    _said_once(cp.stderr, "VSITUNE_SIDECARS", "maybe", f"AUTO, YES, NO {YES_NO}", "AUTO")


@pytest.mark.parametrize("word,canonical", [("TRUE", "YES"), ("on", "YES"), ("off", "NO"),
                                            ("0", "NO")])
def test_sidecars_boolean_words_still_work(lab, gdal, small_cog, word, canonical):
    # A boolean word is its YES or NO, with no warning: the same requests (which ones
    # YES and NO make depends on the GDAL release's drivers).
    runs = []
    for value in (word, canonical):
        lab.reset()
        cp, _ = gdal.run(["gdalinfo", s3path(small_cog)], vsitune=True,
                         extra={"VSITUNE_SIDECARS": value})
        assert cp.returncode == 0 and "is not one of" not in cp.stderr, cp.stderr
        runs.append((kinds(lab.log()), cp.stdout))
    assert runs[0] == runs[1]
    if canonical == "YES":  # GDAL lists the directory itself, as stock
        assert "LIST" in runs[0][0]


def test_takeover_not_a_value_takes_over_and_warns(lab, gdal, small_cog):
    lab.reset()
    cp = _pixel(gdal, small_cog, "h1", {"VSITUNE_TAKEOVER": "maybe"})
    assert (cp.returncode, cp.stdout) == (0, _want(small_cog)), cp.stderr
    _said_once(cp.stderr, "VSITUNE_TAKEOVER", "maybe", f"NO, YES {YES_NO}", "YES")
    log = lab.log()
    assert kinds(log) == ["GET_RANGE"] * 2 and by_vsitune(log) == log


def _shared_run(gdal, small_cog, extra):
    with tempfile.TemporaryDirectory() as d:
        stats = os.path.join(d, "exit.json")
        env = {"VSITUNE_SHARED_CACHE_NAME": "opt" + uuid.uuid4().hex[:12],
               "VSITUNE_STATS_FILE": stats, **extra}
        cp = _pixel(gdal, small_cog, "h1", env)
        with open(stats) as f:
            return cp, json.load(f)


def test_shared_cache_not_a_value_is_off_and_warns(lab, gdal, small_cog):
    # Before: CPLTestBool("maybe") is YES: the process made a shared segment.
    lab.reset()
    cp, doc = _shared_run(gdal, small_cog, {"VSITUNE_SHARED_CACHE": "maybe"})
    assert (cp.returncode, cp.stdout) == (0, _want(small_cog)), cp.stderr
    assert "shared" not in doc, doc
    _said_once(cp.stderr, "VSITUNE_SHARED_CACHE", "maybe", f"NO, YES {YES_NO}", "NO")
    assert kinds(lab.log()) == ["GET_RANGE"] * 2
    # YES still turns it on (the check above can see a segment).
    lab.reset()
    cp, doc = _shared_run(gdal, small_cog, {"VSITUNE_SHARED_CACHE": "YES"})
    assert cp.returncode == 0 and "is not one of" not in cp.stderr, cp.stderr
    assert "shared" in doc, doc


def test_across_credentials_not_a_value_is_no_and_warns(lab, gdal, small_cog):
    lab.reset()
    cp, doc = _shared_run(gdal, small_cog, {"VSITUNE_SHARED_CACHE": "YES",
                                            "VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS": "maybe"})
    assert (cp.returncode, cp.stdout) == (0, _want(small_cog)), cp.stderr
    _said_once(cp.stderr, "VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS", "maybe",
               f"NO, YES {YES_NO}", "NO")
    assert kinds(lab.log()) == ["GET_RANGE"] * 2


@pytest.mark.parametrize("name", ["GDAL_DISABLE_READDIR_ON_OPEN", "GDAL_HTTP_UNSAFESSL"])
def test_gdal_boolean_not_a_value_as_stock(lab, gdal, small_cog, name):
    # GDAL's own booleans keep GDAL's reading (CPLTestBool: "maybe" is YES), with no
    # warning from vsitune: what stock GDAL prints and outputs, the plugin does.
    out = {}
    for vsitune in (False, True):
        lab.reset()
        cp, _ = gdal.run(["gdalinfo", s3path(small_cog)], vsitune=vsitune,
                         extra={name: "maybe"})
        warnings = [ln for ln in cp.stderr.splitlines()
                    if ln.startswith(("Warning", "ERROR"))]
        out[vsitune] = (cp.returncode, cp.stdout, warnings)
    assert out[True] == out[False]
    assert not any("vsitune:" in w for w in out[True][2])
