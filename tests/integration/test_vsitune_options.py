"""test_vsitune_options.py: numeric options whose value is not a number.

Issue 18, item 6: `VSITUNE_MAX_STREAMS=nan` made every read hang with no request and no
warning (the engine's parser took NaN, and `(long)NaN` capped the transfers in flight
below one); `GDAL_HTTP_MAX_RETRY=nan` silently turned retries off. Every numeric option
now goes through config.c's table: NaN, infinities, overflow and trailing garbage give
the option's default and a warning naming it. What the server saw comes from the lab's
log; a hang is a failure (a generous subprocess timeout), never a measured time.
"""

import pytest

import lab_client
from test_vsitune_helpers import kinds, run_local, s3path, sigcheck  # noqa: F401

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
