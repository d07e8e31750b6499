"""test_reliability.py: issue 13 against the lab's fault proxy (tests/lab/lib/faultproxy.js).

Each case puts one fault between a GDAL process (python3-gdal with the plugin) and the
lab, through the proxy's HTTP/1.1 (fp1) or HTTP/2 (fp2) front, and asserts what a user
sees: the pixels of the local file, or a clear error naming bucket, key and status;
then, with the fault gone, that the same process reads right again (no failure was
remembered). Requests are counted from the lab's log (what the server saw), and the
bounds asserted are the ones docs/reliability.md promises. Worker timeouts are only a
liveness bound (never a hang), not a timing assertion.
"""

import threading  # noqa: F401  (used in the worker code below)

import pytest

from test_vsitune_helpers import Worker, WorkerError, last_seq, s3path, sigcheck  # noqa: F401

FAST = {"GDAL_HTTP_RETRY_DELAY": "0.05", "GDAL_HTTP_MAX_RETRY": "3"}
WINDOW = (1200, 1300, 700, 600)

OPEN_READ = r'''
import hashlib
ds = gdal.Open(path)
a = ds.GetRasterBand(1).ReadAsArray(*win)
result = hashlib.sha256(a.tobytes()).hexdigest()
ds = None
'''
LOCAL = r'''
import hashlib
lds = gdal.Open(local)
a = lds.GetRasterBand(1).ReadAsArray(*win)
result = hashlib.sha256(a.tobytes()).hexdigest()
'''


def _msgs(err):
    return " | ".join(m for _, _, m in err.value.answer["errors"]) + " " + err.value.answer["error"]


@pytest.fixture
def want(lab, small_cog):
    with Worker(lab) as w:
        return w.call(LOCAL, local=small_cog["path"], win=WINDOW)


def _header_gets(log, key):
    return [e for e in log if e["key"] == key and e["kind"] == "GET_RANGE"
            and e["range"].startswith("bytes=0-")]


# -- item 1: one doubtful first answer never poisons the object --------------------

@pytest.mark.parametrize("endpoint", ["fp1", "fp2"])
@pytest.mark.parametrize("kind", ["range416", "empty200", "nototal"])
def test_doubtful_first_answer_is_checked_not_remembered(lab, small_cog, want, endpoint, kind):
    key = small_cog["key"]
    lab.pfault(kind, key=key, request_kind="GET_RANGE", endpoint=endpoint)
    with Worker(lab, endpoint=endpoint, extra=FAST) as w:
        first = w.call(OPEN_READ, path=s3path(small_cog), win=WINDOW)
        again = w.call(OPEN_READ, path=s3path(small_cog), win=WINDOW)
    log = lab.log()
    assert first == again == want
    (faulted,) = [e for e in log if e["fault"] == f"p:{kind}"]
    # The doubt was settled by one HEAD; nothing more was asked for the header.
    assert [e["kind"] for e in log if e["kind"] == "HEAD"] == ["HEAD"], log
    assert faulted["seq"] < [e for e in log if e["kind"] == "HEAD"][0]["seq"]
    assert len(log) <= 6, [(e["kind"], e["range"], e["fault"]) for e in log]


@pytest.mark.parametrize("lie", ["bigger", "smaller"])
def test_lying_total_fails_one_read_then_heals(lab, small_cog, want, lie):
    key, size = small_cog["key"], small_cog["size"]
    value = size * 2 if lie == "bigger" else 70000
    lab.pfault("lietotal", key=key, request_kind="GET_RANGE", value=value, endpoint="fp1")
    with Worker(lab, endpoint="fp1", extra=FAST) as w:
        try:
            first = w.call(OPEN_READ, path=s3path(small_cog), win=WINDOW)
        except WorkerError as e:
            first = None
            msg = " | ".join(m for _, _, m in e.answer["errors"])
            assert key in msg and "lab" in msg, msg
        again = w.call(OPEN_READ, path=s3path(small_cog), win=WINDOW)
    assert first in (None, want)  # never wrong pixels
    assert again == want
    assert len(_header_gets(lab.log(), key)) == 2  # the lie was dropped, then re-asked


# -- item 3: every waiting thread gets the full error -----------------------------

THREADS = r'''
import threading
ds0 = gdal.Open(path)
per_thread = []
def work():
    seen = []  # this thread's CPLErrors (GDAL's handler stack is per thread)
    gdal.PushErrorHandler(lambda cls, no, msg: seen.append(msg))
    ds = gdal.Open(path)
    try:
        ds.GetRasterBand(1).ReadAsArray(*win)
        seen.append("no error")
    except Exception as e:
        seen.append(str(e))
    gdal.PopErrorHandler()
    per_thread.append(" | ".join(seen))
ts = [threading.Thread(target=work) for _ in range(16)]
[t.start() for t in ts]
[t.join() for t in ts]
result = per_thread
'''


@pytest.mark.parametrize("fault,status,code", [("forbidden", 403, "AccessDenied"),
                                               ("slowdown", 503, "SlowDown")])
def test_every_thread_gets_the_full_error(lab, small_cog, fault, status, code):
    key = small_cog["key"]
    with Worker(lab, extra=FAST) as w:
        w.call("ds = gdal.Open(path)\nresult = 1", path=s3path(small_cog))
        lab.fault(fault, count=100000, key=key, request_kind="GET_RANGE")
        errs = w.call(THREADS, path=s3path(small_cog), win=WINDOW, timeout=180)
        lab.clear_faults()
        assert w.call(OPEN_READ, path=s3path(small_cog), win=WINDOW)
    assert len(errs) == 16
    for e in errs:
        assert key in e and "s3://lab/" in e and str(status) in e and code in e, e


