#!/usr/bin/python3
"""reqseq.py: prove that two builds of the plugin send the same requests.

Why: a redesign (issue 19) must change no request. This runs chosen integration test
files of the CURRENT tree twice against the lab, once with an old commit's plugin and
once with this tree's, each run recording the request sequences the lab saw
(VT_RECORD_SEQ: tests/integration/parity.py record_seq, conftest.py), then compares them
case by case. It is not a CI test (it needs two builds); test_reqseq.py tests its diff.

    /usr/bin/python3 scripts/reqseq.py compare OLD_COMMIT [--new-build DIR] [--recheck N]
                                               [files] [-k EXPR]
    /usr/bin/python3 scripts/reqseq.py build COMMIT          # prints the build dir
    /usr/bin/python3 scripts/reqseq.py run BUILD OUT.jsonl [files] [-k EXPR]
    /usr/bin/python3 scripts/reqseq.py bench BUILD OUT.jsonl   # bench/run.py --quick, recorded
    /usr/bin/python3 scripts/reqseq.py diff OLD.jsonl NEW.jsonl

A record is one run: {"test", "case", "what", "n", "requests"}; parity cases give one per
plugin-side run (case, step, nth in the test), every test that used the lab one more for
its whole log (case null: both sides, the stock side as a control, as stock GDAL is the
same in both runs). A request compares as (User-Agent product, endpoint, method, kind,
bucket, key, query, Range, If-Match present, status, fault), random names (32 hex digits,
UUIDs) and query signatures (X-Amz-*, Expires, Signature, ...) masked. Two records are
identical when these sequences are equal in seq order; when only the order differs, it is
accepted ("same up to concurrency") if every pair that swapped was in flight at once in
either run (the later one arrived, to the lab's millisecond clock, before the earlier one's
response ended): the order of concurrent requests is the scheduler's, not the plugin's.
A whole log that differs only in requests without vsitune's User-Agent is reported apart
("stock varies", not a failure): stock GDAL itself is not always repeatable (its JPEG 2000
reads, from OpenJPEG's threads, come in another order and size from run to run).
With --recheck N, each test with a differing record runs N more times with each build (on
its own, by node id); a record that differs between runs of one build, and whose new
sequence the old build also sent, is reported as "varies within one build", not a failure.
Only tests that passed (or xfailed) in both runs are compared; the others are listed.
The two runs go one after the other, never at once: what the plugin remembers expires
(VSITUNE_METADATA_TTL), so a run slowed by load asks again what a faster one still knew.

Builds: `build` exports COMMIT with git archive into $VT_REQSEQ_DIR (default
/tmp/vt-reqseq)/<commit>/src and builds it there with cmake (VT_BUILD_TESTS=OFF: the
tests that need the unit tools fail on it and are listed, not compared); a second call
reuses it. The old build's parity-fixtures folder is this tree's (a symlink), so both
runs read the same objects.

Exit status: 0 every compared record identical (or same up to concurrency), 1 a
difference, 2 bad arguments or a build that failed.
"""

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = "/usr/bin/python3"
DEFAULT_TESTS = ["tests/integration/test_parity_*.py", "tests/integration/test_vsitune_counts.py",
                 "tests/integration/test_vsitune_readahead.py",
                 "tests/integration/test_vsitune_layouts.py"]
ACCEPTED = ("passed", "xfailed")

_RANDOM = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                     r"[0-9a-fA-F]{12}|[0-9a-fA-F]{32}")
_VOLATILE = re.compile(r"^(x-amz-.*|x-goog-.*|signature|expires|googleaccessid|sig|se|st|sv|"
                       r"sp|sr|spr|skoid|sktid|skt|ske|sks|skv|token)$", re.I)


# -- the comparison ------------------------------------------------------------------------
def mask(s):
    return _RANDOM.sub("<id>", s) if isinstance(s, str) else s


