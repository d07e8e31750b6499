#!/usr/bin/python3
"""test_readme_rows.py: the README's "write a COG" rows, run as written.

The README states the command (CPL_VSIL_USE_TEMP_FILE_FOR_RANDOM_WRITE=YES
gdal_translate -of COG ... /vsis3/...) and the requests stock GDAL 3.6.2 and
vsitune send, into a new prefix and into one that already holds objects, and
below them the rows of GDAL 3.10 and 3.13. This runs that command against the
lab for both, on the GDAL the tests run with, and compares the lab's request
log with that GDAL's rows, request kind by request kind.

Run: /usr/bin/python3 -m pytest tests/integration/test_readme_rows.py
"""
import collections
import re
import subprocess
from pathlib import Path

import pytest
from osgeo import gdal

import lab_client

REPO = Path(__file__).resolve().parents[2]


def readme_rows(version=None):
    """The write rows for GDAL `version` ("3.10", "3.13"; the main table's, measured
    on 3.6, when it has none of its own), the option and the command."""
    text = (REPO / "README.md").read_text()
    rows, own = {}, {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != 3:
            continue
        m = re.match(r"(to a new prefix|into a prefix that already holds objects), "
                     r"GDAL (\d+\.\d+)$", cells[0])
        if m:
            own.setdefault(m.group(2), {})["new" if "new" in m.group(1) else "existing"] = \
                cells[1:]
        elif "COG" in cells[0] and "prefix" in cells[0]:
            rows["new" if "new prefix" in cells[0] else "existing"] = cells[1:]
        elif cells[0].startswith("the same, into a prefix"):
            rows["existing"] = cells[1:]
    rows = own.get(version, rows)
    assert set(rows) == {"new", "existing"}, rows
    m = re.search(r"^(CPL_VSIL_USE_TEMP_FILE_FOR_RANDOM_WRITE=YES) (gdal_translate .*)$", text,
                  re.M)
    assert m, "the README states the command"
    return rows, m.group(1).split("=", 1), m.group(2).split()


def parse_counts(cell):
    """'4 LIST + 3 GET (404) + PUT' -> {'LIST': 4, 'GET_RANGE': 3, 'PUT': 1}"""
    out = collections.Counter()
    for item in cell.split(" + "):
        words = re.sub(r"\(\d+\)", "", item).split()
        n = int(words[0]) if words[0].isdigit() else 1
        kind = words[-1]
        out["GET_RANGE" if kind == "GET" else kind] += n
    return dict(out)


def test_write_rows_as_measured(lab, small_cog):
    v = int(gdal.VersionInfo())
    rows, (opt, val), argv = readme_rows(f"{v // 1000000}.{v // 10000 % 100}")
    assert argv[:3] == ["gdal_translate", "-of", "COG"]
    for i, vsitune in enumerate((False, True)):
        for case, key in (("new", f"readme-{i}/B04.tif"), ("existing", f"readme-{i}/B05.tif")):
            lab.reset()
            env = lab_client.gdal_env(lab.env("h1"), vsitune=vsitune, extra={opt: val})
            p = subprocess.run(["gdal_translate", "-q", "-of", "COG", small_cog["path"],
                                f"/vsis3/lab/{key}"], env=env, capture_output=True, text=True,
                               timeout=300)
            assert p.returncode == 0, p.stderr
            got = dict(collections.Counter(e["kind"] for e in lab.log()))
            want = parse_counts(rows[case][1 if vsitune else 0])
            assert got == want, (case, "vsitune" if vsitune else "stock", got, want)
    # without the option GDAL refuses the write, stock and vsitune alike
    for vsitune in (False, True):
        env = lab_client.gdal_env(lab.env("h1"), vsitune=vsitune)
        p = subprocess.run(["gdal_translate", "-q", "-of", "COG", small_cog["path"],
                            "/vsis3/lab/readme-x/B04.tif"], env=env, capture_output=True,
                           text=True, timeout=300)
        assert p.returncode != 0 and "CPL_VSIL_USE_TEMP_FILE_FOR_RANDOM_WRITE" in p.stderr