# -- item 5: one-off damaged answers are retried within the budget ----------------

@pytest.mark.parametrize("endpoint", ["fp1", "fp2"])
@pytest.mark.parametrize("kind", ["reqtimeout", "longbody", "badrange"])
def test_one_off_damage_is_retried(lab, small_cog, want, endpoint, kind):
    key = small_cog["key"]
    with Worker(lab, endpoint=endpoint, extra=FAST) as w:
        w.call("ds = gdal.Open(path)\nresult = 1", path=s3path(small_cog))
        mark = last_seq(lab)
        lab.pfault(kind, key=key, request_kind="GET_RANGE", endpoint=endpoint)
        got = w.call(r'''
import hashlib
a = ds.GetRasterBand(1).ReadAsArray(*win)
result = hashlib.sha256(a.tobytes()).hexdigest()
''', win=WINDOW)
    assert got == want
    log = lab.log(since=mark)
    (bad,) = [e for e in log if e["fault"] == f"p:{kind}"]
    again = [e for e in log if e["range"] == bad["range"] and e["seq"] > bad["seq"]]
    assert len(again) == 1 and again[0]["fault"] is None, log


# -- item 8: messages keep their cause; a huge error body keeps its code ----------

def test_huge_error_body_keeps_its_code(lab, small_cog):
    key = small_cog["key"]
    lab.pfault("bigerror", count=1000, key=key, endpoint="fp1")
    with Worker(lab, endpoint="fp1", extra={"GDAL_HTTP_RETRY_DELAY": "0.01",
                                            "GDAL_HTTP_MAX_RETRY": "1"}) as w:
        with pytest.raises(WorkerError) as err:
            w.call(OPEN_READ, path=s3path(small_cog), win=WINDOW)
        lab.clear_faults()
    msg = _msgs(err)
    assert "503" in msg and "SlowDown" in msg and key in msg, msg


def test_h2_stream_without_end_stream_completes(lab, small_cog, want):
    key = small_cog["key"]
    with Worker(lab, endpoint="fp2", extra=FAST) as w:
        w.call("ds = gdal.Open(path)\nresult = 1", path=s3path(small_cog))
        mark = last_seq(lab)
        lab.pfault("noend", count=3, key=key, request_kind="GET_RANGE", endpoint="fp2")
        got = w.call(r'''
import hashlib
a = ds.GetRasterBand(1).ReadAsArray(*win)
result = hashlib.sha256(a.tobytes()).hexdigest()
''', win=WINDOW, timeout=60)
    assert got == want
    # Each stream was ended by us once its bytes were in: no retry was needed.
    log = lab.log(since=mark)
    assert len({e["range"] for e in log}) == len(log), log


# -- items 6 and 7: bounded time and requests under permanent faults --------------

def test_trickle_fails_within_the_deadline(lab, small_cog):
    key = small_cog["key"]
    with Worker(lab, endpoint="fp1", extra={"GDAL_HTTP_TIMEOUT": "6", **FAST}) as w:
        w.call("ds = gdal.Open(path)\nresult = 1", path=s3path(small_cog))
        mark = last_seq(lab)
        lab.pfault("trickle", count=1000, key=key, value=10, endpoint="fp1")
        with pytest.raises(WorkerError) as err:
            # liveness bound only: GDAL_HTTP_TIMEOUT=6 ends every read far earlier
            w.call("a = ds.GetRasterBand(1).ReadAsArray(*win)", win=WINDOW, timeout=90)
        lab.clear_faults()
        ok = w.call(OPEN_READ, path=s3path(small_cog), win=WINDOW)
    msg = _msgs(err)
    assert key in msg and ("timed out" in msg or "deadline" in msg), msg
    assert ok
    # Retries had to fit inside the deadline: at most one attempt per request GDAL made.
    log = lab.log(since=mark)
    assert len(log) <= 4, [(e["range"], e["fault"]) for e in log]


PERMANENT_BOUND = 12  # docs/reliability.md: requests for a one-pixel read, permanent fault


@pytest.mark.parametrize("endpoint,kind", [("fp1", "s503"), ("fp2", "s503"), ("fp2", "refuse"),
                                           ("fp1", "throttle")])
def test_permanent_fault_costs_bounded_requests(lab, small_cog, endpoint, kind):
    key = small_cog["key"]
    lab.pfault(kind, count=100000, key=key, endpoint=endpoint, value=30, method="*")
    with Worker(lab, endpoint=endpoint, extra={"GDAL_HTTP_RETRY_DELAY": "0.05"}) as w:
        with pytest.raises(WorkerError) as err:
            w.call(OPEN_READ, path=s3path(small_cog), win=(1500, 700, 1, 1), timeout=120)
        n = len(lab.log())
        lab.clear_faults()
        ok = w.call(OPEN_READ, path=s3path(small_cog), win=(1500, 700, 1, 1))
    assert ok
    assert n <= PERMANENT_BOUND, n
    if kind != "refuse":
        msg = _msgs(err)
        assert key in msg and ("503" in msg or "429" in msg), msg
