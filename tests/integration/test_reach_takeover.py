"""test_reach_takeover.py: GDAL's own /vsigs/ and /vsiaz/ taken over (issue 20,
VSITUNE_TAKEOVER_GS=YES, VSITUNE_TAKEOVER_AZ=YES), differential: the same command under
stock GDAL (plugin not loaded) and with the plugin, against the lab's GCS front (GOOG1
HMAC, h1) and Azurite (shared key, h1), outputs compared; what each side cost read from
the lab's log.

- gdalinfo -json of a COG, a cold one-pixel read, a window and an overview window (the
  small fixture, 4.9 MB: every read past GDAL's first 16 KB): equal to stock's; the plugin
  side costs 1 request for gdalinfo and 2 for the pixel, no HEAD, no LIST (stock's counts
  recorded beside them in $VT_BUILD_DIR/parity/reach_<family>.json and printed);
- a missing object, bad credentials (a wrong secret): the same exit status and the
  same errors (class and GDAL's words) as stock;
- VSIStatL of the object and of a missing name, ReadDir of the directory: equal;
- every plugin side really served: its exit counters name requests, the lab saw them
  with vsitune's User-Agent on the family's endpoint, and none carried stock's;
- the knob: set to NO, the loaded plugin leaves the prefix to GDAL (every request stock's)
  and /vsis3/ still taken over; unset, /vsiaz/ is taken over (its default, YES) and
  /vsigs/ left to GDAL (NO).
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
KEY = lab_fixtures.fixture_key("small")
# family: (endpoint, auth mode, GDAL prefix, the knob, what makes the credentials wrong)
FAMILIES = {
    "gs": ("gcs-h1", "hmac", "/vsigs/", "VSITUNE_TAKEOVER_GS",
           {"GS_SECRET_ACCESS_KEY": "wrong-secret"}),
    "az": ("az-h1", "shared_key", "/vsiaz/", "VSITUNE_TAKEOVER_AZ",
           {"AZURE_STORAGE_ACCESS_KEY": "bm90IHRoZSBrZXk="}),
}
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


class Fam:
    """One family's lab: its endpoint, environment, paths and knob."""

    def __init__(self, lab, name):
        self.lab, self.name = lab, name
        self.ep, self.auth, self.prefix, self.knob, self.bad = FAMILIES[name]
        self.path = f"{self.prefix}lab/{KEY}"

    def log(self, since):
        fam = self.ep.split("-")[0]
        return [e for e in self.lab.log(since=since)
                if (e.get("endpoint") or "").startswith(fam)]


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def fam(lab, request):
    name = request.param
    path = lab_fixtures.generate("small")
    if name == "gs":
        lab.family("gcs")
        lab.put_object("lab", KEY, path)  # the GCS front serves s3rver's buckets
    else:
        lab.put_object("lab", KEY, path, family="az")
    return Fam(lab, name)


def _env(fam, vsitune, extra=None, knob="YES"):
    env = lab_client.gdal_env(fam.lab.family_env(fam.ep, fam.auth), vsitune=vsitune)
    if knob is not None:
        env[fam.knob] = knob
    env.update(extra or {})
    return env


def _is_list(e):
    return e.get("kind") == "LIST"


def _run(fam, argv, vsitune, extra=None, gdal_lists=False):
    """argv on one side; (result, the lab's requests). The plugin side must have served:
    its exit document counts the requests the lab saw from vsitune on the GCS front, and
    every other request is a listing GDAL's own ReadDir made (gdal_lists) or none is."""
    env = _env(fam, vsitune, extra)
    with tempfile.TemporaryDirectory() as d:
        stats = os.path.join(d, "exit.json")
        env["VSITUNE_STATS_FILE"] = stats
        seq = parity.last_seq(fam.lab)
        cp, _ = lab_client.run_tool(argv, env)
        log = fam.log(seq)
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


def _record(fam, what, stock, vt):
    path = lab_client.build_dir() / "parity" / f"reach_{fam.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(path.read_text()) if path.exists() else {}
    data[what] = {"stock": stock, "vsitune": vt}
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"reach {fam.name} {what}: stock {stock} vsitune {vt}")


def _both(fam, argv, extra=None, gdal_lists=False):
    (s, slog), (v, vlog) = (_run(fam, argv, False, extra),
                            _run(fam, argv, True, extra, gdal_lists))
    return s, v, _counts(slog), _counts(vlog)


def test_gdalinfo_one_request(fam):
    s, v, sc, vc = _both(fam, ["gdalinfo", "-json", fam.path])
    _record(fam, "gdalinfo", sc, vc)
    assert s["rc"] == 0, s
    assert json.loads(v["stdout"]) == json.loads(s["stdout"])
    assert v["errors"] == s["errors"]
    assert vc == {"requests": 1, "head": 0, "list": 0, "get": 1}, vc


def test_cold_pixel_two_requests(fam):
    x, y = PIXEL
    s, v, sc, vc = _both(fam, ["gdallocationinfo", "-valonly", fam.path, str(x), str(y)])
    _record(fam, "pixel", sc, vc)
    assert s["rc"] == 0 and s["stdout"].strip(), s
    assert v["stdout"] == s["stdout"] and v["rc"] == 0
    assert vc == {"requests": 2, "head": 0, "list": 0, "get": 2}, vc


