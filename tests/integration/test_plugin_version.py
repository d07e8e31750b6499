"""test_plugin_version.py: which vsitune, built for which GDAL, and the load-time guard.

- `gdalinfo --format VSITUNE` shows the plugin's version (the build's CMake project
  version) and the GDAL it was built for (`gdal-config --version`, the headers of
  this build) and the one running it; `gdalinfo --formats` lists both in its line.
- The guard: a plugin built for another GDAL minor release takes nothing over. The
  build makes such a copy (tests/CMakeLists.txt: the same sources with
  VT_BUILT_MINOR one above this GDAL's, in <build>/tests/other-gdal/). Loaded by
  this GDAL, it warns once per process (however often drivers are registered),
  registers no driver, and /vsis3/ is GDAL's own: the lab sees exactly the
  requests stock GDAL makes, none of them vsitune's.
- GDAL_SKIP (or OGR_SKIP) naming VSITUNE, split as GDAL's AutoSkipDrivers splits it:
  the driver is gone and /vsis3/ is stock GDAL's, wire included (issue 18, item 13);
  a GDAL_SKIP that does not name it leaves vsitune active.
Runs on every GDAL the suite runs on (scripts/test.sh: host, trixie, sid).
"""

import re
import subprocess

import pytest

import lab_client
from test_vsitune_helpers import PY, by_vsitune, kinds, last_seq, s3path

OTHER = lab_client.build_dir() / "tests" / "other-gdal"


def _cmake_cache(name):
    text = (lab_client.build_dir() / "CMakeCache.txt").read_text()
    m = re.search(rf"^{name}:[A-Z]+=(.*)$", text, re.M)
    assert m, f"{name} not in CMakeCache.txt"
    return m.group(1)


def _gdal_config_version():
    return subprocess.run(["gdal-config", "--version"], capture_output=True, text=True,
                          check=True).stdout.strip()


def _other_items(stdout):
    """The "Other metadata items:" of `gdalinfo --format X` as a dict."""
    items, inside = {}, False
    for line in stdout.splitlines():
        if line.strip() == "Other metadata items:":
            inside = True
        elif inside and line.startswith("    ") and "=" in line:
            k, v = line.strip().split("=", 1)
            items[k] = v
        elif inside:
            break
    return items


def test_format_shows_version_and_gdal(gdal, lab):
    version, built_for = _cmake_cache("CMAKE_PROJECT_VERSION"), _gdal_config_version()
    vt, _ = gdal.run(["gdalinfo", "--format", "VSITUNE"], vsitune=True)
    assert vt.returncode == 0, vt.stderr
    items = _other_items(vt.stdout)
    assert items.get("VSITUNE_VERSION") == version, vt.stdout
    assert items.get("VSITUNE_BUILT_FOR_GDAL") == built_for, vt.stdout
    assert items.get("VSITUNE_RUNNING_GDAL") == built_for, vt.stdout
    assert items.get("VSITUNE_PREFIX") == "/vsis3/", vt.stdout
    want = f"vsitune {version} (built for GDAL {built_for})"
    assert f"Long Name: {want}" in vt.stdout, vt.stdout

    formats, _ = gdal.run(["gdalinfo", "--formats"], vsitune=True)
    line = [ln for ln in formats.stdout.splitlines() if ln.strip().startswith("VSITUNE ")]
    assert len(line) == 1 and want in line[0], formats.stdout

    stock, _ = gdal.run(["gdalinfo", "--format", "VSITUNE"])
    assert "VSITUNE_VERSION" not in stock.stdout
    assert lab.log() == []  # none of this asks the lab anything


# Register drivers twice (as rasterio does), then read one pixel through /vsis3/.
PIXEL = """
import sys
from osgeo import gdal
gdal.AllRegister()
gdal.AllRegister()
print("driver", gdal.GetDriverByName("VSITUNE") is not None)
ds = gdal.Open(sys.argv[1])
print("pixel", int(ds.GetRasterBand(1).ReadAsArray(1500, 700, 1, 1)[0][0]))
"""


