"""test_shared_cache.py: the host-wide shared cache (issue 11), process against process.

Every test runs real processes against the lab and reads what the lab saw (its
request log): GDAL processes (the Worker of test_vsitune_helpers, shm_reader.py) and,
where hundreds must start and be killed, tests/tools/vt_shmread (the object layer in
C, no Python). Every byte read is compared with the local fixture. Each test uses a
shared-cache pool of its own (VSITUNE_SHARED_CACHE_NAME), so nothing leaks between
tests, and checks the segment is gone when its last process has left. No timing
assertions: a hang shows as a watchdog failure, never as a slow number.
"""

import json
import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

import lab_client
from test_vsitune_helpers import PY, Worker, last_seq, sigcheck  # noqa: F401 (autouse)

HERE = Path(__file__).resolve().parent
READER = HERE / "shm_reader.py"

# Two windows of the small fixture (2048x2048, 512-pixel tiles) in different tiles.
W1 = (600, 600, 200, 200)
W2 = (1300, 1300, 200, 200)

READ = """
ds = gdal.Open(path)
got = ds.GetRasterBand(1).ReadAsArray(*win)
lds = gdal.Open(local)  # a band does not keep its dataset alive (GDAL 3.6)
ref = lds.GetRasterBand(1).ReadAsArray(*win)
result = bool(np.array_equal(got, ref))
"""


def segment(pool, uid=0, shm_dir="/dev/shm"):
    return Path(shm_dir) / f"vsitune-{uid}-{pool}"


@pytest.fixture
def pool(request):
    """A pool name of this test's own; fails the test if its segment outlives it."""
    name = f"t{os.getpid()}-{abs(hash(request.node.name)) % 10**8}"
    yield name
    time.sleep(0.3)  # a watcher notices the last process's exit
    leftover = [p for p in Path("/dev/shm").glob(f"vsitune-*-{name}")]
    for p in leftover:
        p.unlink()
    assert not leftover, f"segment left behind: {leftover}"


def shared(pool, **more):
    env = {"VSITUNE_SHARED_CACHE": "YES", "VSITUNE_SHARED_CACHE_NAME": pool,
           "GDAL_CACHEMAX": "0"}
    env.update({k: str(v) for k, v in more.items()})
    return env


def read(worker, cog, win):
    assert worker.call(READ, path=f"/vsis3/lab/{cog['key']}", local=cog["path"],
                       win=list(win)) is True


def since(lab, mark):
    return [e for e in lab.log() if e["seq"] > mark]


def test_another_process_reads_for_free(lab, small_cog, pool):
    """B opens what A opened, reads the tile A read: 0 requests. A new tile costs
    one GET whoever reads it first, and nothing for the other."""
    with Worker(lab, extra=shared(pool)) as a, Worker(lab, extra=shared(pool)) as b:
        read(a, small_cog, W1)
        assert [e["kind"] for e in lab.log()] == ["GET_RANGE", "GET_RANGE"]
        mark = last_seq(lab)
        read(b, small_cog, W1)
        assert since(lab, mark) == []
        read(b, small_cog, W2)
        got = since(lab, mark)
        assert [e["kind"] for e in got] == ["GET_RANGE"]
        assert got[0]["if_match"] == small_cog["etag"]
        mark = last_seq(lab)
        read(a, small_cog, W2)
        assert since(lab, mark) == []
        assert segment(pool).stat().st_mode & 0o777 == 0o600
    assert not segment(pool).exists()


def first_line(p, timeout=300):
    """p's first line of output. A process that prints none within `timeout` seconds is
    killed and the test fails with its stderr (a reader that hangs never hangs the suite)."""
    timer = threading.Timer(timeout, p.kill)
    timer.start()
    try:
        line = p.stdout.readline()
    finally:
        timer.cancel()
    if not line:
        p.kill()
        pytest.fail(f"no answer within {timeout} s (or exit {p.wait()}): "
                    f"{p.stderr.read()[-2000:]}")
    return line


