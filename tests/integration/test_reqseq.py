"""test_reqseq.py: the comparison of scripts/reqseq.py on synthetic records (no lab, no GDAL).

reqseq.py proves that two builds send the same requests; what it calls equal is what
this checks: equal sequences pass, a changed range, an added request, a lost If-Match or
a swap of two requests that did not overlap in time is a difference, a swap of two
requests in flight at once is not, random names and signatures are masked, and tests
that did not pass in both runs are excluded and listed.
"""

import importlib.util
import io
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("reqseq", ROOT / "scripts" / "reqseq.py")
reqseq = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reqseq)

T = "tests/integration/test_x.py::test_a[h1]"


def req(seq, rng, t, dur=5.0, key="k.tif", **kw):
    r = {"seq": seq, "time": t, "dur_ms": dur, "endpoint": "h1", "method": "GET",
         "kind": "GET_RANGE", "bucket": "lab", "key": key, "query": "", "range": rng,
         "status": 206, "fault": None, "if_match": False, "ua": "vsitune"}
    r.update(kw)
    return r


def seq3(t2=100.010, t3=100.020):
    return [req(1, "bytes=0-16383", 100.000), req(2, "bytes=16384-32767", t2),
            req(3, "bytes=65536-131071", t3)]


def verdict(old, new):
    return reqseq.compare_runs(old, new)[0]


def test_equal_sequences_are_identical():
    assert verdict(seq3(), seq3(t2=200.0, t3=300.0)) == "identical"  # times do not count


def test_changed_range_added_request_and_if_match_differ():
    b = seq3()
    b[1]["range"] = "bytes=16384-65535"
    assert verdict(seq3(), b) == "different"
    assert verdict(seq3(), seq3() + [req(4, "bytes=0-1", 100.1)]) == "different"
    c = seq3()
    c[2]["if_match"] = True
    assert verdict(seq3(), c) == "different"
    d = seq3()
    d[0]["status"] = 200
    assert verdict(seq3(), d) == "different"


def test_swap_of_sequential_requests_differs():
    # 2 ends at 100.015, 3 arrives at 100.020: one after the other in both runs
    a = seq3()
    b = [a[0], dict(a[2], seq=2, time=100.010), dict(a[1], seq=3, time=100.020)]
    v, text = reqseq.compare_runs(a, b)
    assert v == "different" and "order changed" in text


def test_swap_of_concurrent_requests_is_accepted():
    # 3 arrived while 2 was still being answered (2: 100.010 + 5 ms)
    a = seq3(t3=100.012)
    b = [a[0], dict(a[2], seq=2, time=100.010), dict(a[1], seq=3, time=100.011)]
    assert verdict(a, b) == "concurrent"
    rep = reqseq.compare({(T, None, None, 1): a}, {(T, None, None, 1): b})
    out = io.StringIO()
    reqseq.print_report(rep, out)
    assert f"SAME UP TO CONCURRENCY {T} [whole log]" in out.getvalue()


def test_random_names_and_signatures_are_masked():
    a = [req(1, None, 1.0, key="tmp/0123456789abcdef0123456789abcdef.tif",
             query="X-Amz-Date=20260101T000000Z&X-Amz-Signature=aa&list-type=2")]
    b = [req(1, None, 9.0, key="tmp/fedcba9876543210fedcba9876543210.tif",
             query="X-Amz-Date=20260202T000000Z&X-Amz-Signature=bb&list-type=2")]
    assert verdict(a, b) == "identical"
    b[0]["query"] = "X-Amz-Date=20260202T000000Z&X-Amz-Signature=bb&list-type=1"
    assert verdict(a, b) == "different"


def test_report_excludes_tests_that_did_not_pass_in_both(tmp_path):
    other = "tests/integration/test_x.py::test_new_feature"
    old = tmp_path / "old.jsonl"
    new = tmp_path / "new.jsonl"
    recs_old = [{"test": T, "case": None, "what": None, "n": 1, "requests": seq3()},
                {"test": other, "case": None, "what": None, "n": 1, "requests": seq3()}]
    changed = seq3()
    changed[0]["range"] = "bytes=0-65535"
    recs_new = [{"test": T, "case": "c", "what": "w", "n": 1, "requests": seq3()},
                {"test": T, "case": None, "what": None, "n": 1, "requests": seq3()},
                {"test": other, "case": None, "what": None, "n": 1, "requests": changed}]
    recs_old.insert(0, {"test": T, "case": "c", "what": "w", "n": 1, "requests": seq3()})
    old.write_text("".join(json.dumps(r) + "\n" for r in recs_old))
    new.write_text("".join(json.dumps(r) + "\n" for r in recs_new))
    Path(str(old) + ".outcomes.json").write_text(json.dumps({T: "passed", other: "failed"}))
    Path(str(new) + ".outcomes.json").write_text(json.dumps({T: "passed", other: "passed"}))
    rep = reqseq.compare(reqseq.load(old), reqseq.load(new),
                         {T: "passed", other: "failed"}, {T: "passed", other: "passed"})
    assert (rep["compared"], rep["identical"], rep["different"]) == (2, 2, [])
    assert rep["excluded"] == {other: ["failed", "passed"]}
    assert reqseq.diff_files(old, new) == 0
    # the same files with both tests passing: the change is reported, case by case
    Path(str(old) + ".outcomes.json").write_text(json.dumps({T: "passed", other: "passed"}))
    assert reqseq.diff_files(old, new) == 1
    rep = reqseq.compare(reqseq.load(old), reqseq.load(new))
    out = io.StringIO()
    reqseq.print_report(rep, out)
    assert f"DIFFERENT {other} [whole log]" in out.getvalue()
    assert "-vsitune h1 GET GET_RANGE lab/k.tif bytes=0-16383 -> 206" in out.getvalue()
    assert "+vsitune h1 GET GET_RANGE lab/k.tif bytes=0-65535 -> 206" in out.getvalue()


