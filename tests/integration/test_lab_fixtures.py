"""test_lab_fixtures.py: the generated fixture COGs are what the other tests assume.

Deterministic (same parameters, same pixels), a real COG with the layout of a
Sentinel-2 L2A band (DEFLATE + predictor 2, 512x512 tiles, internal overviews,
nodata 0), content that looks like reflectance rather than noise, and a prefix with
>= 200 sibling keys so that a LIST costs what it costs.
"""

import re
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from osgeo import gdal

import fixtures
from test_lab import request

gdal.UseExceptions()


def read(path):
    ds = gdal.Open(str(path))  # keep the dataset alive while its band is read
    return ds.GetRasterBand(1).ReadAsArray()


@pytest.fixture(scope="module")
def small_twice(tmp_path_factory, monkeypatch_module):
    """The small fixture generated from scratch in two separate cache dirs."""
    paths = []
    for name in ("a", "b"):
        d = tmp_path_factory.mktemp(f"fix-{name}")
        monkeypatch_module.setenv("VT_FIXTURE_DIR", str(d))
        paths.append(fixtures.generate("small"))
    return paths


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_generation_is_deterministic(small_twice):
    a, b = small_twice
    assert a.parent != b.parent
    assert np.array_equal(read(a), read(b))


def test_cache_hit_returns_same_file(small_twice, monkeypatch):
    monkeypatch.setenv("VT_FIXTURE_DIR", str(small_twice[1].parent))
    before = small_twice[1].stat().st_mtime_ns
    assert fixtures.generate("small") == small_twice[1]
    assert small_twice[1].stat().st_mtime_ns == before


def test_cog_layout(small_twice):
    path = small_twice[0]
    ds = gdal.Open(str(path))
    band = ds.GetRasterBand(1)
    assert (ds.RasterXSize, ds.RasterYSize) == (2048, 2048)
    assert band.DataType == gdal.GDT_UInt16
    assert band.GetBlockSize() == [512, 512]
    assert band.GetNoDataValue() == 0
    assert band.GetOverviewCount() >= 2
    img = ds.GetMetadata("IMAGE_STRUCTURE")
    assert img.get("COMPRESSION") == "DEFLATE" and img.get("PREDICTOR") == "2"
    assert img.get("LAYOUT") == "COG"
    # The COG driver's own validation: header ghost area, IFDs before data.
    info = subprocess.run(["gdalinfo", str(path)], capture_output=True, text=True).stdout
    assert "LAYOUT=COG" in info


def test_content_looks_like_reflectance(small_twice):
    data = read(small_twice[0]).astype(np.float64)
    valid = data > 0
    # A nodata border (the swath edge), but mostly valid pixels.
    assert 0.05 < 1 - valid.mean() < 0.5
    assert data.max() <= 10000 and data[valid].min() >= 1
    v = data[valid]
    assert 1000 < np.median(v) < 6000 and v.std() > 200
    # Not noise: neighbouring pixels are strongly correlated.
    left, right = data[:, :-1], data[:, 1:]
    both = (left > 0) & (right > 0)
    corr = np.corrcoef(left[both], right[both])[0, 1]
    assert corr > 0.8
    # But not flat either: compresses, though far from perfectly.
    ratio = small_twice[0].stat().st_size / data.nbytes
    assert 0.1 < ratio < 0.9


def test_keys_are_s2_like():
    key = fixtures.fixture_key("s2")
    assert re.fullmatch(r"scenes/S2[AB]_MSIL2A_\d{8}T\d{6}_N\d{4}_R\d{3}_T\d{2}[A-Z]{3}_\d{8}T\d{6}_B04\.tif",
                        key)
    sib = fixtures.sibling_keys()
    assert len(sib) >= 200 and len(set(sib)) == len(sib)
    assert key not in sib and all(k.startswith(fixtures.PREFIX) for k in sib)


def test_prefix_listing_has_the_siblings(lab, small_cog):
    status, _, body = request(lab, "GET", "lab", query=[("prefix", fixtures.PREFIX),
                                                        ("delimiter", "/")])
    assert status == 200
    root = ET.fromstring(body)
    keys = [e.text for e in root.iter() if e.tag.endswith("Key")]
    assert small_cog["key"] in keys
    assert len(keys) >= 201
    (e,) = lab.log()
    assert e["kind"] == "LIST" and e["bytes_sent"] > 40000  # what a LIST costs here
