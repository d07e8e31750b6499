"""test_parity_autotest.py: what the user gets in the GDAL autotests that pin a request
sequence the plugin removes on purpose (test_gdal_autotest.py PINNED), shown on the lab,
stock GDAL against GDAL with the plugin, one process per side driven step by step.
"""

import pytest

from parity import Side, assert_same, last_seq, records, summarise, uploaded

ROOT = "/vsis3/lab/parity"


@pytest.fixture(scope="module")
def fixtures(lab):
    return uploaded(lab)


def _steps(lab, case, steps, extra=None):
    """Run each list of probes in turn in one process per side; between steps, the
    callables in `steps` run in the test (to change the server). Returns (stock, vt)."""
    out = {}
    for vsitune in (False, True):
        name = "vsitune" if vsitune else "stock"
        seq = last_seq(lab)
        res = []
        with Side(lab, vsitune, extra) as side:
            for st in steps:
                if callable(st):
                    st()
                else:
                    res.append(side.run(st))
        records().add("autotest-pins", case, name, summarise(lab.log(since=seq)))
        out[name] = res
    return out["stock"], out["vsitune"]


def test_open_after_credentials_change(lab, fixtures):
    """gcore/vsis3.py::test_vsis3_open_after_config_option_change: an open refused with one
    key is refused again with nothing changed, and succeeds once AWS_ACCESS_KEY_ID and the
    secret are changed in the same process."""
    path = f"{ROOT}/cog/scene.tif"
    good = lab.env("h1")
    bad = {"AWS_ACCESS_KEY_ID": "AKIANOTKNOWNBYTHELAB", "AWS_SECRET_ACCESS_KEY": "x"}
    probe = [{"op": "open", "path": path, "kind": "raster"},
             {"op": "fopen_ex", "path": path}]
    stock, vt = _steps(lab, "open-after-credentials-change", [
        [{"op": "setconfig", "options": bad}] + probe,
        probe,
        [{"op": "setconfig", "options": {k: good[k] for k in
                                         ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}}] + probe,
    ])
    assert stock[0][1]["value"] is None and stock[2][1]["value"] is not None, stock
    # The 403s are compared by test_parity_errors; here only what opens and what does not.
    for s in (stock, vt):
        for step in s:
            for r in step:
                r.pop("errors", None)
                if isinstance(r.get("value"), dict):
                    r["value"].pop("vsi_error", None)
    assert_same(stock, vt, "open after a credentials change")


def test_readdir_after_open(lab, fixtures):
    """gcore/vsis3.py::test_vsis3_readdir, what the user sees: an open, then the listing of
    its directory, its size from a stat, ReadDir of the file itself (None), an unrelated
    partial cache clear (answers unchanged), then a partial clear of the directory."""
    d = f"{ROOT}/vrt"
    f = f"{d}/left.tif"
    stock, vt = _steps(lab, "readdir-after-open", [[
        {"op": "open", "path": f, "kind": "raster"},
        {"op": "readdir", "path": d},
        {"op": "stat", "path": f, "flags": ["size"]},
        {"op": "readdir", "path": d},
        {"op": "readdir", "path": f},
        {"op": "partial_clear_cache", "prefix": "/vsis3/lab/unrelated"},
        {"op": "stat", "path": f, "flags": ["size"]},
        {"op": "readdir", "path": d},
        {"op": "partial_clear_cache", "prefix": d},
        {"op": "stat", "path": f, "flags": ["size"]},
        {"op": "readdir", "path": d},
    ]])
    for s in (stock, vt):  # st_mode and st_mtime have their own tests (test_parity_vsi)
        for r in s[0]:
            if r["op"] == "stat" and r["value"]:
                r["value"] = {"size": r["value"]["size"], "isreg": r["value"]["isreg"]}
    assert_same(stock, vt, "readdir after open")


def test_missing_names_in_one_directory(lab, fixtures):
    """gcore/vsis3.py::test_vsis3_no_useless_requests, what the user sees: two failed opens
    and a failed stat of names missing from one directory (no error raised by either)."""
    d = f"{ROOT}/cog"
    stock, vt = _steps(lab, "missing-names", [[
        {"op": "read", "path": f"{d}/foo.txt"},
        {"op": "read", "path": f"{d}/bar.txt"},
        {"op": "stat", "path": f"{d}/baz.txt"},
        {"op": "stat", "path": f"{d}/baz.tif"},
        {"op": "read", "path": f"{d}/qux.tif"},
    ]])
    assert all(r["value"] is None for r in stock[0]), stock
    assert_same(stock, vt, "missing names")