def run_readers(lab, cog, n, extra, windows, endpoint="h1", hold=False):
    """n reader processes started together. With hold, each stays attached after its
    reads until all n have read, so they share one segment however far apart the
    machine starts them (the last process to leave removes it: a reader that started
    after the others had left would make its own)."""
    env = lab_client.gdal_env(lab.env(endpoint), vsitune=True, extra=extra)
    args = [PY, str(READER), "--key", cog["key"], "--local", cog["path"]]
    args += ["--hold"] if hold else []
    args += [",".join(map(str, w)) for w in windows]
    procs = [subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(n)]
    lines = [first_line(p) for p in procs]  # each: its reads are done
    for p, first in zip(procs, lines):
        out, err = p.communicate(timeout=300)  # closes stdin: a holder leaves
        assert p.returncode == 0, err[-2000:]
        res = json.loads((first + out).strip().splitlines()[-1])
        assert res["nerrors"] == 0, res["errors"]


def _gets(lab):
    """(range GETs, bytes they carried) of the lab's log since its last reset."""
    log = [e for e in lab.log() if e["kind"] == "GET_RANGE"]
    return len(log), sum(e.get("bytes_sent") or 0 for e in log)


def test_n_processes_cost_the_requests_of_one(lab, small_cog, pool):
    """4 processes reading the same 8 windows at once fetch each byte once for the host
    (coalesced across processes), where per-process caches fetch everything 4 times.
    Processes claim blocks one at a time, so when two reach a window together each may
    fetch the part it claimed first: the same bytes in more, smaller requests. Bytes are
    therefore held to 1.1x of one process's, requests to at most half the private
    caches' (the CI run with every GDAL at once saw 7 -> 14 once; 7 -> 7 alone). The four
    hold the segment until all have read: started 0.4 s apart on a loaded machine, the
    first had left (and removed the segment) before the last came, 1 run in 12."""
    rnd = random.Random(11)
    wins = [(rnd.randrange(0, 1800), rnd.randrange(0, 1800), 240, 240) for _ in range(8)]
    run_readers(lab, small_cog, 1, shared(pool), wins)
    one, one_bytes = _gets(lab)
    lab.reset()
    run_readers(lab, small_cog, 4, shared(pool), wins, hold=True)
    four_shared, shared_bytes = _gets(lab)
    lab.reset()
    run_readers(lab, small_cog, 4, {"GDAL_CACHEMAX": "0"}, wins)
    four_private, private_bytes = _gets(lab)
    assert one >= 5 and one_bytes > 0
    assert four_private == 4 * one and private_bytes == 4 * one_bytes
    assert one_bytes <= shared_bytes <= one_bytes * 1.1, (one_bytes, shared_bytes)
    assert one <= four_shared <= four_private / 2, (one, four_shared, four_private)


POOL = HERE / "shm_pool.py"


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_process_pool_second_pass_is_free(lab, small_cog, pool, method):
    """A ProcessPoolExecutor (fork and spawn start methods, 4 workers) reads 12
    windows, then the same windows again in reverse order, so most land on another
    worker than the first time: the second pass costs 0 requests."""
    wins = [f"{x},{y},256,256" for x in (0, 700, 1400) for y in (100, 900, 1500, 1780)]
    env = lab_client.gdal_env(lab.env("h1"), vsitune=True, extra=shared(pool))
    p = subprocess.Popen([PY, str(POOL), "--key", small_cog["key"], "--local",
                          small_cog["path"], "--method", method] + wins, env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert json.loads(first_line(p)).get("phase") == "pass1"
        first = lab.counts()["GET_RANGE"]
        mark = last_seq(lab)
        p.stdin.write("go\n")
        p.stdin.flush()
        res = json.loads(first_line(p, 120))
        assert p.wait(timeout=120) == 0
    finally:
        p.kill()
    assert res["ok"] and res["pids"] >= 2
    assert first >= 7  # the header and the tiles of 12 windows
    assert since(lab, mark) == []


def hold_reader(lab, cog, extra, windows, endpoint="h1", user=None):
    """An shm_reader.py that reads `windows`, prints its result, then holds the
    segment until its stdin closes. Returns (Popen, result)."""
    env = lab_client.gdal_env(lab.env(endpoint), vsitune=True, extra=extra)
    args = [PY, str(READER), "--hold", "--key", cog["key"], "--local", cog["path"]]
    args += [",".join(map(str, w)) for w in windows]
    if user is not None:
        env["HOME"] = "/tmp"
        args = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] + args
    p = subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    res = json.loads(first_line(p))
    assert res["nerrors"] == 0, res["errors"]
    return p, res


def release(p):
    p.stdin.close()
    assert p.wait(timeout=60) == 0, p.stderr.read()[-2000:]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a process as another uid")
