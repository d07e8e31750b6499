"""test_reach_gs.py: GDAL's own /vsigs/ taken over (issue 20, VSITUNE_TAKEOVER_GS=YES),
differential: the same command under stock GDAL (plugin not loaded) and with the plugin,
against the lab's GCS front (GOOG1 HMAC, h1), outputs compared; what each side cost read
from the lab's log.

- gdalinfo -json of a COG, a cold one-pixel read, a window and an overview window (the
  small fixture, 4.9 MB: every read past GDAL's first 16 KB): equal to stock's; the plugin
  side costs 1 request for gdalinfo and 2 for the pixel, no HEAD, no LIST (stock's counts
  recorded beside them in $VT_BUILD_DIR/parity/reach_gs.json and printed);
- a missing object, bad credentials (a wrong HMAC secret): the same exit status and the
  same errors (class and GDAL's words) as stock;
- VSIStatL of the object and of a missing name, ReadDir of the directory: equal;
- every plugin side really served: its exit counters name requests, the lab saw them
  with vsitune's User-Agent on the GCS endpoint, and none carried stock's;
- the knob: with VSITUNE_TAKEOVER_GS unset (its default, NO) the loaded plugin leaves
  /vsigs/ to GDAL (every request stock's) and /vsis3/ still taken over.
"""

import json
import os
import tempfile

import pytest

import fixtures as lab_fixtures
import lab_client
import parity
import test_lab_reach as reach_oracle  # its window script and places

PY = "/usr/bin/python3"
EP = "gcs-h1"
KEY = lab_fixtures.fixture_key("small")
PATH = f"/vsigs/lab/{KEY}"
PIXEL, WINDOW = reach_oracle.PIXEL["small"], reach_oracle.WINDOW["small"]

