"""test_reliability.py: issue 13 against the lab's fault proxy (tests/lab/lib/faultproxy.js).

Each case puts one fault between a GDAL process (python3-gdal with the plugin) and the
lab, through the proxy's HTTP/1.1 (fp1) or HTTP/2 (fp2) front, and asserts what a user
sees: the pixels of the local file, or a clear error naming bucket, key and status;
then, with the fault gone, that the same process reads right again (no failure was
remembered). Requests are counted from the lab's log (what the server saw), and the
bounds asserted are the ones docs/reliability.md promises. Worker timeouts are only a
liveness bound (never a hang), not a timing assertion.
"""

import json
import os
import re
import select
import subprocess
import threading  # noqa: F401  (used in the worker code below)
import time
from pathlib import Path

import pytest
from osgeo import gdal as osgeo_gdal

import lab_client
from test_vsitune_helpers import PY, Worker, WorkerError, last_seq, s3path, sigcheck  # noqa: F401

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
        try:
            first = w.call(OPEN_READ, path=s3path(small_cog), win=WINDOW)
        except WorkerError:
            if kind != "empty200":
                raise
            first = None  # an empty file: "not recognized as a supported file format"
        again = w.call(OPEN_READ, path=s3path(small_cog), win=WINDOW)
    log = lab.log()
    (faulted,) = [e for e in log if e["fault"] == f"p:{kind}"]
    if kind == "empty200":
        # An empty 200 stating Content-Length 0 is how a server that ignores
        # Range answers for an empty object, and stock GDAL (and its own
        # autotest, test_vsis3_4) takes it so without a HEAD: taken for that
        # open only, never remembered. The next open asks again and is right.
        assert first in (None, want) and again == want
        assert "HEAD" not in [e["kind"] for e in log], log
        assert len(_header_gets(log, key)) == 2, log
    else:
        assert first == again == want
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


def test_h2_no_end_stream_resets_the_stream_only(lab, small_cog):
    """A body that fit its transfer's receive buffer cannot have parked other streams'
    input behind it in curl 7.88: its stream alone is reset, and the next reads go over
    the same connection (engine_xfer.c, END_GRACE_FIT_S)."""
    key = small_cog["key"]
    with Worker(lab, endpoint="fp2", extra=FAST) as w:
        w.call("ds = gdal.Open(path)\nresult = 1", path=s3path(small_cog))
        mark = last_seq(lab)
        lab.pfault("noend", count=1, key=key, request_kind="GET_RANGE", endpoint="fp2")
        one_tile = w.call("result = ds.GetRasterBand(1).ReadAsArray(0, 0, 64, 64).tolist()")
        faulted = lab.log(since=mark)
        # other tiles after it: new GETs
        other = w.call("result = ds.GetRasterBand(1).ReadAsArray(1024, 1024, 600, 600).tolist()")
    lds = osgeo_gdal.Open(small_cog["path"])
    assert one_tile == lds.GetRasterBand(1).ReadAsArray(0, 0, 64, 64).tolist()
    assert other == lds.GetRasterBand(1).ReadAsArray(1024, 1024, 600, 600).tolist()
    (e,) = faulted
    assert e["fault"] == "p:noend" and e["status"] == 206
    first, last = (int(v) for v in e["range"].split("=")[1].split("-"))
    assert last - first + 1 < 1 << 20  # within the largest receive buffer (1 MiB)
    assert lab.connections("fp2")["accepted"] == 1


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


PERMANENT_BOUND = 10  # docs/reliability.md: requests for a one-pixel read, permanent fault
# ... plus, from GDAL 3.13 on, one request for each stat GDAL itself makes after the open
# failed: GDALOpen asks every archive handler (/vsizip/, /vsitar/, /vsi7z/, /vsirar/) for a
# hint, and each stats the name (VSIArchiveFilesystemHandler::
# GetHintForPotentiallyRecognizedPath). Stock answers those from its memory of the
# failure; vsitune remembers no failure and asks once each (one attempt of one request:
# the object is failing). 3.11 and 3.12 were not measured.
HINT_STATS = 4 if int(osgeo_gdal.VersionInfo()) >= 3130000 else 0


@pytest.mark.parametrize("endpoint,kind", [("fp1", "s503"), ("fp2", "s503"), ("fp2", "refuse"),
                                           ("fp1", "throttle")])
