"""test_parity_options.py: GDAL options a user sets, stock GDAL against GDAL with the plugin
(issue 9), on the lab. What is compared is what the user gets: the open succeeds or fails the
same way, and what the server received where the option is about the request (headers).

- GDAL_HTTP_HEADERS / GDAL_HTTP_HEADER_FILE: the header reaches the server on the reads.
- Path-specific options (gdal.SetPathSpecificOption, gdal.SetCredential): per-bucket keys
  while the global ones are wrong.
- CPL_AWS_CREDENTIALS_FILE (GDAL's name) and AWS_CONFIG_FILE, as real files and as /vsimem/.
"""

import pytest

from parity import VT_UA, Side, assert_same, last_seq, records, summarise, uploaded

PATH = "/vsis3/lab/parity/cog/scene.tif"
PROBES = [{"op": "open", "path": PATH, "kind": "raster"},
          {"op": "read", "path": PATH, "whole": False, "ranges": [[100000, 10]]}]


@pytest.fixture(scope="module")
def fixtures(lab):
    return uploaded(lab)


def _sides(lab, steps_for, extra_for=lambda vsitune: None):
    """steps_for(vsitune) -> list of probe lists, run in one process per side; returns
    ({side: results}, {side: the lab log slice})."""
    out, logs = {}, {}
    for vsitune in (False, True):
        name = "vsitune" if vsitune else "stock"
        seq = last_seq(lab)
        with Side(lab, vsitune, extra_for(vsitune)) as side:
            out[name] = [side.run(step) for step in steps_for(vsitune)]
        logs[name] = lab.log(since=seq)
    return out, logs


def _carried(log, header, value):
    """Did the server see `header: value` on every read request (and on at least one)?"""
    reads = [e for e in log if e["method"] in ("GET", "HEAD")]
    got = [(e.get("xhdr") or {}).get(header) == value for e in reads]
    return {"reads": bool(reads), "every_read": all(got) and bool(got)}


@pytest.mark.parametrize("how", ["headers", "header_file"])
def test_http_headers(lab, fixtures, tmp_path, how):
    if how == "headers":
        env = {"GDAL_HTTP_HEADERS": 'X-Parity-Probe: one,"X-Parity-Other: two, with comma"'}
    else:
        f = tmp_path / "headers.txt"
        f.write_text("X-Parity-Probe: one\nX-Parity-Other: two, with comma\n")
        env = {"GDAL_HTTP_HEADER_FILE": str(f)}
    out, logs = _sides(lab, lambda vt: [PROBES], lambda vt: env)
    for side in ("stock", "vsitune"):
        records().add("options", how, side, summarise(logs[side]))
        out[side].append({"op": "server", "value": {
            "probe": _carried(logs[side], "x-parity-probe", "one"),
            "other": _carried(logs[side], "x-parity-other", "two, with comma")}})
    assert out["stock"][-1]["value"]["probe"]["every_read"], "stock GDAL did not send the header"
    assert_same(out["stock"], out["vsitune"], how)


@pytest.mark.parametrize("api", ["SetPathSpecificOption", "SetCredential"])
def test_path_specific_credentials(lab, fixtures, api):
    good = lab.env("h1")
    wrong = {"AWS_ACCESS_KEY_ID": "AKIANOTKNOWNBYTHELAB", "AWS_SECRET_ACCESS_KEY": "wrong"}
    keys = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
    code = {"op": "path_options", "api": api, "prefix": "/vsis3/lab/parity/cog",
            "options": {k: good[k] for k in keys}}

    def steps(vsitune):
        return [[{"op": "setconfig", "options": wrong}, code] + PROBES,
                [{"op": "open", "path": "/vsis3/lab/parity/striped/scene.tif", "kind": "raster"}]]
    out, logs = _sides(lab, steps)
    for side in out:
        records().add("options", f"path-specific {api}", side, summarise(logs[side]))
        for step in out[side]:
            for r in step:
                r.pop("errors", None)  # the failure's wording: test_parity_errors
    assert out["stock"][0][2]["value"] is not None, out["stock"]
    assert out["stock"][1][0]["value"] is None, "stock: the global wrong keys apply elsewhere"
    assert_same(out["stock"], out["vsitune"], f"path-specific credentials ({api})")