def test_two_users_never_share(lab, small_cog, pool):
    """A second uid reading the same window while the first holds its segment pays
    the cold price (header + tile) and gets its own segment, 0600, its own."""
    a, _ = hold_reader(lab, small_cog, shared(pool), [W1])
    try:
        mark = last_seq(lab)
        b, _ = hold_reader(lab, small_cog, shared(pool), [W1], user=65534)
        try:
            assert [e["kind"] for e in since(lab, mark)] == ["GET_RANGE", "GET_RANGE"]
            for uid in (0, 65534):
                st = segment(pool, uid).stat()
                assert st.st_uid == uid and st.st_mode & 0o777 == 0o600
        finally:
            release(b)
        assert not segment(pool, 65534).exists()
    finally:
        release(a)


def test_credential_identities_never_share_unless_opted_in(lab, small_cog, pool):
    """Another access key id pays the cold price for what the first key read, even
    on one host and pool; with VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS=YES in both
    processes the second reads for free."""
    lab.register_credentials("AKIDSECONDIDENTITY01", "second-secret-key-0123456789")
    key2 = {"AWS_ACCESS_KEY_ID": "AKIDSECONDIDENTITY01",
            "AWS_SECRET_ACCESS_KEY": "second-secret-key-0123456789"}
    with Worker(lab, extra=shared(pool)) as a, \
            Worker(lab, extra=shared(pool, **key2)) as b:
        read(a, small_cog, W1)
        mark = last_seq(lab)
        read(b, small_cog, W1)
        got = since(lab, mark)
        assert [e["kind"] for e in got] == ["GET_RANGE", "GET_RANGE"]
        assert {e["akid"] for e in got} == {"AKIDSECONDIDENTITY01"}
    optin = {"VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS": "YES"}
    with Worker(lab, extra=shared(pool, **optin)) as a, \
            Worker(lab, extra=shared(pool, **optin, **key2)) as b:
        read(a, small_cog, W2)
        mark = last_seq(lab)
        read(b, small_cog, W2)
        assert since(lab, mark) == []


def test_curl_credentials_share_when_opted_in_for_the_path(lab, small_cog, pool):
    """/vsicurl/: two processes sending different GDAL_HTTP_HEADERS are two identities
    (the second pays for what the first read); VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS=YES
    set for the URL's path only (gdal.SetPathSpecificOption), as for /vsis3/, lets the
    second read for free."""
    url = "/vsicurl/" + lab.presign("lab", small_cog["key"], endpoint="h1")
    prefix = url.split("?")[0].rsplit("/", 1)[0] + "/"
    code = """
if opt_in:
    gdal.SetPathSpecificOption(prefix, "VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS", "YES")
ds = gdal.Open(path)
got = ds.GetRasterBand(1).ReadAsArray(*win)
lds = gdal.Open(local)
result = bool((got == lds.GetRasterBand(1).ReadAsArray(*win)).all())
"""
    for opt_in, win, paid in ((False, W1, 2), (True, W2, 0)):
        with Worker(lab, extra=shared(pool, GDAL_HTTP_HEADERS="X-Who: a")) as a, \
                Worker(lab, extra=shared(pool, GDAL_HTTP_HEADERS="X-Who: b")) as b:
            args = dict(path=url, prefix=prefix, local=small_cog["path"], win=list(win),
                        opt_in=opt_in)
            assert a.call(code, **args) is True
            mark = last_seq(lab)
            assert b.call(code, **args) is True
            got = since(lab, mark)
            # header and tile again when the identities differ; nothing when shared
            assert len(got) == paid, (opt_in, [(e["kind"], e["range"]) for e in got])
            assert all((e.get("user_agent") or "").startswith("vsitune") for e in got)


def test_endpoints_never_share(lab, small_cog, pool):
    """The same bucket and key through another endpoint is another object."""
    with Worker(lab, extra=shared(pool)) as a, \
            Worker(lab, endpoint="h1tls", extra=shared(pool)) as b:
        read(a, small_cog, W1)
        mark = last_seq(lab)
        read(b, small_cog, W1)
        got = since(lab, mark)
        assert [e["kind"] for e in got] == ["GET_RANGE", "GET_RANGE"]
        assert {e["endpoint"] for e in got} == {"h1tls"}


SIZE = """
f = gdal.VSIFOpenL(path, "rb")
gdal.VSIFSeekL(f, 0, 2)
result = gdal.VSIFTellL(f)
gdal.VSIFCloseL(f)
"""


