"""test_parity_errors.py: failures, stock GDAL against GDAL with the plugin (issue 9).

For each failure a user meets (missing key, missing bucket, access denied, bad secret,
unknown key id, no credentials, unreachable endpoint), what GDAL reports must be the same:
the command line's exit status and error lines (CPLE number, and stock GDAL's message
contained in the plugin's: the plugin may add S3's code and message), GDALOpen's CPLErrors,
VSIStatL and VSIFOpenExL with their VSI error set, VSIReadDir, and the exception rasterio
raises. One process per side runs the library calls; the tools run as themselves.
"""

import pytest

from parity import assert_same, both, both_tool, gdal_at_least, uploaded, xfail

OK = "/vsis3/lab/parity/cog/scene.tif"
SCENARIOS = {
    # name: (path, extra environment)
    "missing-key": ("/vsis3/lab/parity/nope/missing.tif", {}),
    "missing-key-noext": ("/vsis3/lab/parity/nope/missing", {}),
    "missing-bucket": ("/vsis3/nosuchbucket-parity/x.tif", {}),
    "access-denied": (OK, {"AWS_NO_SIGN_REQUEST": "YES"}),
    "bad-secret": (OK, {"AWS_SECRET_ACCESS_KEY": "not-the-secret"}),
    "unknown-key-id": (OK, {"AWS_ACCESS_KEY_ID": "AKIANOTKNOWNBYTHELAB"}),
    "no-credentials": (OK, {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
                            "HOME": "/nonexistent"}),
    "unreachable": (OK, {"AWS_S3_ENDPOINT": "127.0.0.1:9"}),
}

# A name that fails again the same way as the last time this process saw it fail is
# worded as stock GDAL words the failure it remembers (its cache of file properties):
# GDAL 3.6 sets no VSI error and GDALOpen says "... does not exist in the file system ...";
# 3.10+ sets "HTTP response code: <n>"; 3.13 remembers no failure without an HTTP answer.
# vsitune remembers only how the name failed, never that it failed: it asks again each
# time (test_failure_met_again_is_asked_again below).
XFAIL = {}
TOOL_XFAIL = {}


OPS = ["gdalopen", "stat", "fopen_ex", "readdir", "rasterio"]


def params(ops, marks):
    return [pytest.param(op, n, id=f"{op}-{n}",
                         marks=[xfail(marks[(op, n)])] if (op, n) in marks else [])
            for op in ops for n in SCENARIOS]


@pytest.fixture(scope="module")
def fixtures(lab):
    return uploaded(lab)


_RESULTS = {}


def library_results(lab, name):
    """Every library call of a scenario, in one process per side (once per scenario)."""
    if name not in _RESULTS:
        path, env = SCENARIOS[name]
        probes = [{"op": "raster", "path": path, "checksums": False},
                  {"op": "stat", "path": path, "flags": ["exists", "set_error"]},
                  {"op": "fopen_ex", "path": path},
                  {"op": "readdir", "path": path.rsplit("/", 1)[0]},
                  {"op": "rasterio_open", "path": path}]
        stock, vt = both(lab, "errors", name, probes, extra=env)
        assert stock[0]["value"] is None, f"stock GDAL opened {path} in scenario {name}"
        _RESULTS[name] = (stock, vt)
    return _RESULTS[name]


@pytest.mark.parametrize("op,name", params(OPS, XFAIL))
def test_error_library_call(lab, fixtures, op, name):
    stock, vt = library_results(lab, name)
    i = OPS.index(op)
    assert_same([stock[i]], [vt[i]], f"{op} {name}")


@pytest.mark.parametrize("tool,name", params(["gdalinfo", "ogrinfo"], TOOL_XFAIL))
def test_error_tool(lab, fixtures, tool, name):
    path, env = SCENARIOS[name]
    argv = [tool, path] if tool == "gdalinfo" else [tool, "-ro", "-so", "-al", path]
    stock, vt = both_tool(lab, "errors", f"{tool} {name}", argv, extra=env, timeout=120)
    assert stock["rc"] != 0, stock
    assert_same(stock, vt, f"{tool} {name}")


@pytest.mark.parametrize("name", ["access-denied", "missing-bucket", "unreachable"])
def test_error_met_again_until_cache_cleared(lab, fixtures, name):
    """In one process: the second open of a failed name is worded as GDAL words the failure
    it remembers; VSICurlClearCache and a VSICurlPartialClearCache covering the name make the
    next failure a first one again (GDAL asks again then), one of another prefix does not.
    Each phase starts with a GDALOpen, as a user's session does (see docs/compatibility.md
    for GDAL 3.13's wording when a bare VSIFOpenExL came first)."""
    path, env = SCENARIOS[name]
    bucket_dir = path.rsplit("/", 1)[0]
    other = "/vsis3/lab/parity/elsewhere" if "nosuchbucket" not in path else "/vsis3/otherbucket"
    fopen = {"op": "fopen_ex", "path": path}
    raster = {"op": "raster", "path": path, "checksums": False}
    probes = [raster, fopen, raster,
              {"op": "clear_cache"}, raster, fopen,
              {"op": "partial_clear_cache", "prefix": other}, fopen, raster,
              {"op": "partial_clear_cache", "prefix": bucket_dir}, raster, fopen]
    stock, vt = both(lab, "errors", f"met again {name}", probes, extra=env)
    assert_same(stock, vt, f"met again {name}")


_BARE_FIRST = ("GDAL 3.13: after a bare VSIFOpenExL met the failure first, GDALOpen's stat "
               "lists name/ once and stock reports that listing's S3 error (CPLE 14); vsitune's "
               "stat words no listing error and gives the remembered wording (CPLE 11)")


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=[xfail(_BARE_FIRST)] if gdal_at_least(3, 13) else [])
    for n in ("access-denied", "missing-bucket")])
def test_error_bare_open_then_gdalopen(lab, fixtures, name):
    """A VSIFOpenExL first, then a GDALOpen of the same failing name (docs/compatibility.md)."""
    path, env = SCENARIOS[name]
    probes = [{"op": "fopen_ex", "path": path}, {"op": "raster", "path": path, "checksums": False}]
    stock, vt = both(lab, "errors", f"bare open first {name}", probes, extra=env)
    assert_same(stock, vt, f"bare open first {name}")