CREDS = "[default]\naws_access_key_id = {AWS_ACCESS_KEY_ID}\naws_secret_access_key = {AWS_SECRET_ACCESS_KEY}\n"
@pytest.mark.parametrize("option,where", [
    ("CPL_AWS_CREDENTIALS_FILE", "file"), ("CPL_AWS_CREDENTIALS_FILE", "vsimem"),
    ("AWS_CONFIG_FILE", "file"), ("AWS_CONFIG_FILE", "vsimem")])
def test_credentials_files(lab, fixtures, tmp_path, option, where):
    text = CREDS.format(**lab.env("h1"))
    if where == "file":
        f = tmp_path / "aws_file"
        f.write_text(text)
        name, pre = str(f), []
    else:
        name = "/vsimem/parity_aws_file"
        pre = [{"op": "write", "path": name, "data": text}]
    env = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "HOME": str(tmp_path), option: name}
    out, logs = _sides(lab, lambda vt: [pre + [{"op": "setconfig", "options": {option: name}}]
                                        + PROBES], lambda vt: env)
    for side in out:
        records().add("options", f"{option} {where}", side, summarise(logs[side]))
    assert out["stock"][0][-2]["value"] is not None, out["stock"]
    assert_same(out["stock"], out["vsitune"], f"{option} on {where}")


OTHER = "/vsis3/lab/parity/striped/scene.tif"


def _per_prefix(log, ua, header):
    """What the server saw on the reads of each prefix: the path-specific User-Agent on
    any, the path-specific header on every one, and whether vsitune's own User-Agent
    served any (the plugin side really read it)."""
    out = {}
    for name, pre in (("cog", "parity/cog/"), ("striped", "parity/striped/")):
        reads = [e for e in log if e["method"] in ("GET", "HEAD") and
                 (e.get("key") or "").startswith(pre)]
        out[name] = {"reads": bool(reads),
                     "path_ua": any((e.get("user_agent") or "") == ua for e in reads),
                     "path_header": bool(reads) and all(
                         (e.get("xhdr") or {}).get(header) == "yes" for e in reads),
                     "vt_ua": any((e.get("user_agent") or "").startswith(VT_UA)
                                  for e in reads)}
    return out


def test_path_specific_http_options(lab, fixtures):
    """GDAL's HTTP options set for one prefix and not another (issue 20): a User-Agent and
    an extra header on parity/cog, a dead proxy on parity/striped. Whatever stock GDAL
    does with each (3.6 reads them from the configuration only; 3.7+ per path, except
    GDAL_HTTP_USERAGENT, which no release reads per path), the plugin does: the same
    answers, the same path-specific headers on the same prefixes, server-side; and the
    plugin side served its reads (vsitune's User-Agent on them)."""
    ua, header = "path-ua/1", "x-parity-path"
    steps = [[{"op": "path_options", "prefix": "/vsis3/lab/parity/cog",
               "options": {"GDAL_HTTP_USERAGENT": ua, "GDAL_HTTP_HEADERS": "X-Parity-Path: yes"}},
              {"op": "path_options", "prefix": "/vsis3/lab/parity/striped",
               "options": {"GDAL_HTTP_PROXY": "http://127.0.0.1:9", "GDAL_HTTP_MAX_RETRY": "0"}}]
             + PROBES + [{"op": "open", "path": OTHER, "kind": "raster"}]]
    out, logs = _sides(lab, lambda vt: steps)
    seen = {}
    for side in out:
        records().add("options", "path-specific HTTP options", side, summarise(logs[side]))
        seen[side] = _per_prefix(logs[side], ua, header)
        for r in out[side][0]:
            r.pop("errors", None)  # the failure's wording: test_parity_errors
    assert out["stock"][0][2]["value"] is not None, out["stock"]  # the cog opened
    assert seen["stock"]["cog"]["reads"], seen
    assert seen["vsitune"]["cog"]["vt_ua"], ("the plugin did not serve the cog", seen)
    assert_same(out["stock"], out["vsitune"], "path-specific HTTP options")
    for name in ("cog", "striped"):
        s, v = seen["stock"][name], seen["vsitune"][name]
        assert (s["path_ua"], s["path_header"]) == (v["path_ua"], v["path_header"]), seen
        assert not s["path_ua"], ("stock sent a path-specific User-Agent", seen)
    assert not seen["stock"]["striped"]["path_header"], seen