_VSI_SCRIPT = r'''
import json, sys
from osgeo import gdal
out = {}
for name in sys.argv[1:]:
    st = gdal.VSIStatL(name)
    out["stat " + name] = None if st is None else [st.size, st.IsDirectory(), st.mtime]
    d = name.rsplit("/", 1)[0]
    out["readdir " + d] = sorted(gdal.ReadDir(d) or [])
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def gcs(lab):
    lab.family("gcs")
    path = lab_fixtures.generate("small")
    lab.put_object("lab", KEY, path)
    return lab


def _env(lab, vsitune, extra=None, knob="YES"):
    env = lab_client.gdal_env(lab.family_env(EP, "hmac"), vsitune=vsitune)
    if knob is not None:
        env["VSITUNE_TAKEOVER_GS"] = knob
    env.update(extra or {})
    return env


def _is_list(e):
    return e.get("kind") == "LIST"


def _run(lab, argv, vsitune, extra=None, gdal_lists=False):
    """argv on one side; (result, the lab's requests). The plugin side must have served:
    its exit document counts the requests the lab saw from vsitune on the GCS front, and
    every other request is a listing GDAL's own ReadDir made (gdal_lists) or none is."""
    env = _env(lab, vsitune, extra)
    with tempfile.TemporaryDirectory() as d:
        stats = os.path.join(d, "exit.json")
        env["VSITUNE_STATS_FILE"] = stats
        seq = parity.last_seq(lab)
        cp, _ = lab_client.run_tool(argv, env)
        log = [e for e in lab.log(since=seq) if e.get("endpoint", EP).startswith("gcs")]
        ua_vt = [e for e in log if (e.get("user_agent") or "").startswith(parity.VT_UA)]
        if vsitune:
            assert os.path.exists(stats), f"plugin side: no exit counters ({cp.stderr[-600:]})"
            doc = json.loads(open(stats).read())
            answered = sum(n for kind in doc["http"].values() for cls, n in kind.items()
                           if cls != "none")
            assert answered == len(ua_vt), (doc["http"], log)
            other = [e for e in log if e not in ua_vt and not (gdal_lists and _is_list(e))]
            assert ua_vt and not other, f"plugin side: requests not vsitune's: {other}"
        else:
            assert not os.path.exists(stats), "stock side: the plugin was loaded"
            assert not ua_vt, log
    return {"rc": cp.returncode, "stdout": cp.stdout,
            "errors": parity.parse_errors(cp.stderr)}, log


def _counts(log):
    return {"requests": len(log), "head": sum(e["method"] == "HEAD" for e in log),
            "list": sum(_is_list(e) for e in log),
            "get": sum(e["method"] == "GET" and not _is_list(e) for e in log)}


def _record(what, stock, vt):
    path = lab_client.build_dir() / "parity" / "reach_gs.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(path.read_text()) if path.exists() else {}
    data[what] = {"stock": stock, "vsitune": vt}
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"reach gs {what}: stock {stock} vsitune {vt}")


def _both(lab, argv, extra=None, gdal_lists=False):
    (s, slog), (v, vlog) = (_run(lab, argv, False, extra),
                            _run(lab, argv, True, extra, gdal_lists))
    return s, v, _counts(slog), _counts(vlog)


def test_gdalinfo_one_request(gcs):
    s, v, sc, vc = _both(gcs, ["gdalinfo", "-json", PATH])
    _record("gdalinfo", sc, vc)
    assert s["rc"] == 0, s
    assert json.loads(v["stdout"]) == json.loads(s["stdout"])
    assert v["errors"] == s["errors"]
    assert vc == {"requests": 1, "head": 0, "list": 0, "get": 1}, vc


def test_cold_pixel_two_requests(gcs):
    x, y = PIXEL
    s, v, sc, vc = _both(gcs, ["gdallocationinfo", "-valonly", PATH, str(x), str(y)])
    _record("pixel", sc, vc)
    assert s["rc"] == 0 and s["stdout"].strip(), s
    assert v["stdout"] == s["stdout"] and v["rc"] == 0
    assert vc == {"requests": 2, "head": 0, "list": 0, "get": 2}, vc


def test_window_and_overview(gcs):
    s, v, sc, vc = _both(gcs, [PY, "-c", reach_oracle._WINDOW_SCRIPT, PATH] + [str(n) for n in WINDOW])
    _record("window", sc, vc)
    assert s["rc"] == 0, s
    assert json.loads(v["stdout"]) == json.loads(s["stdout"])
    assert vc["head"] == 0 and vc["list"] == 0, vc


def test_missing_object(gcs):
    s, v, sc, vc = _both(gcs, ["gdalinfo", f"/vsigs/lab/reach/no-such-{os.getpid()}.tif"])
    _record("missing", sc, vc)
    assert s["rc"] != 0
    assert v["rc"] == s["rc"]
    assert parity.errors_match(s["errors"], v["errors"]), (s["errors"], v["errors"])
    assert vc["requests"] >= 1  # the plugin side asked (served it)


def test_bad_credentials(gcs):
    bad = {"GS_SECRET_ACCESS_KEY": "wrong-secret"}
    s, v, sc, vc = _both(gcs, ["gdalinfo", PATH], bad)
    _record("bad_credentials", sc, vc)
    assert s["rc"] != 0
    assert v["rc"] == s["rc"]
    assert parity.errors_match(s["errors"], v["errors"]), (s["errors"], v["errors"])
    assert vc["requests"] >= 1


def test_stat_and_readdir(gcs):
    names = [PATH, f"/vsigs/lab/{KEY.rsplit('/', 1)[0]}/no-such-{os.getpid()}.tif"]
    s, v, sc, vc = _both(gcs, [PY, "-c", _VSI_SCRIPT] + names, gdal_lists=True)
    _record("stat_readdir", sc, vc)
    assert s["rc"] == 0, s
    assert json.loads(v["stdout"]) == json.loads(s["stdout"])
    assert vc["head"] == 0, vc


def test_knob_off_leaves_vsigs_to_gdal(gcs):
    env = _env(gcs, True, knob=None)
    seq = parity.last_seq(gcs)
    cp, _ = lab_client.run_tool(["gdalinfo", "--debug", "on", PATH], env)
    log = [e for e in gcs.log(since=seq) if e.get("endpoint", "").startswith("gcs")]
    assert cp.returncode == 0, cp.stderr[-800:]
    assert "vsitune" in cp.stderr and "active on /vsis3/" in cp.stderr, cp.stderr[-800:]
    assert log and not [e for e in log if (e.get("user_agent") or "").startswith(parity.VT_UA)]
    assert _counts(log)["list"] >= 1, log  # stock's own open lists the directory