def test_other_gdal_release_leaves_vsis3_alone(gdal, lab, small_cog):
    if not (OTHER / "gdal_vsitune.so").is_file():
        pytest.skip(f"{OTHER}/gdal_vsitune.so not built")
    running = _gdal_config_version()
    major, minor = running.split(".")[:2]
    args = [PY, "-c", PIXEL, s3path(small_cog)]

    stock, _ = gdal.run(args)
    stock_log = lab.log()
    mark = last_seq(lab)
    other, _ = gdal.run(args, extra={"GDAL_DRIVER_PATH": str(OTHER)})
    other_log = lab.log(since=mark)

    assert stock.returncode == 0, stock.stderr
    assert other.returncode == 0, other.stderr
    # the same answer, with no driver registered
    assert "driver False" in other.stdout and "driver False" in stock.stdout
    assert stock.stdout.split("pixel")[1] == other.stdout.split("pixel")[1]
    # one warning naming both releases, and nothing else from vsitune
    warned = [ln for ln in other.stderr.splitlines() if "vsitune" in ln]
    assert len(warned) == 1, other.stderr
    assert f"was built for GDAL {major}.{int(minor) + 1} " in warned[0], warned[0]
    assert f"this process runs GDAL {running}" in warned[0], warned[0]
    assert "vsitune is not active: /vsis3/ is GDAL's own." in warned[0], warned[0]
    assert "vsitune" not in stock.stderr
    # the wire: stock GDAL's own requests, none made by vsitune
    assert stock_log and kinds(other_log) == kinds(stock_log), \
        (kinds(stock_log), kinds(other_log))
    assert by_vsitune(other_log) == []

    formats, _ = gdal.run(["gdalinfo", "--formats"], extra={"GDAL_DRIVER_PATH": str(OTHER)})
    assert formats.returncode == 0
    assert "VSITUNE" not in formats.stdout
    assert formats.stderr.count("vsitune is not active") == 1, formats.stderr


NAMES_IT = [{"GDAL_SKIP": "VSITUNE"}, {"GDAL_SKIP": "vsitune"}, {"GDAL_SKIP": "JPEG,VSITUNE"},
            {"GDAL_SKIP": "HFA VSITUNE"}, {"OGR_SKIP": "GPKG,VSITUNE"}]
# With a comma GDAL splits on commas only: " VSITUNE" names no driver.
NAMES_OTHERS = [{"GDAL_SKIP": "JPEG,HFA"}, {"GDAL_SKIP": "JPEG, VSITUNE"}]


def _pixel_both(gdal, lab, cog, env):
    """PIXEL under stock GDAL and with the plugin, env on both; (stock, its log, vt, its
    log)."""
    args = [PY, "-c", PIXEL, s3path(cog)]
    mark = last_seq(lab)
    stock, _ = gdal.run(args, extra=env)
    stock_log = lab.log(since=mark)
    mark = last_seq(lab)
    vt, _ = gdal.run(args, vsitune=True, extra=env)
    vt_log = lab.log(since=mark)
    assert stock.returncode == 0, stock.stderr
    assert vt.returncode == 0, vt.stderr
    assert stock.stdout.split("pixel")[1] == vt.stdout.split("pixel")[1]
    return stock, stock_log, vt, vt_log


@pytest.mark.parametrize("env", NAMES_IT, ids=lambda e: "|".join(f"{k}={v}" for k, v in e.items()))
def test_gdal_skip_naming_vsitune_leaves_stock_in_charge(gdal, lab, cogs, env, tmp_path):
    # the plugin skipped leaves no counters at exit (gdal.run's check that the plugin
    # served a vsitune run is turned round here: the test names the file and checks it
    # stays unwritten)
    exit_doc = tmp_path / "exit.json"
    env = dict(env, VSITUNE_STATS_FILE=str(exit_doc))
    stock, stock_log, vt, vt_log = _pixel_both(gdal, lab, cogs["s2"], env)
    assert not exit_doc.exists(), exit_doc.read_text()
    assert "driver False" in vt.stdout and "driver False" in stock.stdout
    # the wire: stock GDAL's own requests (a cold open lists the prefix), none by vsitune
    assert "LIST" in kinds(stock_log), kinds(stock_log)
    assert kinds(vt_log) == kinds(stock_log), (kinds(stock_log), kinds(vt_log))
    assert by_vsitune(vt_log) == []
    # skipped as GDAL skips an installed driver: silently (stock, with no such driver at
    # all, warns that it cannot find it)
    assert "vsitune" not in vt.stderr.lower(), vt.stderr
    formats, _ = gdal.run(["gdalinfo", "--formats"], vsitune=True, extra=env)
    assert formats.returncode == 0
    assert "VSITUNE" not in formats.stdout and "VSITUNE" not in formats.stderr


@pytest.mark.parametrize("env", NAMES_OTHERS, ids=lambda e: e["GDAL_SKIP"].replace(" ", "_"))
def test_gdal_skip_naming_others_keeps_vsitune(gdal, lab, cogs, env):
    stock, stock_log, vt, vt_log = _pixel_both(gdal, lab, cogs["s2"], env)
    assert "driver True" in vt.stdout and "driver False" in stock.stdout
    assert "LIST" not in kinds(vt_log) and by_vsitune(vt_log), kinds(vt_log)
    # GDAL's own words on the names it cannot find; vsitune's notices aside (notice.h)
    notices = [ln for ln in vt.stderr.splitlines() if ln.startswith("VSITUNE: ")]
    assert len(notices) <= 1, notices  # the COG-without-sidecars line, once
    assert [ln for ln in vt.stderr.splitlines() if ln not in notices] == \
        stock.stderr.splitlines()
