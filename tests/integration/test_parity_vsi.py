"""test_parity_vsi.py: the VSI answers (VSIStatL, VSIReadDir, VSIReadDirRecursive,
VSIOpenDir, VSIFOpenL + reads) for every parity fixture key and for the prefixes above
them, stock GDAL against GDAL with the plugin (issue 9). One process per side answers
everything for a test group; the comparison is split by field so that each difference is
its own (strict xfail) test and a fix shows up exactly where it lands.
"""

import pytest

from parity import assert_ok, assert_same, both, uploaded

ROOT = "/vsis3/lab/parity"


@pytest.fixture(scope="module")
def keys(lab):
    cases = uploaded(lab)
    return sorted({f for c in cases.values() for f in c.files})


@pytest.fixture(scope="module")
def stats(lab, keys):
    """VSIStatL of every fixture key, in one process per side."""
    paths = [f"{ROOT}/{k}" for k in keys]
    stock, vt = both(lab, "vsi", "stat-every-key", [{"op": "stat_many", "paths": paths}])
    assert all(v is not None for v in stock[0]["value"].values()), stock[0]
    return stock[0]["value"], vt[0]["value"]


def _field(answers, field):
    return {p: (None if st is None else st[field]) for p, st in answers.items()}


@pytest.mark.parametrize("field", ["exists", "size", "mode", "mtime"])
def test_stat_every_key(stats, field):
    stock, vt = stats
    if field == "exists":
        assert_same({p: v is not None for p, v in stock.items()},
                    {p: v is not None for p, v in vt.items()}, "VSIStatL exists")
    else:
        assert_same(_field(stock, field), _field(vt, field), f"VSIStatL {field}")


# Prefixes with and without a trailing slash, the bucket, the root, a missing prefix,
# and names that are a prefix of keys without being a directory.
DIRS = ["/vsis3/", "/vsis3/lab", "/vsis3/lab/", ROOT, ROOT + "/", f"{ROOT}/cog", f"{ROOT}/cog/",
        f"{ROOT}/zarrv2/cube.zarr", f"{ROOT}/zarrv2/cube.zarr/", f"{ROOT}/zarrv2/cube.zarr/cube",
        f"{ROOT}/zarrv3/cube.zarr/data/root", f"{ROOT}/shp", f"{ROOT}/nope", f"{ROOT}/nope/",
        f"{ROOT}/co", f"{ROOT}/cog/scen", "/vsis3/nosuchbucket", "/vsis3/nosuchbucket/x"]

@pytest.mark.parametrize("path", [pytest.param(p, id=p.replace("/vsis3/", "") or "root")
                                  for p in DIRS])
def test_stat_prefix(lab, keys, path):
    probes = [{"op": "stat", "path": path},
              {"op": "stat", "path": path, "flags": ["nature"]},
              {"op": "stat", "path": path, "flags": ["exists", "set_error"]}]
    stock, vt = both(lab, "vsi", f"stat {path}", probes)
    assert_same(stock, vt, f"VSIStatL {path}")


LISTINGS = [
    ("readdir", ROOT), ("readdir", ROOT + "/"), ("readdir", f"{ROOT}/zarrv3/cube.zarr"),
    ("readdir", "/vsis3/lab"), ("readdir", f"{ROOT}/nope"), ("readdir", f"{ROOT}/cog/scene.tif"),
    ("readdir_recursive", f"{ROOT}/zarrv2"), ("readdir_recursive", f"{ROOT}/vrt/"),
    ("opendir", ROOT), ("opendir", f"{ROOT}/zarrv2/cube.zarr"),
]


@pytest.mark.parametrize("op,path", [pytest.param(o, p, id=f"{o}-{p.replace('/vsis3/', '')}")
                                     for o, p in LISTINGS])
def test_listing(lab, keys, op, path):
    probe = {"op": op, "path": path}
    stock, vt = both(lab, "vsi", f"{op} {path}", [probe, dict(probe)])  # twice: cached answer too
    assert_same(stock, vt, f"{op} {path}")


def test_opendir_depth_and_options(lab, keys):
    probes = [{"op": "opendir", "path": ROOT, "depth": 0},
              {"op": "opendir", "path": ROOT, "depth": 1},
              {"op": "opendir", "path": f"{ROOT}/archive", "options": ["NAME_AND_TYPE_ONLY=YES"]},
              {"op": "opendir", "path": f"{ROOT}/zarrv3", "depth": -1}]
    stock, vt = both(lab, "vsi", "opendir depth/options", probes)
    assert_same(stock, vt, "VSIOpenDir")