def test_record_only_in_one_run_differs():
    rep = reqseq.compare({(T, None, None, 1): seq3()}, {(T, None, None, 1): seq3(),
                                                        (T, "c", "w", 1): seq3()})
    assert len(rep["different"]) == 1 and "only in the new run" in rep["different"][0]


def test_outcomes_from_junit(tmp_path):
    x = tmp_path / "j.xml"
    x.write_text('<testsuites><testsuite>'
                 '<testcase classname="tests.integration.test_x" name="test_a[h1]"/>'
                 '<testcase classname="tests.integration.test_x" name="test_b">'
                 '<failure message="no"/></testcase>'
                 '<testcase classname="tests.integration.test_x" name="test_c">'
                 '<skipped type="pytest.xfail" message="known"/></testcase>'
                 '<testcase classname="tests.integration.test_x" name="test_d">'
                 '<skipped type="pytest.skip" message="no root"/></testcase>'
                 '</testsuite></testsuites>')
    assert reqseq.outcomes(x) == {T: "passed", "tests/integration/test_x.py::test_b": "failed",
                                  "tests/integration/test_x.py::test_c": "xfailed",
                                  "tests/integration/test_x.py::test_d": "skipped"}


def test_record_written_twice_in_one_run_differs(tmp_path):
    # a nested pytest that inherited VT_RECORD_SEQ would append under the same test ids
    rec = json.dumps({"test": T, "case": None, "what": None, "n": 1, "requests": seq3()}) + "\n"
    (tmp_path / "old.jsonl").write_text(rec)
    (tmp_path / "new.jsonl").write_text(rec + rec)
    rep = reqseq.compare(reqseq.load(tmp_path / "old.jsonl"), reqseq.load(tmp_path / "new.jsonl"))
    assert rep["identical"] == 1 and len(rep["different"]) == 1
    assert "only in the new run" in rep["different"][0]


def test_whole_log_where_only_stock_varies_is_reported_apart():
    stock = [req(1, "bytes=0-16383", 1.0, ua=""), req(2, "bytes=16384-32767", 1.1, ua="")]
    plugin = [req(3, "bytes=0-65535", 2.0)]
    varied = [dict(stock[0], range="bytes=0-32767"), stock[1]]
    rep = reqseq.compare({(T, None, None, 1): stock + plugin},
                         {(T, None, None, 1): varied + plugin})
    assert rep["different"] == [] and len(rep["stock_varies"]) == 1
    # a per-case record (the plugin's side only) that differs is a difference
    rep = reqseq.compare({(T, "c", "w", 1): plugin},
                         {(T, "c", "w", 1): [dict(plugin[0], range="bytes=0-16383")]})
    assert len(rep["different"]) == 1
    # and a whole log where the plugin's requests differ too
    rep = reqseq.compare({(T, None, None, 1): stock + plugin},
                         {(T, None, None, 1): varied + [dict(plugin[0], if_match=True)]})
    assert len(rep["different"]) == 1 and rep["stock_varies"] == []


def test_recheck_accepts_only_what_varies_within_a_build_and_the_old_build_also_sent():
    a = seq3()
    b = seq3()
    b[2]["range"] = "bytes=65536-98303"
    key = (T, "c", "w", 1)
    fresh = lambda: reqseq.compare({key: a}, {key: b})  # noqa: E731
    # reruns where each build repeats itself: a real change
    rep = reqseq.recheck(fresh(), {key: a}, {key: b}, [{key: a}], [{key: b}])
    assert len(rep["different"]) == 1 and rep["varies"] == []
    # the new build's sequence never seen from the old build, though the new build varies
    c = seq3()
    c[2]["range"] = "bytes=65536-70000"
    rep = reqseq.recheck(fresh(), {key: a}, {key: b}, [{key: a}], [{key: c}])
    assert len(rep["different"]) == 1 and rep["varies"] == []
    # the old build sent both sequences: not the change's doing
    rep = reqseq.recheck(fresh(), {key: a}, {key: b}, [{key: b}], [{key: b}])
    assert rep["different"] == [] and len(rep["varies"]) == 1
    out = io.StringIO()
    reqseq.print_report(rep, out)
    assert f"VARIES WITHIN ONE BUILD {T} [c / w #1]" in out.getvalue()
