"""conftest.py: pytest fixtures shared by the integration tests.

- `lab`: one S3 lab (tests/lab/labd.js) per test session, started on first use and
  stopped at the end; its request log, connection counts, faults and delay are
  reset before every test that uses it, so each test reads only its own requests
  (with VT_RECORD_SEQ=FILE, each such test's whole log is appended to FILE after it:
  parity.record_seq, for scripts/reqseq.py).
- `cogs`: the fixture COGs (s2 and small, tests/lab/fixtures.py) uploaded to bucket
  `lab` with their >= 200 sibling keys: {"s2": {"key", "path", "size", ...}, ...}.
  `small_cog`: only the small one (fast). Tests must not overwrite these keys:
  a test that replaces or deletes objects uses keys of its own.
- `gdal`: run a GDAL command-line tool against the lab with a clean environment,
  stock (`vsitune=False`) or through the built plugin (`vsitune=True`); after each run,
  what served it is checked (the plugin's exit document: absent in a stock run, naming
  its prefix in a plugin run), so a plugin that declined to load fails the test.
Always run with /usr/bin/python3 (it has osgeo, rasterio, numpy, pytest).
"""

import os
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "lab"))

import fixtures as lab_fixtures  # noqa: E402  (tests/lab/fixtures.py)
import lab_client  # noqa: E402
import parity  # noqa: E402  (what served a run: parity.tool_served_failures)


@pytest.fixture(scope="session")
def lab():
    lab = lab_client.Lab()
    lab.start()
    try:
        yield lab
    finally:
        lab.stop()


@pytest.fixture(autouse=True)
def _lab_reset(request):
    """Reset the lab before each test that uses it (and only those). With VT_RECORD_SEQ
    (parity.record_seq, scripts/reqseq.py), the test's whole log is recorded after it."""
    if "lab" not in request.fixturenames:
        yield
        return
    lab = request.getfixturevalue("lab")
    lab.reset()
    yield
    if parity.SEQ_FILE:
        try:
            parity.record_seq(None, None, lab.log())
        except lab_client.LabError:
            pass  # a lab that died: the test's own failure says so


@pytest.fixture(scope="session")
def small_cog(lab):
    return lab_fixtures.upload(lab, names=("small",))["small"]


@pytest.fixture(scope="session")
def cogs(lab, small_cog):
    out = lab_fixtures.upload(lab, names=("s2",), siblings=False)
    out["small"] = small_cog
    return out


class Gdal:
    """Runs GDAL tools against the lab: gdal.run(["gdalinfo", path], endpoint="h1",
    vsitune=False, extra={...}) -> (CompletedProcess, wall seconds)."""

    def __init__(self, lab):
        self.lab = lab

    def env(self, endpoint="h1", vsitune=False, extra=None):
        return lab_client.gdal_env(self.lab.env(endpoint), vsitune=vsitune, extra=extra)

    def run(self, args, endpoint="h1", vsitune=False, extra=None, timeout=300):
        """What served the run is checked after it (parity.tool_served_failures: the
        plugin's exit document, VSITUNE_STATS_FILE): no plugin in a stock run, the plugin
        on its prefix in a vsitune run."""
        if vsitune and not lab_client.plugin_built():
            pytest.skip(f"gdal_vsitune.so not built in {lab_client.plugin_dir()}")
        env = self.env(endpoint, vsitune, extra)
        if "VSITUNE_STATS_FILE" in env:  # the test's own
            return lab_client.run_tool(args, env, timeout=timeout)
        with tempfile.TemporaryDirectory() as d:
            env["VSITUNE_STATS_FILE"] = os.path.join(d, "exit.json")
            out = lab_client.run_tool(args, env, timeout=timeout)
            parity.assert_served(parity.tool_served_failures(None, vsitune, env, None,
                                                             env["VSITUNE_STATS_FILE"]))
        return out


@pytest.fixture
def gdal(lab):
    return Gdal(lab)
