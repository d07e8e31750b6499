#!/usr/bin/python3
"""test_readme_rows.py: the README's "write a COG" rows, run as written, and the
first table's read rows per backend (test_read_rows_by_backend).

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


# The README's first table: a row per backend and read, "`gdalinfo`, `/vsigs/`".
READ_ROW = re.compile(r"^(`gdalinfo`|one pixel(?: \(`gdallocationinfo`\))?), `(/vsi\w+/)`")


def read_rows():
    """{(read, prefix): (stock cell, vsitune cell)} from the README's first table."""
    out = {}
    for line in (REPO / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        m = READ_ROW.match(cells[0]) if len(cells) == 3 else None
        if m:
            out[("info" if "gdalinfo" in m.group(1) else "pixel", m.group(2))] = \
                row_cells(cells[1:])
    return out


def read_counts(cell):
    """'44 HEADs (sidecars) + GET (directory) + 1 range GET' -> {'HEAD': 44, 'GET': 1,
    'GET_RANGE': 1}: the lab's kinds (a range GET is GET_RANGE, a plain one GET)."""
    out = collections.Counter()
    for item in cell.split(" + "):
        words = re.sub(r"\([^)]*\)", "", item).split()
        n = int(words[0]) if words[0].isdigit() else 1
        kind = words[-1].rstrip("s")
        out["GET_RANGE" if kind == "GET" and "range" in words else kind] += n
    return dict(out)


def row_cells(cells):
    """(stock, vsitune) counts of a row; vsitune None: "the same (stock's)", what stock
    GDAL costs on the GDAL at hand."""
    return read_counts(cells[0]), None if cells[1].startswith("the same") else \
        read_counts(cells[1])


def _read_target(lab, key, path, prefix):
    """(GDAL path, lab environment, the endpoints that are this backend's) of the COG."""
    if prefix == "/vsis3/":
        return f"/vsis3/lab/{key}", lab.env("h1"), ("h1",)
    if prefix == "/vsigs/":
        return f"/vsigs/lab/{key}", lab.family_env("gcs-h1", "hmac"), ("gcs-h1",)
    if prefix == "/vsiaz/":
        lab.put_object("lab", key, path, family="az")
        return f"/vsiaz/lab/{key}", lab.family_env("az-h1", "shared_key"), ("az-h1",)
    lab.put_object("public", key, path)
    return "/vsicurl/" + lab.object_url("public", key, "h1"), {}, ("h1",)


def test_read_rows_by_backend(lab, small_cog):
    """Each backend's rows of the README's first table (gdalinfo of the small COG and a
    cold one-pixel read), measured here, differential: stock GDAL (plugin not loaded) and
    the plugin loaded as shipped (every prefix taken over by default); the lab's request
    log counted by kind. The stock column is
    GDAL 3.6.2's (the table's heading): checked on 3.6 only; the vsitune column on every
    GDAL ("the same (stock's)": equal to the stock run beside it)."""
    rows = read_rows()
    assert {p for _, p in rows} == {"/vsis3/", "/vsigs/", "/vsiaz/", "/vsicurl/"}, rows
    assert {r for r, _ in rows} == {"info", "pixel"}, rows
    v = int(gdal.VersionInfo())
    is_36 = v // 10000 == 306
    wrong = []
    for (read, prefix), cells in sorted(rows.items()):
        path, lab_env, eps = _read_target(lab, small_cog["key"], small_cog["path"], prefix)
        argv = ["gdalinfo", path] if read == "info" else \
            ["gdallocationinfo", "-valonly", path, "1234", "987"]
        measured = {}
        for side, vsitune in (("stock", False), ("vsitune", True)):
            env = lab_client.gdal_env(lab_env, vsitune=vsitune)  # as shipped
            lab.reset()
            p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
            assert p.returncode == 0, (read, prefix, side, p.stderr[-1500:])
            log = lab.log()
            assert all(e["endpoint"] in eps for e in log), (read, prefix, side, log)
            got = dict(collections.Counter(e["kind"] for e in log))
            measured[side] = got
            want = cells[1 if vsitune else 0] if not vsitune or cells[1] is not None \
                else measured["stock"]
            print(f"README row {read} {prefix} {side}: {got}")
            if got != want and (vsitune or is_36):
                wrong.append((read, prefix, side, got, want))
    assert not wrong, wrong