@pytest.mark.parametrize("opts,sees", [
    ({}, "old"),                                            # 30 s of another's answer
    ({"VSITUNE_SHARED_METADATA_TTL": "0"}, "new"),          # blocks only
    ({"CPL_VSIL_CURL_NON_CACHED": "/vsis3/lab/shmfresh"}, "new"),  # GDAL's option
], ids=["default", "metadata-ttl-0", "non-cached"])
def test_freshness_across_processes(lab, tmp_path, pool, opts, sees):
    """An object overwritten by another tool after process A opened it: process B,
    started after the overwrite, trusts A's answer (size, ETag) for
    VSITUNE_SHARED_METADATA_TTL (documented difference); with 0, or for a
    CPL_VSIL_CURL_NON_CACHED name, B asks S3 and sees the new object, as stock."""
    key = f"shmfresh/{pool}.bin"
    old, new = tmp_path / "old", tmp_path / "new"
    old.write_bytes(b"a" * 5000)
    new.write_bytes(b"b" * 9000)
    lab.put_object("lab", key, old)
    path = f"/vsis3/lab/{key}"
    with Worker(lab, extra=shared(pool)) as a:
        assert a.call(SIZE, path=path) == 5000
        lab.put_object("lab", key, new)
        with Worker(lab, extra=shared(pool, **opts)) as b:
            mark = last_seq(lab)
            got = b.call(SIZE, path=path)
            asked = [e["kind"] for e in since(lab, mark)]
    assert got == (5000 if sees == "old" else 9000)
    assert asked == ([] if sees == "old" else ["GET_RANGE"])


def watcher_pids(pool):
    cp = subprocess.run(["pgrep", "-f", f"vsitune-shmwatch {segment(pool)} "],
                        capture_output=True, text=True)
    return [int(p) for p in cp.stdout.split()]


def gone_within(path, seconds):
    deadline = time.monotonic() + seconds
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not path.exists()


def test_segment_of_a_killed_last_process_is_removed(lab, small_cog, pool):
    """The last attached process is SIGKILLed (no exit handler runs): the
    segment's watcher removes the name, and the next process starts afresh."""
    a, _ = hold_reader(lab, small_cog, shared(pool), [W1])
    assert len(watcher_pids(pool)) == 1
    a.kill()
    a.wait(timeout=30)
    assert gone_within(segment(pool), 30), "the watcher did not remove the segment"
    assert watcher_pids(pool) == []
    mark = last_seq(lab)
    b, _ = hold_reader(lab, small_cog, shared(pool), [W1])
    assert [e["kind"] for e in since(lab, mark)] == ["GET_RANGE", "GET_RANGE"]
    release(b)
    assert gone_within(segment(pool), 30)


def test_stale_segment_without_a_watcher_is_reused_then_removed(lab, small_cog, pool):
    """With its watcher gone too (killed), a killed run's segment stays; the next
    process reuses it (the header and the tile: 0 requests) and, leaving last,
    removes it."""
    a, _ = hold_reader(lab, small_cog, shared(pool), [W1])
    for pid in watcher_pids(pool):
        os.kill(pid, signal.SIGKILL)
    a.kill()
    a.wait(timeout=30)
    time.sleep(0.2)
    assert segment(pool).exists()
    mark = last_seq(lab)
    b, _ = hold_reader(lab, small_cog, shared(pool), [W1])
    assert since(lab, mark) == []
    release(b)
    assert gone_within(segment(pool), 30)


def send(worker, code, **params):
    """Start a snippet in a Worker without waiting for its answer."""
    prelude = "".join(f"{k} = {v!r}\n" for k, v in params.items())
    worker.proc.stdin.write((json.dumps({"code": prelude + code}) + "\n").encode())
    worker.proc.stdin.flush()