def norm_query(q):
    parts = [p for p in (q or "").split("&") if p]
    return "&".join(mask(p) if not _VOLATILE.match(p.split("=", 1)[0]) else
                    p.split("=", 1)[0] + "=<v>" for p in parts)


def signature(r):
    """What a request is, for the comparison (a tuple; str() of it is its printed line)."""
    return (r.get("ua") or "", r.get("endpoint"), r.get("method"), r.get("kind"),
            r.get("bucket"), mask(r.get("key")), norm_query(r.get("query")), r.get("range"),
            bool(r.get("if_match")), r.get("status"), r.get("fault"))


def line(sig):
    ua, ep, method, kind, bucket, key, query, rng, im, status, fault = sig
    s = f"{ua or '-'} {ep} {method} {kind} {bucket}/{key or ''}"
    if query:
        s += "?" + query
    if rng:
        s += f" {rng}"
    if im:
        s += " If-Match"
    s += f" -> {status}"
    if fault:
        s += f" fault={fault}"
    return s


def _span(r):
    t = r.get("time") or 0.0
    return t, t + (r.get("dur_ms") or 0.0) / 1000.0


def _concurrent(reqs, i, j):
    """reqs[i] and reqs[j] were in flight at once (the later arrived before the earlier ended)."""
    (a0, a1), (b0, b1) = _span(reqs[i]), _span(reqs[j])
    return b0 < a1 if a0 <= b0 else a0 < b1


def _positions(sigs):
    """Each entry's (signature, occurrence number): the k-th GET of a range in one run is
    the k-th in the other."""
    seen = Counter()
    out = []
    for s in sigs:
        out.append((s, seen[s]))
        seen[s] += 1
    return out


def compare_runs(old, new):
    """One record's requests in two runs: ("identical" | "concurrent" | "different", text)."""
    a, b = [signature(r) for r in old], [signature(r) for r in new]
    if a == b:
        return "identical", ""
    if Counter(a) != Counter(b):
        diff = difflib.unified_diff([line(s) for s in a], [line(s) for s in b], "old", "new",
                                    n=2, lineterm="")
        return "different", "\n".join(list(diff)[:80])
    pa, pb = _positions(a), _positions(b)
    where_b = {p: k for k, p in enumerate(pb)}
    bad = []
    for i in range(len(pa)):
        for j in range(i + 1, len(pa)):
            bi, bj = where_b[pa[i]], where_b[pa[j]]
            if bi > bj and not (_concurrent(old, i, j) or _concurrent(new, bj, bi)):
                bad.append(f"  old #{i} {line(a[i])}\n  old #{j} {line(a[j])}\n"
                           f"  swapped in new (#{bi}, #{bj}), in flight at once in neither run")
                if len(bad) >= 10:
                    break
        if len(bad) >= 10:
            break
    if bad:
        return "different", "same requests, order changed:\n" + "\n".join(bad)
    return "concurrent", ""


def load(path):
    """A VT_RECORD_SEQ file: {(test, case, what, n): requests}."""
    out = {}
    with open(path) as f:
        for ln in f:
            if ln.strip():
                rec = json.loads(ln)
                key = (rec["test"], rec["case"], rec["what"], rec["n"])
                while key in out:  # recorded twice: kept, and unmatched in the other run
                    key = key[:3] + (f"{key[3]} again",)
                out[key] = rec["requests"]
    return out