def test_window_and_overview(fam):
    s, v, sc, vc = _both(fam, [PY, "-c", reach_oracle._WINDOW_SCRIPT, fam.path] + [str(n) for n in WINDOW])
    _record(fam, "window", sc, vc)
    assert s["rc"] == 0, s
    assert json.loads(v["stdout"]) == json.loads(s["stdout"])
    assert vc["head"] == 0 and vc["list"] == 0, vc


def test_missing_object(fam):
    s, v, sc, vc = _both(fam, ["gdalinfo", f"{fam.prefix}lab/reach/no-such-{os.getpid()}.tif"])
    _record(fam, "missing", sc, vc)
    assert s["rc"] != 0
    assert v["rc"] == s["rc"]
    assert parity.errors_match(s["errors"], v["errors"]), (s["errors"], v["errors"])
    assert vc["requests"] >= 1  # the plugin side asked (served it)


def test_bad_credentials(fam):
    s, v, sc, vc = _both(fam, ["gdalinfo", fam.path], fam.bad)
    _record(fam, "bad_credentials", sc, vc)
    assert s["rc"] != 0
    assert v["rc"] == s["rc"]
    assert parity.errors_match(s["errors"], v["errors"]), (s["errors"], v["errors"])
    assert vc["requests"] >= 1


def test_stat_and_readdir(fam):
    names = [fam.path, f"{fam.prefix}lab/{KEY.rsplit('/', 1)[0]}/no-such-{os.getpid()}.tif"]
    s, v, sc, vc = _both(fam, [PY, "-c", _VSI_SCRIPT] + names, gdal_lists=True)
    _record(fam, "stat_readdir", sc, vc)
    assert s["rc"] == 0, s
    assert json.loads(v["stdout"]) == json.loads(s["stdout"])
    assert vc["head"] == 0, vc


def test_knob_off_leaves_the_prefix_to_gdal(fam):
    env = _env(fam, True, knob="NO")
    seq = parity.last_seq(fam.lab)
    cp, _ = lab_client.run_tool(["gdalinfo", "--debug", "on", fam.path], env)
    log = fam.log(seq)
    assert cp.returncode == 0, cp.stderr[-800:]
    assert "vsitune" in cp.stderr and "active on /vsis3/" in cp.stderr, cp.stderr[-800:]
    assert log and not [e for e in log if (e.get("user_agent") or "").startswith(parity.VT_UA)]
    assert _counts(log)["list"] >= 1, log  # stock's own open lists the directory


# the knob's default, per family: /vsiaz/ is taken over unless told otherwise
DEFAULT_ON = {"gs": False, "az": True}


def test_knob_default(fam):
    """With the knob unset, /vsiaz/ is served by vsitune (every request with its
    User-Agent, no LIST) and /vsigs/ is left to GDAL."""
    env = _env(fam, True, knob=None)
    seq = parity.last_seq(fam.lab)
    cp, _ = lab_client.run_tool(["gdalinfo", fam.path], env)
    log = fam.log(seq)
    assert cp.returncode == 0, cp.stderr[-800:]
    vt = [e for e in log if (e.get("user_agent") or "").startswith(parity.VT_UA)]
    if DEFAULT_ON[fam.name]:
        assert log and len(vt) == len(log) and _counts(log)["list"] == 0, log
    else:
        assert log and not vt, log


_TWICE_SCRIPT = r'''
import json, sys
from osgeo import gdal
gdal.UseExceptions()
out = []
for i in range(2):
    errs = []
    gdal.PushErrorHandler(lambda c, n, m: errs.append([c, n, m]))
    try:
        gdal.OpenEx(sys.argv[1], gdal.OF_RASTER | gdal.OF_VERBOSE_ERROR)
    except Exception as e:
        errs.append(["exc", str(e)])
    gdal.PopErrorHandler()
    out.append(errs)
print(json.dumps(out))
'''


def test_missing_object_twice(fam):
    """The same missing name opened twice in one process: the second open is worded as
    stock words a failure it remembers (nothing more on 3.6, its cached status from 3.10)."""
    name = f"{fam.prefix}lab/reach/twice-{os.getpid()}.tif"
    s, v, sc, vc = _both(fam, [PY, "-c", _TWICE_SCRIPT, name])
    _record(fam, "missing_twice", sc, vc)
    a, b = json.loads(s["stdout"]), json.loads(v["stdout"])
    assert len(a) == len(b) == 2
    for x, y in zip(a, b):
        assert parity.errors_match([e for e in x if e[0] != "exc"],
                                   [e for e in y if e[0] != "exc"]), (a, b)
        # the exception is GDAL's words alone: equal, not merely containing stock's
        assert [parity._norm_msg(e[1]) for e in x if e[0] == "exc"] == \
            [parity._norm_msg(e[1]) for e in y if e[0] == "exc"], (a, b)