def wait_for_fault(lab, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        hit = [e for e in lab.log() if e["fault"]]
        if hit:
            return hit[0]
        time.sleep(0.05)
    pytest.fail("the faulted request never reached the lab")


def stall_a_tile_read(lab, a, cog):
    """A opens the COG, then its tile GET for W1 stalls forever at the lab."""
    path = f"/vsis3/lab/{cog['key']}"
    a.call("ds = gdal.Open(path)\nresult = ds.RasterXSize", path=path)
    lab.fault("stall", key=cog["key"], count=1)
    send(a, f"ds.GetRasterBand(1).ReadAsArray(*{list(W1)})\nresult = True")
    return wait_for_fault(lab)


def test_a_stalled_filler_is_waited_for_only_so_long(lab, small_cog, pool):
    """A's tile GET stalls (A alive): B waits for that tile at most
    VSITUNE_SHARED_CACHE_WAIT (1 s), then fetches it itself and reads right."""
    env = shared(pool, VSITUNE_SHARED_CACHE_WAIT=1)
    with Worker(lab, extra=env) as b:
        a = Worker(lab, extra=env)
        try:
            stalled = stall_a_tile_read(lab, a, small_cog)
            mark = last_seq(lab)
            read(b, small_cog, W1)
            got = since(lab, mark)
            assert [(e["kind"], e["status"], e["range"]) for e in got] == \
                [("GET_RANGE", 206, stalled["range"])]
        finally:
            a.proc.kill()
            a.proc.wait(timeout=30)


def test_a_killed_filler_is_taken_over(lab, small_cog, pool):
    """A's tile GET stalls forever and A is SIGKILLed while B waits for that tile
    with a 10-minute bound: B notices A's death, takes the block over and reads
    right (only a takeover can answer within the 120 s watchdog)."""
    env = shared(pool, VSITUNE_SHARED_CACHE_WAIT=600)
    with Worker(lab, extra=env) as b:
        a = Worker(lab, extra=env)
        try:
            stalled = stall_a_tile_read(lab, a, small_cog)
            mark = last_seq(lab)
            send(b, READ, path=f"/vsis3/lab/{small_cog['key']}", local=small_cog["path"],
                 win=list(W1))
            time.sleep(0.5)  # B finds the tile being fetched by A (not a check)
        finally:
            a.proc.kill()
            a.proc.wait(timeout=30)
        ans = json.loads(b._readline(120))
        assert ans["ok"] and ans["result"] is True, ans
        got = since(lab, mark)
        assert [(e["kind"], e["status"], e["range"]) for e in got] == \
            [("GET_RANGE", 206, stalled["range"])]


def test_random_kills_never_hang_corrupt_or_leak(lab, small_cog, pool):
    """220 SIGKILLs at random moments of 4 processes reading random ranges of one
    object (10 ms RTT, so transfers are in flight): every byte any process got was
    right (a wrong one exits 3), a final reader finishes (none of the dead fillers'
    blocks hangs it) and, leaving last, removes the segment."""
    tool = lab_client.build_dir() / "tests" / "tools" / "vt_shmread"
    if not tool.exists():
        pytest.fail(f"{tool} is not built")
    lab.set_delay(5, "h1")
    env = lab_client.gdal_env(lab.env("h1"), vsitune=False,
                              extra=shared(pool, VSITUNE_SHARED_CACHE_WAIT=20))
    path = f"lab/{small_cog['key']}"
    rnd = random.Random(20261130)

    def start(seed):
        return subprocess.Popen([str(tool), "-n", "0", "-s", str(seed), "-l", "400000",
                                 "-t", "2", path, small_cog["path"]], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    procs = [start(i) for i in range(4)]
    kills = 0
    try:
        while kills < 220:
            time.sleep(rnd.uniform(0, 0.06))
            i = rnd.randrange(len(procs))
            p = procs[i]
            if p.poll() is not None:
                pytest.fail(f"reader exited by itself ({p.returncode}): "
                            f"{p.stderr.read().decode()[-2000:]}")
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
            kills += 1
            procs[i] = start(1000 + kills)
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=30)
    final = subprocess.run([str(tool), "-n", "40", "-s", "7", "-l", "400000", "-t", "4", path,
                            small_cog["path"]], env=env, capture_output=True, text=True,
                           timeout=120)
    assert final.returncode == 0, final.stderr[-2000:]
    assert json.loads(final.stdout.strip().splitlines()[-1])["shared"] is True
    assert kills == 220
    assert not segment(pool).exists()


@pytest.fixture
def tmpfs(tmp_path):
    """tmpfs(size) -> a tmpfs of that size mounted under tmp_path (needs root),
    unmounted after the test."""
    mounted = []

    def mount(size):
        d = tmp_path / f"shm-{size}"
        d.mkdir()
        cp = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=1777", "tmpfs",
                             str(d)], capture_output=True, text=True)
        if cp.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {cp.stderr.strip()}")
        mounted.append(d)
        return d
    yield mount
    for d in mounted:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