def test_permanent_fault_costs_bounded_requests(lab, small_cog, endpoint, kind):
    key = small_cog["key"]
    lab.pfault(kind, count=100000, key=key, endpoint=endpoint, value=30, method="*")
    with Worker(lab, endpoint=endpoint, extra={"GDAL_HTTP_RETRY_DELAY": "0.05"}) as w:
        with pytest.raises(WorkerError) as err:
            w.call(OPEN_READ, path=s3path(small_cog), win=(1500, 700, 1, 1), timeout=120)
        seen = lab.log()
        lab.clear_faults()
        ok = w.call(OPEN_READ, path=s3path(small_cog), win=(1500, 700, 1, 1))
    assert ok
    assert len(seen) <= PERMANENT_BOUND + HINT_STATS, "\n".join(
        f'{e["method"]} {e["kind"]} {e.get("range")} {e.get("query")} {e["status"]} '
        f'{e.get("fault")}' for e in seen)
    if kind != "refuse":
        msg = _msgs(err)
        assert key in msg and ("503" in msg or "429" in msg), msg


def test_failing_object_keeps_one_attempt_after_another_answers(lab, small_cog):
    """The failing memory is the server's and the object's: another object of the same
    server answering (a listing, a stat) ends the server's, not the object's. So GDAL's
    further asks for the failing object (3.13 makes four more after a failed open) cost
    one request each, not a ladder each."""
    key, other = small_cog["key"], f"rely-other-{os.getpid()}.bin"
    lab.put_object("lab", other, b"x" * 1000)
    lab.pfault("s503", count=100000, key=key, endpoint="fp1", method="*")
    code = "result = gdal.VSIStatL(path) is not None"
    try:
        with Worker(lab, endpoint="fp1", extra={"GDAL_HTTP_RETRY_DELAY": "0.05"}) as w:
            assert w.call(code, path=s3path(small_cog)) is False   # its ladder ran out
            assert w.call(code, path=f"/vsis3/lab/{other}") is True
            mark = last_seq(lab)
            assert w.call(code, path=s3path(small_cog)) is False
            gets = [e for e in lab.log(since=mark) if e["key"] == key and e["kind"] != "LIST"]
    finally:
        lab.clear_faults()
        lab.delete_object("lab", other)
    assert len(gets) == 1, gets


# -- item 2: corrupt bytes in a well-formed 206 are not kept ------------------------
# A corrupt or zeroed body with the right length and Content-Range passes every HTTP
# check; GDAL's decoder fails on it. The plugin drops the blocks of the handle's last
# reads when GDAL reports that failure, or reads the same tiles again (suspect.h), so
# the next read fetches them once more. Each client is run alone (decode_reader.py):
# the Python bindings with and without UseExceptions, and rasterio, which reset
# GDAL's error state between calls differently.

READER = Path(__file__).resolve().with_name("decode_reader.py")


def _reader_line(proc, timeout):
    """One line of the reader's stdout, or LabError past `timeout` s (never a hang)."""
    deadline = time.monotonic() + timeout
    buf = b""
    fd = proc.stdout.fileno()
    while not buf.endswith(b"\n"):
        left = deadline - time.monotonic()
        r, _, _ = select.select([fd], [], [], max(0.0, min(left, 0.5)))
        if r:
            c = os.read(fd, 1)
            if not c:
                break
            buf += c
        elif left <= 0:
            proc.kill()
            raise lab_client.LabError("decode_reader.py gave no answer in time")
    return buf.decode()


def _decode_run(lab, cog, client, pattern, arm, endpoint="fp1", reads=3, arm_first=False,
                timeout=120, extra=None):
    """Run decode_reader.py; `arm()` arms the fault once the object was opened (or
    before anything with arm_first). Returns (one dict per read, log seq before arming)."""
    env = lab_client.gdal_env(lab.env(endpoint), vsitune=True, extra={**FAST, **(extra or {})})
    args = [PY, str(READER), client, pattern, "--path", s3path(cog), "--local", cog["path"],
            "--reads", str(reads)] + (["--arm-first"] if arm_first else [])
    mark = last_seq(lab)
    if arm_first:
        arm()
    proc = subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        if not arm_first:
            line = _reader_line(proc, timeout)
            assert '"opened"' in line, (line, proc.stderr.read()[-2000:])
            mark = last_seq(lab)
            arm()
            proc.stdin.write(b"go\n")
            proc.stdin.flush()
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = [json.loads(x) for x in out.decode().splitlines() if x.strip()]
    assert len(lines) == reads and proc.returncode == 0, (out, err.decode()[-3000:])
    return lines, mark