READS = ["cog/scene.tif", "shp/roads.dbf", "srtm/N45E006.hgt", "world_tfw/scene.tfw",
         "zarrv2/cube.zarr/.zmetadata", "archive/bundle.zip", "nope.tif", "cog/scene.tif.aux.xml"]
@pytest.mark.parametrize("key", READS)
def test_read_bytes(lab, keys, key):
    """VSIFOpenL + whole read + ranges past EOF + seek to the end (VSIStatL of the same
    keys: test_stat_every_key)."""
    path = f"{ROOT}/{key}"
    probes = [{"op": "read", "path": path, "ranges": [[0, 16], [100, 0], [10 ** 9, 10]]}]
    stock, vt = both(lab, "vsi", f"read {key}", probes)
    assert_same(stock, vt, f"read {key}")


@pytest.mark.parametrize("path", [
    pytest.param(f"{ROOT}/zarrv2/cube.zarr", id="zarr-dir"),
    pytest.param(f"{ROOT}/cog", id="dir"),
    pytest.param(f"{ROOT}/cog/", id="dir-slash"),
    pytest.param(f"{ROOT}/zarrv2/cube.zarr/", id="zarr-dir-slash"),
    pytest.param("/vsis3/lab", id="bucket"),
    pytest.param("/vsis3/lab/", id="bucket-slash"),
    pytest.param("/vsis3/nosuchbucket/", id="missing-bucket-slash"),
    pytest.param("/vsis3/nosuchbucket/x/", id="missing-bucket-dir-slash")])
def test_fopen_directory(lab, keys, path):
    """What VSIFOpenL of a directory-like path gives (a handle, and what reading it
    gives; or NULL and GDAL's error), and VSIFOpenExL's VSI error."""
    probes = [{"op": "read", "path": path, "ranges": [[0, 16]]},
              {"op": "fopen_ex", "path": path}]
    stock, vt = both(lab, "vsi", f"fopen {path}", probes)
    assert_same(stock, vt, f"VSIFOpenL {path}")


@pytest.mark.parametrize("path", [f"{ROOT}/cog", f"{ROOT}/zarrv2/cube.zarr"],
                         ids=["dir", "zarr-dir"])
def test_fopen_directory_slash_after_stat(lab, keys, path):
    """VSIFOpenL of "prefix/" after a VSIStatL (or a VSIFOpenL) of "prefix": stock GDAL
    still gives a handle on the directory (its Open does not look at a name whose last
    component is empty); the answers the stat left behind must not turn it into NULL."""
    probes = [{"op": "stat", "path": path},
              {"op": "read", "path": path + "/", "ranges": [[0, 16]]},
              {"op": "read", "path": path},
              {"op": "read", "path": path + "/", "ranges": [[0, 16]]}]
    stock, vt = both(lab, "vsi", f"fopen {path}/ after stat", probes)
    assert stock[1]["value"] is not None, stock[1]
    assert_same(stock, vt, f"VSIFOpenL {path}/ after VSIStatL {path}")


@pytest.mark.parametrize("allowed", [".tif", ".tif,.tfw", "{noext}"])
def test_allowed_extensions(lab, keys, allowed):
    """CPL_VSIL_CURL_ALLOWED_EXTENSIONS: stock GDAL refuses stat and open of anything else."""
    paths = [f"{ROOT}/{k}" for k in ("cog/scene.tif", "world_tfw/scene.tif", "world_tfw/scene.tfw",
                                     "aaigrid/dem.asc", "shp/roads.shp", "zarrv2/cube.zarr/X/0")]
    probes = [{"op": "stat_many", "paths": paths, "fields": ["size"]}]
    probes += [{"op": "read", "path": p, "whole": False, "ranges": [[0, 8]]} for p in paths]
    probes += [{"op": "open", "path": p} for p in paths[:4]]
    stock, vt = both(lab, "vsi", f"allowed-extensions {allowed}", probes,
                     extra={"CPL_VSIL_CURL_ALLOWED_EXTENSIONS": allowed})
    assert_same(stock, vt, f"CPL_VSIL_CURL_ALLOWED_EXTENSIONS={allowed}")


