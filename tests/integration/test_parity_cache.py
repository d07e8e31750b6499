"""test_parity_cache.py: freshness, stock GDAL against GDAL with the plugin (issue 9).

An object read, then overwritten on the server, then read again in the same process, with
each of GDAL's cache controls: none, VSICurlClearCache(), VSICurlPartialClearCache(prefix)
and CPL_VSIL_CURL_NON_CACHED. Whatever stock GDAL answers after the overwrite (fresh, or
its cached answer), the plugin must answer the same: VSIStatL size, the bytes, the raster,
and the listing of the prefix (a key added beside it). And two servers: the same bucket and
key on two endpoints, AWS_S3_ENDPOINT switched between reads in one process, must give each
server's own bytes.
"""

import pytest

import lab_client
from parity import Side, assert_ok, assert_same, last_seq, records, summarise

PREFIX = "parity-rw"


@pytest.fixture(scope="module")
def versions(tmp_path_factory):
    """Two GeoTIFFs with different size and pixels: what the key holds before and after."""
    import numpy as np
    from osgeo import gdal
    gdal.UseExceptions()
    d = tmp_path_factory.mktemp("versions")
    out = []
    for i, n in enumerate((64, 96)):
        p = d / f"v{i}.tif"
        ds = gdal.GetDriverByName("GTiff").Create(str(p), n, n, 1, gdal.GDT_Byte)
        ds.GetRasterBand(1).WriteArray((np.arange(n * n, dtype=np.uint32).reshape(n, n) * (3 + i) % 251)
                                       .astype(np.uint8))
        ds.SetGeoTransform([0, 1 + i, 0, 0, 0, -1])
        ds = None
        out.append(p.read_bytes())
    return out


def _state(path, prefix):
    return [{"op": "stat", "path": path},
            {"op": "read", "path": path},
            {"op": "raster", "path": path},
            {"op": "readdir", "path": prefix}]


def _strip_mtime(results):
    # st_mtime has its own test (test_parity_vsi); here only freshness matters.
    for r in results:
        if r["op"] == "stat" and isinstance(r.get("value"), dict):
            r["value"].pop("mtime", None)
            r["value"].pop("mode", None)
    return results


CONTROLS = {
    "none": ([], {}),
    "clear": ([{"op": "clear_cache"}], {}),
    "partial": ([{"op": "partial_clear_cache", "prefix": f"/vsis3/lab/{PREFIX}/partial/"}], {}),
    "noncached": ([], {"CPL_VSIL_CURL_NON_CACHED": f"/vsis3/lab/{PREFIX}/noncached/"}),
}

@pytest.mark.parametrize("control", [
    pytest.param("none"),
    pytest.param("clear"),
    pytest.param("partial"),
    pytest.param("noncached"),
])
def test_overwrite_between_reads(lab, versions, control):
    actions, env = CONTROLS[control]
    key = f"{PREFIX}/{control}/scene.tif"
    path = f"/vsis3/lab/{key}"
    prefix = f"/vsis3/lab/{PREFIX}/{control}"
    answers = {}
    for vsitune in (False, True):
        lab.put_object("lab", key, versions[0])
        lab.delete_object("lab", f"{PREFIX}/{control}/added.txt")
        name = "vsitune" if vsitune else "stock"
        seq = last_seq(lab)
        with Side(lab, vsitune, env) as side:
            before = side.run(_state(path, prefix))
            lab.put_object("lab", key, versions[1])
            lab.put_object("lab", f"{PREFIX}/{control}/added.txt", b"new key beside it\n")
            after = side.run(actions + _state(path, prefix))
        records().add("overwrite", control, name, summarise(lab.log(since=seq)))
        answers[name] = _strip_mtime(before) + _strip_mtime(after)
    assert answers["stock"][1]["value"]["size"] == len(versions[0])
    assert_same(answers["stock"], answers["vsitune"], f"overwrite, cache control {control}")


def test_two_endpoints_one_process(lab, versions):
    """Bucket lab, key k on two servers; AWS_S3_ENDPOINT switched between reads."""
    key = f"{PREFIX}/endpoints/scene.tif"
    path = f"/vsis3/lab/{key}"
    other = lab_client.Lab().start()
    try:
        lab.put_object("lab", key, versions[0])
        other.put_object("lab", key, versions[1])
        answers = {}
        for vsitune in (False, True):
            name = "vsitune" if vsitune else "stock"
            seq, seq2 = last_seq(lab), last_seq(other)
            with Side(lab, vsitune) as side:
                a = side.run(_state(path, f"/vsis3/lab/{PREFIX}/endpoints"))
                b = side.run([{"op": "setconfig", "options": other.env("h1")}]
                             + _state(path, f"/vsis3/lab/{PREFIX}/endpoints"))
                c = side.run([{"op": "setconfig", "options": lab.env("h1")}]
                             + _state(path, f"/vsis3/lab/{PREFIX}/endpoints"))
            records().add("two-endpoints", "first", name, summarise(lab.log(since=seq)))
            records().add("two-endpoints", "second", name, summarise(other.log(since=seq2)))
            answers[name] = _strip_mtime(a) + _strip_mtime(b) + _strip_mtime(c)
        s = answers["stock"]
        assert s[1]["value"]["size"] == len(versions[0]), "stock: first server's object"
        assert s[6]["value"]["size"] == len(versions[1]), "stock: second server's object"
        assert_same(answers["stock"], answers["vsitune"], "AWS_S3_ENDPOINT switched")
    finally:
        other.stop()


def test_gdal_writes_then_reads(lab, versions):
    """The user changes objects through GDAL itself (VSIFOpenL "wb", Unlink, Rename) and reads
    them back in the same process: every answer fresh, as stock GDAL gives it."""
    base = f"/vsis3/lab/{PREFIX}/own"
    a, b = f"{base}/a.tif", f"{base}/b.tif"

    def write(path, data):
        return {"op": "write", "path": path, "data": data}

    steps = [write(a, "first version"), {"op": "stat", "path": a}, {"op": "read", "path": a},
             write(a, "second, longer version"), {"op": "stat", "path": a}, {"op": "read", "path": a},
             {"op": "readdir", "path": base},
             {"op": "rename", "src": a, "dst": b}, {"op": "stat", "path": a}, {"op": "stat", "path": b},
             {"op": "read", "path": b}, {"op": "readdir", "path": base},
             {"op": "unlink", "path": b}, {"op": "stat", "path": b}, {"op": "read", "path": b},
             {"op": "readdir", "path": base}]
    answers = {}
    for vsitune in (False, True):
        name = "vsitune" if vsitune else "stock"
        for k in ("a.tif", "b.tif"):
            lab.delete_object("lab", f"{PREFIX}/own/{k}")
        seq = last_seq(lab)
        with Side(lab, vsitune) as side:
            answers[name] = _strip_mtime(side.run(steps))
        records().add("own-writes", "sequence", name, summarise(lab.log(since=seq)))
    assert_ok(answers["stock"], "own writes")
    assert answers["stock"][5]["value"]["size"] == len("second, longer version")
    assert_same(answers["stock"], answers["vsitune"], "writes through GDAL, then reads")