def _tile_gets(lab, key, since):
    """The tile GETs (everything but the header) the server saw since `since`."""
    return [e for e in lab.log(since=since) if e["key"] == key and e["kind"] == "GET_RANGE"
            and not e["range"].startswith("bytes=0-")]


def _span(entry):
    first, last = entry["range"][len("bytes="):].split("-")
    return int(first), int(last)


def _assert_decode_error(read, key):
    """GDAL's decode error, naming the file as stock GDAL does: the whole path on
    3.6, only the file name from 3.10 on (GDALRasterBand::ReportError)."""
    assert read["status"] == "error", read
    assert os.path.basename(key) in read["error"] and "IReadBlock failed" in read["error"], read
    assert "vsitune" not in read["error"], read


@pytest.mark.parametrize("pattern", ["same", "reopen"])
@pytest.mark.parametrize("client", ["gdal", "gdal-noexc", "rasterio"])
def test_corrupt_tile_fails_once_then_is_fetched_again(lab, small_cog, client, pattern):
    key = small_cog["key"]
    reads, mark = _decode_run(lab, small_cog, client, pattern, arm=lambda: lab.pfault(
        "corrupt", key=key, request_kind="GET_RANGE", endpoint="fp1"))
    _assert_decode_error(reads[0], key)
    assert [r["status"] for r in reads[1:]] == ["ok", "ok"], reads
    # One more GET of the same tiles, answered right; nothing else of them.
    gets = _tile_gets(lab, key, mark)
    assert [e["fault"] for e in gets] == ["p:corrupt", None], gets
    (f0, l0), (f1, l1) = _span(gets[0]), _span(gets[1])
    assert f0 <= f1 and l1 <= l0, gets
    # The header block was among the handle's last reads: asked again at most once.
    header = [e for e in lab.log(since=mark) if e["kind"] == "GET_RANGE"
              and e["range"].startswith("bytes=0-")]
    assert len(header) <= 1, header


def test_corrupt_tile_leaves_the_shared_cache(lab, small_cog):
    """With VSITUNE_SHARED_CACHE=YES the bytes live in the host's segment, not in the
    process: the drop reaches the segment (vt__shmc_drop), or every process of the
    host would keep failing."""
    key, pool = small_cog["key"], f"rely{os.getpid()}"
    try:
        reads, mark = _decode_run(lab, small_cog, "gdal", "reopen", extra={
            "VSITUNE_SHARED_CACHE": "YES", "VSITUNE_SHARED_CACHE_NAME": pool},
            arm=lambda: lab.pfault("corrupt", key=key, request_kind="GET_RANGE",
                                   endpoint="fp1", from_byte=65536))
    finally:
        for seg in Path("/dev/shm").glob(f"vsitune-*-{pool}"):
            seg.unlink()
    _assert_decode_error(reads[0], key)
    assert [r["status"] for r in reads[1:]] == ["ok", "ok"], reads
    assert [e["fault"] for e in _tile_gets(lab, key, mark)] == ["p:corrupt", None]


@pytest.mark.parametrize("client", ["gdal", "gdal-noexc", "rasterio"])
def test_permanently_corrupt_tile_is_fetched_once_more_then_fails(lab, small_cog, client):
    key = small_cog["key"]
    try:
        reads, mark = _decode_run(lab, small_cog, client, "reopen", arm=lambda: lab.pfault(
            "corrupt", count=1000, key=key, request_kind="GET_RANGE", endpoint="fp1",
            from_byte=65536))
    finally:
        lab.clear_faults()
    for r in reads:
        _assert_decode_error(r, key)
    # One refetch; after it the failure is real: no loop, no more requests.
    gets = _tile_gets(lab, key, mark)
    assert [e["fault"] for e in gets] == ["p:corrupt", "p:corrupt"], gets


@pytest.mark.parametrize("client", ["gdal", "rasterio"])
def test_corrupt_header_fails_one_open_then_heals(lab, small_cog, client):
    key = small_cog["key"]
    reads, mark = _decode_run(lab, small_cog, client, "reopen", arm_first=True,
                              arm=lambda: lab.pfault("corrupt", key=key,
                                                     request_kind="GET_RANGE", endpoint="fp1"))
    assert reads[0]["status"] == "error" and key in reads[0]["error"], reads
    # GDAL's words: "... as being in a supported ..." from 3.10 on
    assert re.search("not recognized as (being in )?a supported file format",
                     reads[0]["error"]), reads
    assert [r["status"] for r in reads[1:]] == ["ok", "ok"], reads
    header = [e for e in lab.log(since=mark) if e["key"] == key and e["kind"] == "GET_RANGE"
              and e["range"].startswith("bytes=0-")]
    assert [e["fault"] for e in header] == ["p:corrupt", None], header