@pytest.mark.parametrize("key", ["cog/scene.tif", "shp/roads.dbf", "nope.tif"])
def test_read_bytes_streaming(lab, keys, key):
    """/vsis3_streaming/ (GDAL's own handler, never the plugin's) beside /vsis3/ in one
    process: both give the same bytes and sizes, whichever is read first."""
    probes = [{"op": "read", "path": f"{ROOT}/{key}"},
              {"op": "read", "path": f"/vsis3_streaming/lab/parity/{key}"},
              {"op": "stat", "path": f"/vsis3_streaming/lab/parity/{key}", "flags": ["size"]}]
    stock, vt = both(lab, "vsi", f"streaming {key}", probes)
    assert_same(stock, vt, f"/vsis3_streaming/ {key}")


@pytest.mark.parametrize("upload", ["multipart", "single"])
def test_streaming_after_overwrite(lab, keys, upload):
    """An object overwritten through /vsis3/ in the process, then stat()ed there: GDAL's
    /vsis3_streaming/ answers from the file-property cache it shares with /vsis3/, so
    stock's streaming stat gives the new size its /vsis3/ stat learned, without a request
    (GDAL autotest test_vsis3_4). A multipart upload (1 MB parts, 1.5 MB written) leaves
    that cache holding the old size until /vsis3/ asks again; a single PUT sets it
    itself. The streaming open and read after it too (size, bytes, the end)."""
    key = "tmp/streaming-overwrite.bin"
    s3, st = f"{ROOT}/{key}", f"/vsis3_streaming/lab/parity/{key}"
    new = ("0123456789abcdef" * 98304) if upload == "multipart" else "x" * 5000
    s3_stat = {"op": "stat_many", "paths": [s3], "fields": ["size", "isdir"]}  # no mtime:
    # Last-Modified is when each side wrote
    probes = [{"op": "setconfig", "options": {"VSIS3_CHUNK_SIZE": "1"}},
              {"op": "write", "path": s3, "data": "old object, 29 bytes long...."},
              s3_stat, {"op": "stat", "path": st},
              {"op": "write", "path": s3, "data": new},
              s3_stat, {"op": "stat", "path": st},
              {"op": "stat", "path": st},
              {"op": "read", "path": st, "ranges": [[0, 16]]},
              {"op": "stat", "path": st}]
    stock, vt = both(lab, "vsi", f"streaming after {upload} overwrite", probes)
    assert_ok(stock, "streaming after overwrite")
    assert stock[6]["value"]["size"] == len(new), stock[6]
    assert_same(stock, vt, f"/vsis3_streaming/ after a {upload} overwrite")


def test_signed_url_and_file_metadata(lab, keys):
    """Calls the router hands to GDAL's own handler: a signed URL (fixed AWS_TIMESTAMP) and
    the object's headers and tags (only fields that do not change per request)."""
    path = f"{ROOT}/cog/scene.tif"
    probes = [{"op": "file_metadata", "path": path, "domain": "HEADERS",
               "keys": ["Content-Length", "ETag", "Last-Modified", "Content-Type"]},
              {"op": "file_metadata", "path": path, "domain": "TAGS"},
              {"op": "file_metadata", "path": f"{ROOT}/nope.tif", "domain": "HEADERS",
               "keys": ["Content-Length"]},
              {"op": "setconfig", "options": {"AWS_TIMESTAMP": "20240102T030405Z"}},
              {"op": "signed_url", "path": path},
              {"op": "signed_url", "path": path, "options": ["EXPIRATION_DELAY=60"]}]
    stock, vt = both(lab, "vsi", "signed-url-metadata", probes)
    assert_ok(stock, "signed url / metadata")
    assert stock[4]["value"] and "X-Amz-Signature=" in stock[4]["value"], stock[4]
    assert stock[0]["value"].get("etag"), stock[0]
    assert_same(stock, vt, "GetSignedURL / GetFileMetadata")


@pytest.mark.parametrize("endpoint", ["h2", "h1tls"])
def test_tls_endpoints(lab, keys, endpoint):
    """Over TLS as on AWS (HTTP/1.1) and over HTTP/2: the same answers as over plain HTTP."""
    from test_parity_formats import raster_probes
    import parity
    cs = parity.uploaded(lab)
    probes = raster_probes(cs["cog"]) + raster_probes(cs["tiled_ovr"])[:1]
    stock, vt = both(lab, "vsi", f"endpoint {endpoint}", probes, endpoint=endpoint)
    assert_ok(stock, endpoint)
    assert stock[0]["value"] is not None, stock[0]
    assert_same(stock[:-2] + stock[-1:], vt[:-2] + vt[-1:], f"over {endpoint}")