def compare(old, new, outcomes_old=None, outcomes_new=None):
    """Compare two loaded record sets. outcomes: {test id: outcome} of each run (None: all
    compared). Returns a report dict: counts, excluded tests, differences as text."""
    def ok(test):
        if outcomes_old is None or outcomes_new is None:
            return True
        return outcomes_old.get(test) in ACCEPTED and outcomes_new.get(test) in ACCEPTED

    rep = {"compared": 0, "identical": 0, "concurrent": 0, "concurrent_names": [], "different": [],
           "different_keys": [], "stock_varies": [], "varies": [], "excluded": {}}
    for test in sorted({k[0] for k in old} | {k[0] for k in new}
                       | set(outcomes_old or {}) | set(outcomes_new or {})):
        if not ok(test):
            rep["excluded"][test] = [(outcomes_old or {}).get(test, "not run"),
                                     (outcomes_new or {}).get(test, "not run")]
    for key in sorted(set(old) | set(new), key=lambda k: tuple(str(x) for x in k)):
        if key[0] in rep["excluded"]:
            continue
        name = _name(key)
        rep["compared"] += 1
        if key not in old or key not in new:
            rep["different"].append(f"{name}: recorded only in the {'new' if key in new else 'old'}"
                                    " run")
            rep["different_keys"].append(key)
            continue
        verdict, text = compare_runs(old[key], new[key])
        if verdict == "different" and key[1] is None and \
                compare_runs(plugin_side(old[key]), plugin_side(new[key]))[0] != "different":
            # a whole log whose plugin requests match: stock GDAL's own varied
            rep["stock_varies"].append(f"{name}:\n{text}")
        elif verdict == "different":
            rep["different"].append(f"{name}:\n{text}")
            rep["different_keys"].append(key)
        else:
            rep[verdict] += 1
            if verdict == "concurrent":
                rep["concurrent_names"].append(name)
    return rep


def recheck(rep, old, new, old_runs, new_runs):
    """Move to rep["varies"] each differing record that is not repeatable within one build
    (two runs of the same build, the first or a rerun in old_runs/new_runs, differ) and
    whose new sequence the old build also sent in one of its runs: the order of something
    outside the plugin (OpenJPEG's threads), not a change. Returns rep."""
    def same(a, b):
        return compare_runs(a, b)[0] != "different"

    keep_text, keep_keys = [], []
    for text, key in zip(rep["different"], rep["different_keys"]):
        # a whole log: the plugin's requests (stock GDAL's own varying is shown apart)
        view = plugin_side if key[1] is None else (lambda reqs: reqs)
        olds = [view(r[key]) for r in [old] + old_runs if key in r]
        news = [view(r[key]) for r in [new] + new_runs if key in r]
        unstable = any(not same(x, olds[0]) for x in olds) or any(not same(x, news[0]) for x in news)
        if unstable and key in new and any(same(x, view(new[key])) for x in olds):
            rep["varies"].append(f"{_name(key)}: {len(olds)} old and {len(news)} new runs, "
                                 "both builds sent both sequences")
        else:
            keep_text.append(text)
            keep_keys.append(key)
    rep["different"], rep["different_keys"] = keep_text, keep_keys
    return rep


def plugin_side(reqs):
    """The requests the plugin sent (its User-Agent), of a whole log."""
    return [r for r in reqs if r.get("ua") == "vsitune"]


def _name(key):
    test, case, what, n = key
    if case is None:
        return test + (" [whole log]" if n == 1 else f" [whole log #{n}]")
    return test + f" [{case} / {what} #{n}]"


def print_report(rep, out=sys.stdout):
    for d in rep["different"]:
        print("DIFFERENT " + d, file=out)
    for d in rep["stock_varies"]:
        print("STOCK VARIES " + d, file=out)
    for d in rep["varies"]:
        print("VARIES WITHIN ONE BUILD " + d, file=out)
    for d in rep["concurrent_names"]:
        print("SAME UP TO CONCURRENCY " + d, file=out)
    for test, (o, n) in sorted(rep["excluded"].items()):
        print(f"EXCLUDED {test}: old {o}, new {n}", file=out)
    print(f"{rep['compared']} records compared: {rep['identical']} identical, "
          f"{rep['concurrent']} same up to concurrency, {len(rep['different'])} different, "
          f"{len(rep['stock_varies'])} where only stock GDAL's own requests differ, "
          f"{len(rep['varies'])} that vary within one build; "
          f"{len(rep['excluded'])} tests excluded", file=out)


