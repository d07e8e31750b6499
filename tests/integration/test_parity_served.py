#!/usr/bin/python3
"""test_parity_served.py: the differential suites check what served each side (issue 18).

If the plugin declined to load (built for another GDAL, a missing symbol), every parity case
would compare stock GDAL with stock GDAL and pass. parity.py asks each side once per process
(Side: when it starts; tool: from the plugin's exit document) and fails a side that is not
what its name says. Shown here with the copy of the plugin the build makes for the next GDAL
minor release (tests/other-gdal, test_plugin_version.py), which warns and registers nothing:
- a probe process and a tool pointed at it fail their check; so does a stock side that
  reaches the real plugin;
- the same sides with the right plugin pass it, in every environment test_parity_errors uses
  (no credentials, an unreachable endpoint), and the check sends nothing to the lab;
- parity tests run with their plugin directory pointing at that copy fail on the check
  (before the check they passed: stock against stock), and so do test_gdal_autotest.py's
  plugin-side run, conftest's gdal.run and test_vsitune_helpers.Worker (the test_vsitune_*
  comparisons).
"""

import json
import os
import subprocess
import sys

import pytest

import lab_client
import parity
from parity import Side, last_seq, tool

OTHER = lab_client.build_dir() / "tests" / "other-gdal"
PATH = "/vsis3/lab/parity/cog/scene.tif"


@pytest.fixture
def other():
    if not (OTHER / "gdal_vsitune.so").is_file():
        pytest.skip(f"{OTHER}/gdal_vsitune.so not built")
    if not lab_client.plugin_built():
        pytest.skip(f"gdal_vsitune.so not built in {lab_client.plugin_dir()}")
    return OTHER


@pytest.fixture(scope="module")
def fixtures(lab):
    return parity.uploaded(lab)


@pytest.mark.parametrize("extra", [
    {}, {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "HOME": "/nonexistent"},
    {"AWS_S3_ENDPOINT": "127.0.0.1:9"}, {"AWS_NO_SIGN_REQUEST": "YES"}],
    ids=["lab", "no-credentials", "unreachable", "unsigned"])
def test_sides_pass_their_check_without_asking_the_lab(lab, extra):
    if not lab_client.plugin_built():
        pytest.skip("plugin not built")
    seq, mark = last_seq(lab), len(parity.recorder().seen)
    for vsitune in (False, True):
        with Side(lab, vsitune, extra) as s:
            assert s.close() == 0
    assert lab.log(since=seq) == []  # the plugin's check request went to the recorder
    seen = parity.recorder().seen[mark:]
    # the plugin's stat: its range GET (and its stem listing), never stock's HEAD
    assert any(e["method"] == "GET" and e["range"] for e in seen), seen
    assert all(e["method"] == "GET" and e["user_agent"].startswith("vsitune/") for e in seen)


def test_probe_side_of_a_plugin_that_declined_fails(lab, other):
    env = parity.side_env(lab, True, {"GDAL_DRIVER_PATH": str(other)})
    with pytest.raises(AssertionError, match="no VSITUNE driver, this is stock GDAL"):
        Side(lab, True, env=env)
    # and the stock side must not have the plugin
    with pytest.raises(AssertionError, match="stock side: the VSITUNE driver is registered"):
        Side(lab, False, env=parity.side_env(lab, True))


def test_tool_side_of_a_plugin_that_declined_fails(lab, fixtures, other):
    r = tool(lab, ["gdalinfo", PATH], True)  # the real plugin: passes, and the case works
    assert r["rc"] == 0, r
    with pytest.raises(AssertionError, match="no counters at exit"):
        tool(lab, ["gdalinfo", PATH], True, extra={"GDAL_DRIVER_PATH": str(other)})
    with pytest.raises(AssertionError, match="stock side: the plugin wrote"):
        tool(lab, ["gdalinfo", PATH], False,
             extra={"GDAL_DRIVER_PATH": str(lab_client.plugin_dir())})


def _build_pointing_at(tmp_path, plugin_dir):
    """A build directory like this one whose vsiplugin/ is plugin_dir (symlinks)."""
    fake = tmp_path / "build"
    fake.mkdir()
    for entry in lab_client.build_dir().iterdir():
        if entry.name not in ("vsiplugin", "parity"):
            (fake / entry.name).symlink_to(entry)
    (fake / "vsiplugin").symlink_to(plugin_dir)
    return fake


# Parity tests that pass pointed at the declining plugin without the check (measured at
# 42882aa: 5 and 4 passed, stock against stock): they must fail on it now.
@pytest.mark.parametrize("selection", [
    ["tests/integration/test_parity_errors.py", "-k", "library_call and missing-key-noext"],
    ["tests/integration/test_parity_vsi.py", "-k", "test_stat_every_key"],
], ids=["errors", "vsi"])
def test_parity_suite_pointed_at_a_declining_plugin_fails(tmp_path, other, selection):
    env = dict(os.environ, VT_BUILD_DIR=str(_build_pointing_at(tmp_path, other)))
    cp = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                         *selection], cwd=lab_client.REPO, env=env, capture_output=True,
                        text=True, timeout=600)
    out = cp.stdout + cp.stderr
    assert "no tests ran" not in out and " passed" not in out.splitlines()[-1], out[-3000:]
    assert cp.returncode == 1, out[-3000:]
    assert "what served this side is not what its name says" in out, out[-3000:]


def test_gdal_autotest_run_of_a_declining_plugin_fails(tmp_path, other, monkeypatch):
    """test_gdal_autotest.py's plugin-side run checks the plugin's exit document too."""
    import test_gdal_autotest as autotest
    if autotest.SUITE is None:
        pytest.skip("GDAL autotest suite not found")
    fake = _build_pointing_at(tmp_path, other)
    with monkeypatch.context() as m:
        m.setenv("VT_BUILD_DIR", str(fake))
        with pytest.raises(AssertionError, match="no counters at exit"):
            autotest._run(["vsitune"], tmp_path, select=["test_vsis3_1"])
    (tmp_path / "ok").mkdir()
    autotest._run(["stock", "vsitune"], tmp_path / "ok", select=["test_vsis3_1"])


def test_gdal_fixture_run_of_a_declining_plugin_fails(gdal, lab, small_cog, other):
    """conftest's gdal.run (the test_vsitune_* comparisons) checks each run the same way."""
    args = ["gdalinfo", f"/vsis3/lab/{small_cog['key']}"]
    cp, _ = gdal.run(args, vsitune=True)
    assert cp.returncode == 0, cp.stderr
    with pytest.raises(AssertionError, match="no counters at exit"):
        gdal.run(args, vsitune=True, extra={"GDAL_DRIVER_PATH": str(other)})
    with pytest.raises(AssertionError, match="stock side: the plugin wrote"):
        gdal.run(args, extra={"GDAL_DRIVER_PATH": str(lab_client.plugin_dir())})


def test_worker_of_a_declining_plugin_fails(lab, other):
    """test_vsitune_helpers.Worker (the plugin side of the test_vsitune_* comparisons)
    checks the VSITUNE driver once when it starts."""
    from test_vsitune_helpers import Worker
    with Worker(lab) as w:
        assert w.call("result = 1") == 1
    with pytest.raises(AssertionError, match="VSITUNE driver is not registered"):
        Worker(lab, extra={"GDAL_DRIVER_PATH": str(other)})
    with pytest.raises(AssertionError, match="VSITUNE driver is registered"):
        Worker(lab, vsitune=False, extra={"GDAL_DRIVER_PATH": str(lab_client.plugin_dir())})