def test_empty_proxy_turns_off_the_environment_proxy(lab, fixtures):
    """GDAL_HTTP_PROXY set to an empty value: GDAL hands "" to curl, which then uses no
    proxy at all, not even the environment's https_proxy (a dead one here; the lab's
    HTTPS endpoint). Without it, the environment's proxy applies to both sides. The same
    answers, and the plugin side served the reads."""
    from parity import side_env
    steps = [[{"op": "setconfig", "options": {"GDAL_HTTP_PROXY": ""}}] + PROBES,
             [{"op": "setconfig", "options": {"GDAL_HTTP_PROXY": None}},
              {"op": "open", "path": OTHER, "kind": "raster"}]]
    out, logs = {}, {}
    for vsitune in (False, True):
        name = "vsitune" if vsitune else "stock"
        env = side_env(lab, vsitune, None, "h1tls")
        env.update({"https_proxy": "http://127.0.0.1:9", "GDAL_HTTP_MAX_RETRY": "0"})
        seq = last_seq(lab)
        with Side(lab, vsitune, env=env) as side:
            out[name] = [side.run(step) for step in steps]
        logs[name] = lab.log(since=seq)
        records().add("options", "empty GDAL_HTTP_PROXY", name, summarise(logs[name]))
        for step in out[name]:
            for r in step:
                r.pop("errors", None)  # the dead proxy's words are curl's
    assert out["stock"][0][1]["value"] is not None, ("stock did not open past the proxy", out)
    assert out["stock"][1][1]["value"] is None, ("stock: the environment's proxy unused", out)
    assert any((e.get("user_agent") or "").startswith(VT_UA) for e in logs["vsitune"]), \
        "the plugin did not serve the reads"
    assert_same(out["stock"], out["vsitune"], "empty GDAL_HTTP_PROXY")


CA_NAMES = ("GDAL_CURL_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")


def test_path_specific_unsafessl(lab, fixtures):
    """GDAL_HTTP_UNSAFESSL on the lab's TLS endpoint (a self-signed certificate), no CA
    option set: set for parity/cog only, GDAL reads it from the configuration alone (on
    every release), so the cog's open fails its TLS check under stock GDAL; set in the
    configuration, the next file opens. The plugin: the same answers, and its side
    served them."""
    from parity import side_env
    steps = [[{"op": "path_options", "prefix": "/vsis3/lab/parity/cog",
               "options": {"GDAL_HTTP_UNSAFESSL": "YES"}},
              {"op": "open", "path": PATH, "kind": "raster"}],
             [{"op": "setconfig", "options": {"GDAL_HTTP_UNSAFESSL": "YES"}},
              {"op": "open", "path": OTHER, "kind": "raster"}]]
    out, logs = {}, {}
    for vsitune in (False, True):
        name = "vsitune" if vsitune else "stock"
        env = side_env(lab, vsitune, None, "h1tls")
        for k in CA_NAMES:
            env.pop(k, None)
        seq = last_seq(lab)
        with Side(lab, vsitune, env=env) as side:
            out[name] = [side.run(step) for step in steps]
        logs[name] = lab.log(since=seq)
        records().add("options", "path-specific GDAL_HTTP_UNSAFESSL", name,
                      summarise(logs[name]))
        for step in out[name]:
            for r in step:
                r.pop("errors", None)  # curl's TLS words are its TLS back-end's
    assert out["stock"][0][1]["value"] is None, ("stock: the path's UNSAFESSL applied", out)
    assert out["stock"][1][1]["value"] is not None, ("stock: the global one did not", out)
    assert any((e.get("user_agent") or "").startswith(VT_UA) and
               (e.get("key") or "").startswith("parity/striped/") for e in logs["vsitune"]), \
        "the plugin did not serve the second open"
    assert_same(out["stock"], out["vsitune"], "path-specific GDAL_HTTP_UNSAFESSL")