# -- outcomes (pytest's JUnit XML) -----------------------------------------------------------
def outcomes(junit_xml):
    """{test id as PYTEST_CURRENT_TEST names it: outcome}."""
    out = {}
    for tc in ET.parse(junit_xml).getroot().iter("testcase"):
        test = tc.get("classname", "").replace(".", "/") + ".py::" + tc.get("name", "")
        kids = {c.tag: c for c in tc}
        if "failure" in kids:
            o = "failed"
        elif "error" in kids:
            o = "error"
        elif "skipped" in kids:
            o = "xfailed" if kids["skipped"].get("type") == "pytest.xfail" else "skipped"
        else:
            o = "passed"
        # a teardown error adds a second <testcase> entry for the same test
        out[test] = o if out.get(test, "passed") == "passed" else out[test]
    return out


# -- builds and runs -------------------------------------------------------------------------
def scratch():
    return Path(os.environ.get("VT_REQSEQ_DIR") or "/tmp/vt-reqseq")


def build(commit):
    """Build COMMIT's plugin (once) and return its build dir."""
    full = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", commit + "^{commit}"],
                          capture_output=True, text=True, check=True).stdout.strip()
    top = scratch() / full[:12]
    src, bld = top / "src", top / "build"
    if not (bld / "tunerd" / "tunerd").is_file():
        if not (src / "CMakeLists.txt").is_file():
            src.mkdir(parents=True, exist_ok=True)
            arch = subprocess.Popen(["git", "-C", str(ROOT), "archive", full], stdout=subprocess.PIPE)
            subprocess.run(["tar", "-x", "-C", str(src)], stdin=arch.stdout, check=True)
            if arch.wait() != 0:
                raise RuntimeError(f"git archive {full} failed")
        subprocess.run(["cmake", "-S", str(src), "-B", str(bld), "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                        "-DVT_BUILD_TESTS=OFF"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", str(bld), "-j", str(os.cpu_count() or 1)], check=True)
    return bld


def expand(tests):
    out = []
    for t in tests or DEFAULT_TESTS:
        hits = sorted(ROOT.glob(t))
        out += [str(h.relative_to(ROOT)) for h in hits] if hits else [t]
    return out


def run(build_dir, out, tests, kexpr=None, share_fixtures_from=None):
    """Run the tests with build_dir's plugin, recording into out (and out.outcomes.json)."""
    build_dir, out = Path(build_dir).resolve(), Path(out).resolve()
    if share_fixtures_from:
        mine, theirs = build_dir / "parity-fixtures", Path(share_fixtures_from).resolve() / "parity-fixtures"
        theirs.mkdir(parents=True, exist_ok=True)
        if not mine.exists() and not mine.is_symlink():
            mine.symlink_to(theirs)
    if out.exists():
        out.unlink()
    with tempfile.TemporaryDirectory() as d:
        junit = Path(d) / "junit.xml"
        env = dict(os.environ, VT_BUILD_DIR=str(build_dir), VT_RECORD_SEQ=str(out))
        argv = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
                f"--junitxml={junit}", *expand(tests)]
        if kexpr:
            argv += ["-k", kexpr]
        print("+ VT_BUILD_DIR=%s %s" % (build_dir, " ".join(argv)), flush=True)
        subprocess.run(argv, cwd=str(ROOT), env=env)
        res = outcomes(junit) if junit.exists() else {}
    if not out.exists():
        out.write_text("")
    Path(str(out) + ".outcomes.json").write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    return res