def test_a_64_mb_dev_shm_is_detected_and_fitted(lab, small_cog, pool, tmpfs):
    """On a 64 MiB /dev/shm (as containers mount it) the 192 MiB asked is fitted to
    32 MiB: the debug output and `tunerd detect` say so, the segment is no larger,
    and it is shared."""
    small_shm = tmpfs("64m")
    extra = shared(pool, VSITUNE_SHM_DIR=small_shm, CPL_DEBUG="VSITUNE")
    env = lab_client.gdal_env(lab.env("h1"), vsitune=True, extra=extra)
    args = [PY, str(READER), "--hold", "--key", small_cog["key"], "--local", small_cog["path"],
            ",".join(map(str, W1))]
    a = subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert json.loads(first_line(a))["nerrors"] == 0
        seg = segment(pool, shm_dir=small_shm)
        assert seg.stat().st_size <= 32 << 20
        mark = last_seq(lab)
        b, _ = hold_reader(lab, small_cog, extra, [W1])
        assert since(lab, mark) == []
        release(b)
    finally:
        a.stdin.close()
        a.wait(timeout=60)
    debug = a.stderr.read()
    assert "shared cache: created" in debug and "fitted to 32 MiB" in debug, debug[-2000:]
    tunerd = lab_client.build_dir() / "tunerd" / "tunerd"
    cp = subprocess.run([str(tunerd), "detect"], env=dict(os.environ, VSITUNE_SHM_DIR=str(small_shm)),
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    assert "=> shared cache:     32 MiB for the host" in cp.stdout, cp.stdout
    assert "fitted to 32 MiB" in cp.stdout


def test_too_small_a_dev_shm_falls_back_to_the_process_cache(lab, small_cog, pool, tmpfs):
    """Under 16 MiB (at most half of it would be under 8 MiB) nothing is created:
    the process uses its own cache, says why, and reads right."""
    d = tmpfs("12m")
    env = lab_client.gdal_env(lab.env("h1"), vsitune=True,
                              extra=shared(pool, VSITUNE_SHM_DIR=d, CPL_DEBUG="VSITUNE"))
    cp = subprocess.run([PY, str(READER), "--key", small_cog["key"], "--local",
                         small_cog["path"], ",".join(map(str, W1))], env=env,
                        capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0 and json.loads(cp.stdout.splitlines()[-1])["nerrors"] == 0
    assert "per-process cache instead" in cp.stderr, cp.stderr[-2000:]
    assert list(d.iterdir()) == []


def test_tunerd_stats_and_watch_show_the_segment_once(lab, small_cog, pool, tmp_path):
    """Two processes attached to one segment, counters published: `tunerd stats`
    and `tunerd watch` print the segment once (size, use, hit ratio, 2 processes
    attached), and the processes' own cache columns are 0 (nothing kept twice)."""
    stats_dir = tmp_path / "stats"
    stats_dir.mkdir()
    extra = shared(pool, VSITUNE_STATS_DIR=stats_dir)
    a, _ = hold_reader(lab, small_cog, extra, [W1])
    b, _ = hold_reader(lab, small_cog, extra, [W1, W2])
    tunerd = lab_client.build_dir() / "tunerd" / "tunerd"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            files = list(stats_dir.glob("vsitune-*.json"))
            docs = [json.loads(f.read_text()) for f in files]
            if len(docs) == 2 and all(d.get("shared", {}).get("attached") == 2 for d in docs):
                break
            time.sleep(0.2)
        assert len(docs) == 2 and all("shared" in d for d in docs), docs
        assert {d["shared"]["path"] for d in docs} == {str(segment(pool))}
        assert all(d["cache"]["budget"] == 0 and d["cache"]["retained_bytes"] == 0 for d in docs)
        cp = subprocess.run([str(tunerd), "stats", "--dir", str(stats_dir)], capture_output=True,
                            text=True, timeout=60)
        assert cp.returncode == 0, cp.stderr
        lines = [ln for ln in cp.stdout.splitlines() if ln.startswith("# shared cache ")]
        assert len(lines) == 1, cp.stdout
        assert str(segment(pool)) in lines[0] and "2 process(es) attached" in lines[0]
        assert "hit " in lines[0] and "MiB used" in lines[0]
        cp = subprocess.run([str(tunerd), "watch", "--count", "1", "--stats-dir", str(stats_dir),
                             "--match", "libgdal"], capture_output=True, text=True, timeout=60)
        assert cp.returncode == 0, cp.stderr
        assert sum(1 for ln in cp.stdout.splitlines() if ln.startswith("# shared cache ")) == 1, \
            cp.stdout
    finally:
        release(b)
        release(a)