def test_flipped_bytes_over_h2_are_fetched_again(lab, small_cog):
    key = small_cog["key"]
    reads, mark = _decode_run(lab, small_cog, "gdal", "same", endpoint="fp2",
                              arm=lambda: lab.pfault("flip", key=key, request_kind="GET_RANGE",
                                                     endpoint="fp2"))
    # GTiff may notice the damage on the COG's block leader and ask again within the
    # first call (then that call already succeeds); otherwise its decoder fails it.
    assert reads[0]["status"] in ("ok", "error"), reads
    if reads[0]["status"] == "error":
        _assert_decode_error(reads[0], key)
    assert [r["status"] for r in reads[1:]] == ["ok", "ok"], reads
    assert [e["fault"] for e in _tile_gets(lab, key, mark)] == ["p:flip", None]


def test_c_tool_reads_the_pixel_right_the_second_time(lab, small_cog, gdal):
    """gdallocationinfo queries one pixel twice in one process: the first query fails
    on the corrupt tile, the second is fetched again (stock GDAL keeps failing)."""
    key = small_cog["key"]
    local = lab_client.run_tool(["gdallocationinfo", "-valonly", small_cog["path"], "1500",
                                 "700"], env=dict(os.environ))[0].stdout.strip()
    mark = last_seq(lab)
    lab.pfault("corrupt", key=key, request_kind="GET_RANGE", endpoint="fp1",
               from_byte=65536)
    env = gdal.env(endpoint="fp1", vsitune=True, extra=FAST)
    cp = subprocess.run(["gdallocationinfo", "-valonly", s3path(small_cog)],
                        input="1500 700\n1500 700\n", env=env, capture_output=True,
                        text=True, timeout=120)
    assert cp.stdout.split() == [local], (cp.stdout, cp.stderr)
    assert "IReadBlock failed" in cp.stderr and os.path.basename(key) in cp.stderr, cp.stderr
    gets = _tile_gets(lab, key, mark)
    assert [e["fault"] for e in gets] == ["p:corrupt", None], gets


RAW_TWICE = r"""
import ctypes
with open("/proc/self/maps") as maps:  # the libgdal osgeo loaded (soname per release)
    lib = ctypes.CDLL(next(ln.split()[-1] for ln in maps if "/libgdal.so." in ln))
lib.VSIFOpenL.restype = ctypes.c_void_p
lib.VSIFOpenL.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
lib.VSIFCloseL.argtypes = [ctypes.c_void_p]
lib.VSIFReadMultiRangeL.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                                    ctypes.POINTER(ctypes.c_uint64),
                                    ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p]
fp = lib.VSIFOpenL(path.encode(), b"rb")
want = open(local, "rb").read()
got = []
for _ in range(3):  # the same two ranges on the same handle, three times
    bufs = [ctypes.create_string_buffer(n) for _, n in ranges]
    ptrs = (ctypes.c_void_p * 2)(*[ctypes.cast(b, ctypes.c_void_p) for b in bufs])
    offs = (ctypes.c_uint64 * 2)(*[o for o, _ in ranges])
    lens = (ctypes.c_size_t * 2)(*[n for _, n in ranges])
    assert lib.VSIFReadMultiRangeL(2, ptrs, offs, lens, ctypes.c_void_p(fp)) == 0
    got.append(all(b.raw == want[o:o + n] for b, (o, n) in zip(bufs, ranges)))
lib.VSIFCloseL(ctypes.c_void_p(fp))
result = got
"""


def test_same_ranges_read_again_are_fetched_again_once(lab, small_cog):
    """The re-read signal alone (no GDAL error at all: raw multi-range reads): the
    zeroed bytes are handed over once (HTTP cannot tell), the identical second read
    fetches them again, the third is served from the cache."""
    key = small_cog["key"]
    ranges = [[3400000, 40000], [3500000, 30000]]
    with Worker(lab, endpoint="fp1", extra=FAST) as w:
        w.call("ds = gdal.Open(path)\nds = None\nresult = 1", path=s3path(small_cog))
        mark = last_seq(lab)
        lab.pfault("corrupt", key=key, request_kind="GET_RANGE", endpoint="fp1")
        got = w.call(RAW_TWICE, path=s3path(small_cog), local=small_cog["path"],
                     ranges=ranges)
    assert got == [False, True, True]
    gets = _tile_gets(lab, key, mark)
    assert [e["fault"] for e in gets] == ["p:corrupt", None], gets