def bench(build_dir, out):
    """bench/run.py --quick with build_dir's plugin, in this process, every run's log a
    record (test "bench:<scenario>", n: its place in the scenario) through a wrapper of
    bench/common.py's request_summary, which every scenario calls on each run's log."""
    sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests" / "integration")]
    out = Path(out).resolve()
    if out.exists():
        out.unlink()
    import common  # bench/common.py
    import parity
    import run as bench_run
    parity.SEQ_FILE = str(out)
    current = {"name": "?"}
    summary = common.request_summary

    def recording(log):
        parity.record_seq(None, None, log, test="bench:" + current["name"])
        return summary(log)

    def named(name, fn):
        def scenario(ctx):
            current["name"] = name
            return fn(ctx)
        return scenario

    common.request_summary = recording
    bench_run.SCENARIOS = [(num, name, named(name, fn)) for num, name, fn in bench_run.SCENARIOS]
    with tempfile.TemporaryDirectory() as d:
        res = Path(d) / "results.json"
        bench_run.main(["--quick", "--build-dir", str(Path(build_dir).resolve()), "--out", str(res),
                        "--no-render"])
        scen = json.loads(res.read_text())["scenarios"] if res.exists() else {}
    got = {f"bench:{n}": "failed" if "error" in r else "passed" for n, r in scen.items()}
    if not out.exists():
        out.write_text("")
    Path(str(out) + ".outcomes.json").write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    return got


def diff_files(old, new, old_runs=(), new_runs=()):
    """Compare two record files (and reruns of their differing tests: recheck); print."""
    oo, on = (Path(str(p) + ".outcomes.json") for p in (old, new))
    lo, ln = load(old), load(new)
    rep = compare(lo, ln, json.loads(oo.read_text()) if oo.exists() else None,
                  json.loads(on.read_text()) if on.exists() else None)
    if old_runs or new_runs:
        recheck(rep, lo, ln, [load(p) for p in old_runs], [load(p) for p in new_runs])
    print_report(rep)
    return 1 if rep["different"] else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("compare")
    p.add_argument("old")
    p.add_argument("--new-build", default=str(ROOT / "build"))
    p.add_argument("--out", default=None, help="folder for the two record files")
    p.add_argument("--recheck", type=int, default=0, metavar="N",
                   help="run each differing test N more times with each build (recheck)")
    p.add_argument("tests", nargs="*")
    p.add_argument("-k", dest="kexpr")
    p = sub.add_parser("build")
    p.add_argument("commit")
    p = sub.add_parser("run")
    p.add_argument("build_dir")
    p.add_argument("out")
    p.add_argument("tests", nargs="*")
    p.add_argument("-k", dest="kexpr")
    p = sub.add_parser("bench")
    p.add_argument("build_dir")
    p.add_argument("out")
    p = sub.add_parser("diff")
    p.add_argument("old")
    p.add_argument("new")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "build":
            print(build(a.commit))
            return 0
        if a.cmd == "run":
            run(a.build_dir, a.out, a.tests, a.kexpr)
            return 0
        if a.cmd == "bench":
            bench(a.build_dir, a.out)
            return 0
        if a.cmd == "diff":
            return diff_files(a.old, a.new)
        new_build = Path(a.new_build)
        if not (new_build / "vsiplugin" / "gdal_vsitune.so").is_file():
            print(f"reqseq: no plugin in {new_build} (scripts/setup.sh builds it)", file=sys.stderr)
            return 2
        old_build = build(a.old)
        out = Path(a.out or scratch() / "runs")
        out.mkdir(parents=True, exist_ok=True)
        run(old_build, out / "old.jsonl", a.tests, a.kexpr, share_fixtures_from=new_build)
        run(new_build, out / "new.jsonl", a.tests, a.kexpr)
        rep = compare(load(out / "old.jsonl"), load(out / "new.jsonl"))
        ids = sorted({k[0] for k in rep["different_keys"]})
        olds, news = [], []
        for i in range(a.recheck if ids else 0):
            for build_dir, runs, side in ((old_build, olds, "old"), (new_build, news, "new")):
                runs.append(out / f"recheck-{side}{i + 1}.jsonl")
                run(build_dir, runs[-1], ids)
        return diff_files(out / "old.jsonl", out / "new.jsonl", olds, news)
    except (subprocess.CalledProcessError, RuntimeError) as e:
        print(f"reqseq: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
