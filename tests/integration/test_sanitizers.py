"""test_sanitizers.py: the plugin under AddressSanitizer + UndefinedBehaviorSanitizer,
and under ThreadSanitizer, inside real GDAL processes against the lab.

Builds gdal_vsitune.so with -DVT_ASAN=ON in a build directory of its own, then runs
a 16-thread open-per-window reader over HTTP/2, a gdal_translate over HTTP/1.1,
processes sharing one cache segment and readers meeting a corrupt tile (the
decode-failure path, suspect.c) with the sanitizer runtimes preloaded (GDAL and Python are not instrumented; the plugin is).
Any report fails the test. Leak checking is off: GDAL and Python keep
process-lifetime allocations by design (valgrind found no definite leak of ours).
The ThreadSanitizer build (-DVT_TSAN=ON) runs the threaded readers and the
decode-failure path; reports that touch no plugin source are GDAL's or glibc's.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import lab_client

READER = Path(__file__).resolve().parent / "vt_reader.py"


def runtime(name):
    path = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True,
                          text=True).stdout.strip()
    return path if path and os.path.isabs(path) and os.path.exists(path) else None


@pytest.fixture(scope="module")
def asan_plugin_dir():
    asan, ubsan = runtime("libasan.so"), runtime("libubsan.so")
    if not asan or not ubsan:
        pytest.fail("gcc's libasan.so/libubsan.so are missing (build-essential installs them)")
    src = lab_client.REPO
    # inside the build directory: in a Debian root that is the one folder bound
    # from this tree (a sibling would be the root's own, shared by every tree built there)
    build = Path(lab_client.build_dir()) / "sanitizer-asan"
    for cmd in (["cmake", "-S", str(src), "-B", str(build), "-DVT_ASAN=ON",
                 "-DVT_BUILD_TESTS=OFF", "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                ["cmake", "--build", str(build), "-j2", "--target", "gdal_vsitune"]):
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    return build / "vsiplugin", f"{asan} {ubsan}"


def sanitized_env(lab, endpoint, plugin):
    plugin_dir, preload = plugin
    env = lab_client.gdal_env(lab.env(endpoint), vsitune=True)
    env.update(GDAL_DRIVER_PATH=str(plugin_dir), LD_PRELOAD=preload,
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    return env


def assert_clean(cp):
    assert "AddressSanitizer" not in cp.stderr and "runtime error:" not in cp.stderr, \
        cp.stderr[-4000:]
    assert cp.returncode == 0, cp.stderr[-4000:]


def test_threads_over_h2_are_clean(lab, small_cog, asan_plugin_dir):
    env = sanitized_env(lab, "h2", asan_plugin_dir)
    env["CPL_DEBUG"] = "VSITUNE"  # each request's line: attempts, new or reused connection
    cp = subprocess.run(["/usr/bin/python3", str(READER), "open-per-window",
                         "--key", small_cog["key"], "--local", small_cog["path"],
                         "--threads", "16", "--windows", "160"],
                        env=env, capture_output=True, text=True, timeout=600)
    assert_clean(cp)
    res = json.loads(cp.stdout.strip().splitlines()[-1])
    assert res["nerrors"] == 0, res["errors"]
    engine, front = res["stats"]["engine"], lab.connections("h2")
    lines = [ln for ln in cp.stderr.splitlines()
             if ln.startswith("VSITUNE: GET ") and ("new connection" in ln or
                                                   " 1 attempt(s)" not in ln)]
    why = (engine, front, lines[:20])
    # One connection for 16 threads. A second one only as the engine's stall
    # defence makes it (a request retried on a fresh connection after the low-speed
    # limit: the loaded machine of a CI run with three suites and the sanitizers);
    # never one the plugin did not open itself (the front saw what the plugin counts).
    assert front["used"] == engine["connections"], why
    assert engine["connections"] == 1 or engine["retries"] > 0, why


def test_translate_over_h1_is_clean(lab, small_cog, asan_plugin_dir, tmp_path):
    env = sanitized_env(lab, "h1", asan_plugin_dir)
    cp = subprocess.run(["gdal_translate", "-q", "-srcwin", "0", "0", "2000", "2000",
                         f"/vsis3/lab/{small_cog['key']}", str(tmp_path / "out.tif")],
                        env=env, capture_output=True, text=True, timeout=600)
    assert_clean(cp)
    assert (tmp_path / "out.tif").stat().st_size > 0


def test_shared_cache_across_processes_is_clean(lab, small_cog, asan_plugin_dir):
    """4 processes (8 threads each) share one segment over h2, reading the same and
    different windows at once: cross-process waits, fills, hits and evictions (a
    segment smaller than what they read) under the sanitizers."""
    env = sanitized_env(lab, "h2", asan_plugin_dir)
    env.update(VSITUNE_SHARED_CACHE="YES", VSITUNE_SHARED_CACHE_NAME=f"asan{os.getpid()}",
               VSITUNE_SHARED_CACHE_SIZE="9M", GDAL_CACHEMAX="0")
    procs = [subprocess.Popen(["/usr/bin/python3", str(READER), "windows",
                               "--key", small_cog["key"], "--local", small_cog["path"],
                               "--threads", "8", "--windows", "12", "--seed", str(i % 2)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert_clean(subprocess.CompletedProcess(p.args, p.returncode, out, err))
        res = json.loads(out.strip().splitlines()[-1])
        assert res["nerrors"] == 0, res["errors"]
        # the host's 9 MiB budget, not the per-process 64 MiB: the segment was used
        assert res["stats"]["cache"]["budget"] <= 9 << 20


def test_decode_failure_path_is_clean(lab, small_cog, asan_plugin_dir):
    """A corrupt tile answer, then reads that drop and fetch the tile again
    (suspect.c reads GDAL's error text, past a reset): rasterio and the bindings
    with exceptions, open-read-close three times."""
    env = sanitized_env(lab, "fp1", asan_plugin_dir)
    env["GDAL_HTTP_RETRY_DELAY"] = "0.05"
    for client in ("gdal", "rasterio"):
        lab.pfault("corrupt", key=small_cog["key"], request_kind="GET_RANGE",
                   endpoint="fp1", from_byte=65536)
        cp = subprocess.run(["/usr/bin/python3", str(READER.with_name("decode_reader.py")),
                             client, "reopen", "--arm-first", "--path",
                             f"/vsis3/lab/{small_cog['key']}", "--local", small_cog["path"]],
                            env=env, capture_output=True, text=True, timeout=600)
        assert_clean(cp)
        statuses = [line.split('"status": "')[1].split('"')[0]
                    for line in cp.stdout.splitlines()]
        assert statuses == ["error", "ok", "ok"], cp.stdout


# -- ThreadSanitizer ------------------------------------------------------------
# GDAL, glibc and Python are not instrumented, so TSan also reports on them: lock
# order inside GDAL's CPLCreateOrAcquireMutex (VSIFOpenL, the config lock) and TLS
# blocks glibc frees at thread exit. Those are not vsitune's; a report that has a frame
# in the plugin's sources fails the test.

@pytest.fixture(scope="module")
def tsan_plugin_dir():
    tsan = runtime("libtsan.so")
    if not tsan:
        pytest.fail("gcc's libtsan.so is missing (build-essential installs it)")
    build = Path(lab_client.build_dir()) / "sanitizer-tsan"
    for cmd in (["cmake", "-S", str(lab_client.REPO), "-B", str(build), "-DVT_TSAN=ON",
                 "-DVT_BUILD_TESTS=OFF", "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                ["cmake", "--build", str(build), "-j2", "--target", "gdal_vsitune"]):
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    return build / "vsiplugin", tsan


def plugin_reports(log_dir):
    """The TSan reports (one text each) where the plugin itself made an access or took
    a lock: some stack's first frame past the sanitizer's own interceptors is in
    gdal_vsitune.so. (A lock order between two of GDAL's mutexes, one of them taken
    in a GDAL call the plugin made, has GDAL's CPLAcquireMutex there: not ours. Nor is
    ld.so freeing a thread's dynamic TLS block at its exit, which TSan, not seeing
    ld.so's allocator, pairs with the plugin's _Thread_local accesses of an earlier
    thread whose block the memory was.)"""
    out = []
    for f in Path(log_dir).glob("tsan.*"):
        for rep in f.read_text(errors="replace").split("==================\n"):
            if "WARNING: ThreadSanitizer" not in rep or "_dl_deallocate_tls" in rep:
                continue  # glibc freeing an exited thread's TLS block, reused: TSan's blind spot
            stacks, cur = [], []
            for line in rep.splitlines():
                if line.strip().startswith("#"):
                    cur.append(line)
                elif cur:
                    stacks.append(cur)
                    cur = []
            if cur:
                stacks.append(cur)
            for st in stacks:
                first = next((fr for fr in st if "libtsan.so" not in fr), "")
                if "gdal_vsitune.so" in first:
                    out.append(rep)
                    break
    return out


def test_threads_under_tsan_have_no_race_in_the_plugin(lab, small_cog, tsan_plugin_dir,
                                                        tmp_path):
    """16 threads over h2 (one connection, open per window) and over h1 (a pool), and
    the decode-failure path, with the plugin built with -fsanitize=thread."""
    plugin_dir, tsan = tsan_plugin_dir
    runs = [("h2", [str(READER), "open-per-window", "--threads", "16", "--windows", "96"]),
            ("h1", [str(READER), "windows", "--threads", "16", "--windows", "6"]),
            ("fp1", [str(READER.with_name("decode_reader.py")), "gdal", "reopen",
                     "--arm-first", "--path", f"/vsis3/lab/{small_cog['key']}"])]
    for endpoint, args in runs:
        env = lab_client.gdal_env(lab.env(endpoint), vsitune=True)
        symbolizer = shutil.which("llvm-symbolizer")  # clang's (setup.sh): file:line frames
        env.update(GDAL_DRIVER_PATH=str(plugin_dir), LD_PRELOAD=tsan, GDAL_HTTP_RETRY_DELAY="0.05",
                   TSAN_OPTIONS=f"exitcode=0 report_signal_unsafe=0 log_path={tmp_path}/tsan"
                   + (f" external_symbolizer_path={symbolizer}" if symbolizer else ""))
        if endpoint == "fp1":
            lab.pfault("corrupt", key=small_cog["key"], request_kind="GET_RANGE",
                       endpoint="fp1", from_byte=65536)
        else:
            args = args + ["--key", small_cog["key"]]
        cp = subprocess.run(["/usr/bin/python3"] + args + ["--local", small_cog["path"]],
                            env=env, capture_output=True, text=True, timeout=1200)
        assert cp.returncode == 0, cp.stderr[-4000:]
        if endpoint == "fp1":
            assert cp.stdout.count('"ok"') == 2, cp.stdout
        else:
            assert '"nerrors": 0' in cp.stdout, cp.stdout[-2000:]
    reports = plugin_reports(tmp_path)
    assert not reports, "\n".join(reports)[:8000]
