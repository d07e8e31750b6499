#!/usr/bin/python3
"""test_tunerd_cli.py: the tunerd binary end to end.

Every --format is read back by a real parser (python json, bash `source`,
python yaml) or a strict grammar written here (Terraform HCL subset,
Dockerfile ENV lines) and must give the same values as the plain env format;
bad input gives one line and exit 2 (3 for a tier too small); detect reads
this machine's real cgroup v1 and a child cgroup with a limit we set; exec
and the Lambda wrapper apply the profile without overriding the caller's
variables; docs/tuning.md's table equals tunerd's json output.

Run: /usr/bin/python3 -m pytest tests/integration/test_tunerd_cli.py
Needs a built tree (cmake --build build); VT_BINARY_DIR overrides build/.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("VT_BINARY_DIR") or os.environ.get("VT_BUILD_DIR") or REPO / "build")
TUNERD = BUILD / "tunerd" / "tunerd"
WRAPPER = REPO / "tunerd" / "lambda-exec-wrapper"
PROFILES = REPO / "profiles"
CGROUP_V1_MEMORY = Path("/sys/fs/cgroup/memory")

PLATFORM_VARS = ["AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "K_SERVICE",
                 "CLOUD_RUN_JOB", "FUNCTIONS_WORKER_RUNTIME", "FUNCTIONS_EXTENSION_VERSION",
                 "WEBSITE_MEMORY_LIMIT_MB", "KUBERNETES_SERVICE_HOST", "TUNERD_SYSFS_ROOT",
                 "TUNERD_PROCFS_ROOT", "TUNERD_PROFILES_DIR"]


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in PLATFORM_VARS}
    env["TUNERD_PROFILES_DIR"] = str(PROFILES)
    env.update(extra)
    return env


def tunerd(*args, env=None, check=True):
    assert TUNERD.exists(), f"{TUNERD} not built: cmake --build build --target tunerd"
    p = subprocess.run([str(TUNERD), *args], capture_output=True, text=True, timeout=30,
                       env=env if env is not None else clean_env())
    if check and p.returncode != 0:
        raise AssertionError(f"tunerd {' '.join(args)} -> {p.returncode}: {p.stderr}")
    return p


# ---------------------------------------------------------------- parsers

def parse_env(text):
    out = {}
    for line in text.splitlines():
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", line), f"bad env line {line!r}"
        k, v = line.split("=", 1)
        assert k not in out, f"duplicate {k}"
        out[k] = v
    return out


def source_with_bash(text, names, prefix=""):
    """bash sources the text, then prints each name's value NUL-separated."""
    script = prefix + 'source "$1"\n' + "".join(
        f'printf "%s\\0" "${{{n}-__UNSET__}}"\n' for n in names)
    path = Path(f"/tmp/tunerd-src-{uuid.uuid4().hex}")
    path.write_text(text)
    try:
        p = subprocess.run(["bash", "-euc", script, "bash", str(path)], capture_output=True,
                           timeout=30, env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    finally:
        path.unlink()
    assert p.returncode == 0, p.stderr.decode()
    values = p.stdout.decode().split("\0")[:-1]
    return dict(zip(names, values))


HCL_STRING = r'"((?:[^"\\$%]|\\.|\$\$\{|%%\{|\$(?!\{)|%(?!\{))*)"'


def parse_terraform(text):
    """Strict grammar for what tunerd emits: comments, then
    locals { vsitune_env = { NAME = "string" ... } } and nothing else.
    String escapes per the HCL spec: \\" \\\\ \\n \\t, $${ -> ${, %%{ -> %{;
    a bare ${ or %{ (an interpolation) is rejected."""
    lines = text.splitlines()
    i = 0
    while i < len(lines) and lines[i].startswith("#"):
        i += 1
    assert lines[i] == "locals {", lines[i]
    assert lines[i + 1] == "  vsitune_env = {", lines[i + 1]
    out = {}
    i += 2
    while lines[i] != "  }":
        m = re.fullmatch(r"    ([A-Za-z_][A-Za-z0-9_]*) = " + HCL_STRING, lines[i])
        assert m, f"not an HCL attribute: {lines[i]!r}"
        raw = m.group(2)
        val = re.sub(r'\\(.)|\$\$\{|%%\{',
                     lambda x: {"n": "\n", "t": "\t"}.get(x.group(1), x.group(1))
                     if x.group(1) else x.group(0)[1:], raw)
        out[m.group(1)] = val
        i += 1
    assert lines[i:] == ["  }", "}"], lines[i:]
    return out


def parse_dockerfile(text):
    """Strict grammar: comment lines and `ENV NAME="value"` lines only, with
    Dockerfile double-quote escapes (\\\\ \\" \\$); an unescaped $ would be
    substituted by the builder, so it is rejected."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.fullmatch(r'ENV ([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\$]|\\[\\"$])*)"', line)
        assert m, f"not a Dockerfile ENV line: {line!r}"
        out[m.group(1)] = re.sub(r"\\(.)", r"\1", m.group(2))
    return out


def parse_k8s_yaml(text):
    doc = yaml.safe_load(text)
    assert list(doc) == ["env"]
    out = {}
    for item in doc["env"]:
        assert set(item) == {"name", "value"}
        assert isinstance(item["value"], str), item  # a k8s env value must be a string
        out[item["name"]] = item["value"]
    return out


HOSTILE = "it's \"$HOME\" \\ ${x} %{y} `id` #not-a-comment"


@pytest.fixture(scope="module")
def hostile_profiles(tmp_path_factory):
    d = tmp_path_factory.mktemp("profiles")
    for f in PROFILES.glob("*.profile"):
        shutil.copy(f, d / f.name)
    with open(d / "host.profile", "a") as f:
        f.write(f"env.HOSTILE = {HOSTILE}\n")
    return d


CASES = [
    ["--memory", "10240"],
    ["--memory", "10240", "--no-plugin"],
    ["--platform", "cloudrun", "--memory", "32768", "--cpus", "8", "--workload", "tiles"],
    ["--platform", "azure-functions", "--memory", "1536"],
]


@pytest.mark.parametrize("args", CASES + [["HOSTILE"]], ids=lambda a: " ".join(a))
def test_every_format_parses_to_the_same_values(args, hostile_profiles):
    env = clean_env()
    if args == ["HOSTILE"]:
        args = ["--platform", "host", "--memory", "4096", "--cpus", "2"]
        env["TUNERD_PROFILES_DIR"] = str(hostile_profiles)
    ref = parse_env(tunerd("profile", *args, "--format", "env", env=env).stdout)
    assert "GDAL_CACHEMAX" in ref and "TUNERD_WORKERS" in ref
    names = list(ref)

    def out(fmt):
        return tunerd("profile", *args, "--format", fmt, env=env).stdout

    doc = json.loads(out("json"))
    assert doc["env"] == ref
    assert str(doc["gdal_cachemax_mb"]) == ref["GDAL_CACHEMAX"]
    assert str(doc["workers"]) == ref["TUNERD_WORKERS"]
    assert doc["ledger"]["total_mb"] == sum(r["total_mb"] for r in doc["ledger"]["rows"])
    assert doc["ledger"]["free_mb"] == doc["memory_mb"] - doc["ledger"]["total_mb"] >= 0
    assert json.loads(out("lambda-json")) == {"Variables": ref}
    assert source_with_bash(out("shell"), names) == ref
    assert source_with_bash(out("dotenv"), names, prefix="set -a\n") == ref
    assert parse_k8s_yaml(out("k8s-yaml")) == ref
    assert parse_terraform(out("terraform")) == ref
    assert parse_dockerfile(out("dockerfile")) == ref
    if "HOSTILE" in ref:
        assert ref["HOSTILE"] == HOSTILE


def test_shell_exports_to_children():
    text = tunerd("profile", "--memory", "3538", "--format", "shell").stdout
    p = subprocess.run(["bash", "-c", 'source /dev/stdin; bash -c "echo $GDAL_CACHEMAX $TUNERD_WORKERS"'],
                       input=text, capture_output=True, text=True, timeout=30)
    assert p.stdout.split() == ["352", "2"]


def test_headline():
    doc = json.loads(tunerd("profile", "--memory", "10240", "--format", "json").stdout)
    assert doc["platform"] == "lambda"
    assert (doc["workers"], doc["worker_kind"], doc["gdal_cachemax_mb"]) == (5, "processes", 384)
    assert doc["env"]["GDAL_NUM_THREADS"] == "1"
    assert "VSI_CACHE" not in doc["env"] and "VSI_CACHE" in doc["not_set"]


def test_profile_names_the_backends_it_tunes():
    """The prefixes whose reads vsitune serves (so the cache and pool planned apply), the
    knob of each and its default, as the plugin's option table (docs/configuration.md)
    has them; none without the plugin."""
    doc = json.loads(tunerd("profile", "--memory", "10240", "--format", "json").stdout)
    assert [b["prefix"] for b in doc["backends"]] == ["/vsis3/", "/vsigs/", "/vsiaz/",
                                                      "/vsicurl/"]
    conf = (REPO / "docs" / "configuration.md").read_text()
    for b in doc["backends"]:
        if b["knob"]:
            row = re.search(rf"^\| `{b['knob']}` \| `(YES|NO)` \|", conf, re.M)
            assert row and (row.group(1) == "YES") == b["on_by_default"], b
    shell = tunerd("profile", "--memory", "10240", "--format", "shell").stdout
    assert "# vsitune's cache and connection pool apply to the reads it serves: /vsis3/" in shell
    none = json.loads(tunerd("profile", "--memory", "10240", "--no-plugin",
                             "--format", "json").stdout)
    assert none["backends"] == [] and not none["plugin"]


# ---------------------------------------------------------------- bad input

BAD = [
    (["profile", "--memory", "0"], 2, "--memory 0 is out of range (valid: 1..1048576 MiB)"),
    (["profile", "--memory", "-5"], 2, "--memory -5 is out of range"),
    (["profile", "--memory", "abc"], 2, "--memory 'abc' is not a whole number of MiB"),
    (["profile", "--memory", "10^9"], 2, "--memory '10^9' is not a whole number of MiB"),
    (["profile", "--memory", "1000000000"], 2, "--memory 1000000000 is out of range"),
    (["profile", "--memory", "99999999999999999999999"], 2, "out of range"),
    (["profile", "--memory", "1e9"], 2, "not a whole number"),
    (["profile", "--memory", ""], 2, "not a whole number"),
    (["profile", "--memory"], 2, "--memory needs a value"),
    (["profile", "--memory", "10240", "--platform", "gcp"], 2,
     "unknown platform 'gcp' (valid: lambda, cloudrun, azure-functions, kubernetes, host)"),
    (["profile", "--memory", "10240", "--format", "toml"], 2,
     "unknown format 'toml' (valid: env, shell, dotenv, json, lambda-json, terraform, "
     "dockerfile, k8s-yaml)"),
    (["profile", "--memory", "10240", "--workers", "6"], 2,
     "--workers 6 contradicts lambda at 10240 MiB (5.79 vCPU): valid 1..5"),
    (["profile", "--memory", "1769", "--workers", "4"], 2, "valid 1..1"),
    (["profile", "--memory", "10240", "--workers", "0"], 2, "--workers '0' is not a whole number"),
    (["profile", "--memory", "10240", "--workload", "stream"], 2,
     "unknown workload 'stream' (valid: batch, tiles)"),
    (["profile", "--memory", "10240", "--cpus", "4"], 2, "drop --cpus"),
    (["profile", "--memory", "10240", "--cpus", "abc"], 2, "--cpus 'abc' is not a number"),
    (["profile", "--memory", "20000"], 2, "outside what lambda offers (valid: 128..10240 MiB)"),
    (["profile", "--platform", "azure-functions", "--memory", "2048"], 2, "128..1536"),
    (["profile", "--platform", "cloudrun", "--memory", "8192", "--cpus", "1"], 2,
     "needs at least 2 vCPU"),
    (["profile", "--platform", "cloudrun", "--memory", "4096", "--cpus", "3"], 2,
     "valid: 1, 2, 4, 6, 8"),
    (["profile", "--platform", "kubernetes", "--memory", "2048"], 2, "needs --cpus"),
    (["profile", "--platform", "cloudrun"], 2, "--platform cloudrun needs --memory MiB"),
    (["profile", "--memory", "10240", "--bogus"], 2, "unknown option '--bogus'"),
    (["profile", "stray"], 2, "unexpected argument 'stray'"),
    (["frobnicate"], 2, "unknown command 'frobnicate'"),
    ([], 2, "no command"),
    (["exec", "--memory", "10240"], 2, "exec needs a command"),
    (["exec", "--memory", "10240", "--"], 2, "no command after '--'"),
    (["profile", "--memory", "256", "--workers", "2"], 2, "--workers 2 contradicts lambda at "
     "256 MiB (0.14 vCPU): valid 1..1"),
    (["profile", "--memory", "4096", "--profiles", "/nonexistent"], 4,
     "/nonexistent: not a profiles directory"),
]


@pytest.mark.parametrize("args,code,msg", BAD, ids=lambda x: str(x))
def test_bad_input(args, code, msg):
    p = tunerd(*args, check=False)
    assert p.returncode == code, (p.returncode, p.stderr)
    assert p.stdout == ""
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("tunerd: ")
    assert msg in lines[0], lines[0]


def test_help_documents_exit_codes_like_the_docs():
    help_text = tunerd("--help").stdout
    doc = (REPO / "docs" / "tuning.md").read_text()
    for code in ["0", "1", "2", "3", "4", "5", "126", "127"]:
        assert re.search(rf"^\s+{code}\s+\S", help_text, re.M) or f"  {code}  " in help_text
        assert re.search(rf"^\| {code} \|", doc, re.M), f"exit {code} missing from docs"
    assert "--format F" in help_text and "k8s-yaml" in help_text


def test_check_profiles(tmp_path):
    ok = tunerd("check-profiles")
    assert ok.stdout.count(": ok") == 5
    for f in PROFILES.glob("*.profile"):
        shutil.copy(f, tmp_path / f.name)
    text = (tmp_path / "cloudrun.profile").read_text().replace("cpu_rule = given",
                                                              "cpu_rule = sometimes")
    (tmp_path / "cloudrun.profile").write_text(text)
    line = text.splitlines().index("cpu_rule = sometimes") + 1
    bad = tunerd("check-profiles", "--profiles", str(tmp_path), check=False)
    assert bad.returncode == 4
    assert f"{tmp_path}/cloudrun.profile:{line}: unknown cpu_rule 'sometimes' " \
           "(valid: per_memory, fixed, given)" in bad.stderr
    # and profile refuses to use it, naming the same place
    p = tunerd("profile", "--platform", "cloudrun", "--memory", "2048", "--profiles",
               str(tmp_path), check=False)
    assert p.returncode == 4 and f"cloudrun.profile:{line}:" in p.stderr


# ---------------------------------------------------------------- detect

def own_cgroup_v1_memory_dir():
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        if "memory" in ctrls.split(","):
            return CGROUP_V1_MEMORY / path.lstrip("/")
    return None


def test_detect_real_cgroup_v1():
    """This machine: hybrid cgroup v1 (memory controller on v1), no limit on
    our group; tunerd must say so and name the files it read."""
    mdir = own_cgroup_v1_memory_dir()
    if mdir is None or not (mdir / "memory.limit_in_bytes").exists():
        pytest.fail("this test expects the CI machine's cgroup v1 memory controller")
    d = json.loads(tunerd("detect", "--json").stdout)
    assert d["cgroup_version"] == 1
    limits = []
    p = mdir
    while True:
        limits.append(int((p / "memory.limit_in_bytes").read_text()))
        if p == CGROUP_V1_MEMORY:
            break
        p = p.parent
    expect_mb = min(limits) // (1024 * 1024) if min(limits) < 2 ** 60 else -1
    assert d["cgroup_memory_mb"] == expect_mb
    assert d["cgroup_memory_source"].startswith(str(CGROUP_V1_MEMORY))
    assert d["affinity_cpus"] == len(os.sched_getaffinity(0))
    total_kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
    assert d["mem_total_mb"] == total_kb // 1024
    text = tunerd("detect").stdout
    assert "cgroup:              v1" in text and "(sched_getaffinity)" in text


@pytest.fixture
def limited_cgroup():
    """A child memory cgroup (v1) with a 1 GiB limit; removed afterwards."""
    if not os.access(CGROUP_V1_MEMORY, os.W_OK):
        pytest.fail("needs root and a writable /sys/fs/cgroup/memory (the CI machine has both)")
    cg = CGROUP_V1_MEMORY / f"tunerd-test-{uuid.uuid4().hex[:8]}"
    cg.mkdir()
    try:
        (cg / "memory.limit_in_bytes").write_text(str(1024 * 1024 * 1024))
        yield cg
    finally:
        for pid in (cg / "cgroup.procs").read_text().split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        cg.rmdir()


def in_cgroup(cg, argv):
    return ["bash", "-c", f'echo $$ > {cg}/cgroup.procs && exec "$@"', "bash", *argv]


def test_detect_and_profile_inside_a_limited_cgroup(limited_cgroup):
    cg = limited_cgroup
    p = subprocess.run(in_cgroup(cg, [str(TUNERD), "detect", "--json"]), capture_output=True,
                       text=True, timeout=30, env=clean_env())
    d = json.loads(p.stdout)
    assert d["cgroup_memory_mb"] == 1024
    assert d["memory_mb"] == 1024
    assert d["cgroup_memory_source"] == f"{cg}/memory.limit_in_bytes"
    assert d["memory_source"].startswith("cgroup v1 ")
    p = subprocess.run(in_cgroup(cg, [str(TUNERD), "profile", "--format", "json"]),
                       capture_output=True, text=True, timeout=30, env=clean_env())
    doc = json.loads(p.stdout)
    assert doc["platform"] == "host" and doc["memory_mb"] == 1024
    assert doc["memory_source"].startswith("detected: cgroup v1")
    assert doc["ledger"]["total_mb"] <= 1024


def test_detect_lambda_env():
    env = clean_env(AWS_LAMBDA_FUNCTION_NAME="f", AWS_LAMBDA_FUNCTION_MEMORY_SIZE="5307")
    d = json.loads(tunerd("detect", "--json", env=env).stdout)
    assert (d["platform"], d["memory_mb"]) == ("lambda", 5307)
    assert d["memory_source"] == "env AWS_LAMBDA_FUNCTION_MEMORY_SIZE"
    doc = json.loads(tunerd("profile", "--format", "json", env=env).stdout)
    assert (doc["workers"], doc["gdal_cachemax_mb"]) == (3, 352)


def test_detect_fake_roots_by_option_and_env(tmp_path):
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "cgroup").write_text("0::/\n")
    (tmp_path / "proc" / "self" / "mountinfo").write_text(
        "30 22 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
    (tmp_path / "proc" / "meminfo").write_text("MemTotal: 8388608 kB\n")
    # without a fake status file the real affinity (this machine's cores) applies
    (tmp_path / "proc" / "self" / "status").write_text("Cpus_allowed_list:\t0-7\n")
    cg = tmp_path / "sys" / "fs" / "cgroup"
    cg.mkdir(parents=True)
    (cg / "cgroup.controllers").write_text("cpu memory\n")
    (cg / "memory.max").write_text(str(3 * 1024 ** 3) + "\n")
    (cg / "cpu.max").write_text("300000 100000\n")
    args = ["--sys-root", str(tmp_path / "sys"), "--proc-root", str(tmp_path / "proc")]
    d = json.loads(tunerd("detect", "--json", *args).stdout)
    assert (d["cgroup_version"], d["memory_mb"], d["cpus"]) == (2, 3072, 3)
    env = clean_env(TUNERD_SYSFS_ROOT=str(tmp_path / "sys"),
                    TUNERD_PROCFS_ROOT=str(tmp_path / "proc"), K_SERVICE="svc")
    d = json.loads(tunerd("detect", "--json", env=env).stdout)
    assert (d["platform"], d["memory_mb"], d["cpus"]) == ("cloudrun", 3072, 3)


# ---------------------------------------------------------------- exec

def test_exec_sets_without_overriding():
    env = clean_env(GDAL_CACHEMAX="17")
    p = subprocess.run([str(TUNERD), "exec", "--platform", "lambda", "--memory", "10240", "-v",
                        "--", "env"], capture_output=True, text=True, timeout=30, env=env)
    assert p.returncode == 0, p.stderr
    got = dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)
    assert got["GDAL_CACHEMAX"] == "17"
    assert got["TUNERD_WORKERS"] == "5"
    # exec runs here: the plugin of tunerd's own tree (the build tree's vsiplugin/)
    assert got["GDAL_DRIVER_PATH"] == str(BUILD / "vsiplugin")
    assert "kept GDAL_CACHEMAX=17 (set by caller; profile says 384)" in p.stderr
    assert "warning" not in p.stderr  # a smaller cache than planned: nothing to say


def test_exec_status_and_argv():
    p = subprocess.run([str(TUNERD), "exec", "--memory", "1769", "--", "sh", "-c",
                        'echo "$0 $1"; exit 7', "a b", "c"], capture_output=True, text=True,
                       timeout=30, env=clean_env())
    assert p.returncode == 7 and p.stdout == "a b c\n"
    p = tunerd("exec", "--memory", "1769", "--", "/nonexistent/cmd", check=False)
    assert p.returncode == 127 and "exec /nonexistent/cmd:" in p.stderr
    p = tunerd("exec", "--memory", "1769", "--", "/etc/passwd", check=False)
    assert p.returncode == 126
    p = tunerd("exec", "--platform", "lambda", "--memory", "100", "--", "true", check=False)
    assert p.returncode == 2  # no --fail-open: the error stands
    p = tunerd("exec", "--workload", "tile", "--", "true", check=False)
    assert p.returncode == 2 and "unknown workload 'tile'" in p.stderr


def run_wrapper(env, *cmd):
    return subprocess.run([str(WRAPPER), *cmd], capture_output=True, text=True, timeout=30,
                          env=env)


def untuned_start(p, who):
    """The runtime ran, untuned, and stderr is exactly one warning line."""
    assert p.returncode == 0, p.stderr
    got = dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)
    assert "TUNERD_WORKERS" not in got and "GDAL_CACHEMAX" not in got, got
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{who}: warning: "), p.stderr
    return lines[0]


def test_lambda_exec_wrapper():
    env = clean_env(AWS_LAMBDA_FUNCTION_NAME="fn", AWS_LAMBDA_FUNCTION_MEMORY_SIZE="10240",
                    TUNERD=str(TUNERD), OMP_NUM_THREADS="3")
    p = run_wrapper(env, "env")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    got = dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)
    assert got["GDAL_CACHEMAX"] == "384" and got["TUNERD_WORKERS"] == "5"
    assert got["OMP_NUM_THREADS"] == "3"  # the function's own setting wins
    env["TUNERD_OPTIONS"] = "--workload tiles"
    got = dict(ln.split("=", 1) for ln in run_wrapper(env, "env").stdout.splitlines() if "=" in ln)
    assert got["TUNERD_WORKLOAD"] == "tiles" and got["TUNERD_THREADS"] == "4"

    # the smallest tiers are sized (a minimal profile, one warning), not refused
    env["TUNERD_OPTIONS"] = ""
    env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] = "128"
    p = run_wrapper(env, "env")
    got = dict(ln.split("=", 1) for ln in p.stdout.splitlines() if "=" in ln)
    assert p.returncode == 0 and got["GDAL_CACHEMAX"] == "16" and got["TUNERD_WORKERS"] == "1"
    assert got["GDAL_DRIVER_PATH"] == str(BUILD / "vsiplugin")  # the plugin stays on
    assert "minimal profile" in p.stderr and len(p.stderr.splitlines()) == 1


@pytest.mark.parametrize("options,says", [
    ("--workload tile", "unknown workload 'tile'"),
    ("--workers 0", "--workers '0' is not a whole number"),
    ("--bogus", "unknown option '--bogus'"),
    ("--memory", "--memory '--' is not a whole number"),
    ("-- sh -c 'echo hijacked'", "'--' is not an option"),
    ("--platform nowhere", "unknown platform 'nowhere'"),
])
def test_lambda_exec_wrapper_bad_options_start_untuned(options, says):
    env = clean_env(AWS_LAMBDA_FUNCTION_NAME="fn", AWS_LAMBDA_FUNCTION_MEMORY_SIZE="2048",
                    TUNERD=str(TUNERD), TUNERD_OPTIONS=options)
    p = run_wrapper(env, "sh", "-c", 'env; exit 3')
    assert p.returncode == 3, p.stderr  # the runtime's own status
    p = run_wrapper(env, "env")
    line = untuned_start(p, "tunerd")
    assert says in line and "running env without a profile" in line, line
    assert "hijacked" not in p.stdout.splitlines()  # the command is still the runtime


def _patched_copy(tmp_path, name, offset=None, old=None, new=None):
    data = bytearray(TUNERD.read_bytes())
    if offset is not None:
        data[offset:offset + len(new)] = new
    if old is not None:
        i = data.index(old)
        data[i:i + len(new)] = new
    out = tmp_path / name
    out.write_bytes(bytes(data))
    out.chmod(0o755)
    return out


def test_lambda_exec_wrapper_tunerd_that_cannot_run(tmp_path):
    env = clean_env(AWS_LAMBDA_FUNCTION_NAME="fn", AWS_LAMBDA_FUNCTION_MEMORY_SIZE="2048")
    # missing
    env["TUNERD"] = "/nonexistent/tunerd"
    line = untuned_start(run_wrapper(env, "env"), "lambda-exec-wrapper")
    assert "/nonexistent/tunerd cannot run here" in line and "starting the runtime untuned" in line
    # another architecture: the ELF header says aarch64 (e_machine 183)
    env["TUNERD"] = str(_patched_copy(tmp_path, "tunerd-arm64", offset=18, new=b"\xb7\x00"))
    line = untuned_start(run_wrapper(env, "env"), "lambda-exec-wrapper")
    assert "cannot run here" in line
    # a glibc too old: the binary asks for a symbol version this glibc lacks
    env["TUNERD"] = str(_patched_copy(tmp_path, "tunerd-glibc", old=b"GLIBC_2.34",
                                      new=b"GLIBC_9.34"))
    line = untuned_start(run_wrapper(env, "env"), "lambda-exec-wrapper")
    assert "GLIBC_9.34" in line and "not found" in line, line
    # not executable at all
    plain = tmp_path / "tunerd-text"
    plain.write_text("not a program\n")
    env["TUNERD"] = str(plain)
    untuned_start(run_wrapper(env, "env"), "lambda-exec-wrapper")


# ---------------------------------------------------------------- the docs table

def doc_table():
    text = (REPO / "docs" / "tuning.md").read_text()
    block = text.split("<!-- tunerd-known-answers:begin -->")[1].split(
        "<!-- tunerd-known-answers:end -->")[0]
    rows = [r for r in block.strip().splitlines() if r.startswith("|")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    out = []
    for r in rows[2:]:
        out.append(dict(zip(header, [c.strip() for c in r.strip("|").split("|")])))
    return out


def test_docs_table_matches_tunerd():
    rows = doc_table()
    assert len(rows) >= 12
    seen = set()
    for row in rows:
        args = ["profile", "--format", "json", "--platform", row["platform"],
                "--memory", row["memory MB"].replace(",", ""), "--workload", row["workload"]]
        if row["--cpus"] != "-":
            args += ["--cpus", row["--cpus"]]
        doc = json.loads(tunerd(*args).stdout)
        got = {
            "vCPU": f"{doc['vcpu']:.2f}",
            "workers": str(doc["workers"]),
            "threads": str(doc["threads_per_worker"]),
            "kind": doc["worker_kind"],
            "GDAL_CACHEMAX": str(doc["gdal_cachemax_mb"]),
            "range cache MB": str(doc["range_cache_mb"]),
            "GDAL_NUM_THREADS": str(doc["gdal_num_threads"]),
            "ledger MB": f"{doc['ledger']['total_mb']:,}",
        }
        want = {k: row[k] for k in got}
        assert got == want, (row, got)
        seen.add((row["platform"], row["memory MB"]))
    for tier in ["512", "1,769", "3,538", "5,307", "10,240"]:
        assert ("lambda", tier) in seen
    assert ("azure-functions", "1,536") in seen
    assert any(p == "cloudrun" for p, _ in seen) and any(p == "kubernetes" for p, _ in seen)


# ---------------------------------------------------------------- watch

def smaps_rollup_kb(pid, field):
    text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    return int(re.search(rf"^{field}:\s+(\d+) kB", text, re.M).group(1))


def test_watch_finds_gdal_processes_only():
    """A python that imported rasterio (libgdal mapped) is listed with its
    real RSS; a sleep (no libgdal) is not; --count bounds the samples."""
    gdal_proc = subprocess.Popen(
        ["/usr/bin/python3", "-c", "import sys, rasterio; print('up', flush=True); "
         "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        assert gdal_proc.stdout.readline() == "up\n"
        p = tunerd("watch", "--count", "3", "--interval", "0.2")
        lines = p.stdout.splitlines()
        assert lines[0].startswith("# tunerd watch: processes mapping 'libgdal', 3 sample(s)")
        assert lines[1].split() == ["time", "pid", "rss_mib", "pss_mib", "anon_mib", "command"]
        assert sum(1 for ln in lines if ln.startswith("# cgroup v1 ")) == 3
        rows = [ln.split() for ln in lines[2:] if not ln.startswith("#")]
        assert sum(1 for r in rows if r[1] == "total") == 3
        mine = [r for r in rows if r[1] == str(gdal_proc.pid)]
        assert len(mine) == 3 and mine[0][5] == "python3"
        rss_now = smaps_rollup_kb(gdal_proc.pid, "Rss") / 1024
        assert abs(float(mine[-1][2]) - rss_now) < 8  # MB; the process is idle
        assert 0 < float(mine[-1][3]) <= float(mine[-1][2])  # PSS <= RSS
        assert not any(r[1] == str(sleeper.pid) for r in rows)
    finally:
        gdal_proc.kill()
        sleeper.kill()
        gdal_proc.wait()
        sleeper.wait()


@pytest.mark.parametrize("args,msg", [
    (["--count", "0"], "--count '0' is not a whole number from 1 to 1000000"),
    (["--count", "x"], "--count 'x'"),
    (["--interval", "0"], "--interval '0' is not a number of seconds from 0.1 to 3600"),
    (["--interval", "-1"], "--interval '-1'"),
    (["--interval", "nan"], "--interval 'nan'"),
    (["--proc-root", "/nonexistent"], "/nonexistent:"),
])
def test_watch_bad_input(args, msg):
    p = tunerd("watch", *args, check=False)
    assert p.returncode in (2, 5) and msg in p.stderr
    assert len(p.stderr.splitlines()) == 1


def test_platform_memory_variable_that_is_not_a_number():
    env = clean_env(AWS_LAMBDA_FUNCTION_NAME="f", AWS_LAMBDA_FUNCTION_MEMORY_SIZE="3GB")
    p = tunerd("profile", env=env, check=False)
    assert p.returncode == 5 and p.stdout == ""
    assert "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=3GB is not a whole number of MiB" in p.stderr
    assert "pass --memory MiB" in p.stderr
    assert tunerd("profile", "--memory", "3008", env=env).returncode == 0
    d = tunerd("detect", env=env).stdout
    assert "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=3GB is not a whole number of MiB (ignored)" in d


def lambda_fake_roots(tmp_path, memory_max=None):
    """A /proc and /sys like a Lambda microVM's: 24 GiB of RAM (more than any tier),
    cgroup v2 with or without a memory limit."""
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "cgroup").write_text("0::/\n")
    (tmp_path / "proc" / "self" / "mountinfo").write_text(
        "30 22 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
    (tmp_path / "proc" / "meminfo").write_text(f"MemTotal: {24 * 1024 * 1024} kB\n")
    (tmp_path / "proc" / "self" / "status").write_text("Cpus_allowed_list:\t0-1\n")
    cg = tmp_path / "sys" / "fs" / "cgroup"
    cg.mkdir(parents=True)
    (cg / "cgroup.controllers").write_text("cpu memory\n")
    (cg / "memory.max").write_text(f"{memory_max}\n" if memory_max else "max\n")
    return clean_env(AWS_LAMBDA_FUNCTION_NAME="fn", TUNERD_SYSFS_ROOT=str(tmp_path / "sys"),
                     TUNERD_PROCFS_ROOT=str(tmp_path / "proc"))


def test_lambda_without_its_memory_variable_is_an_error(tmp_path):
    """AWS_LAMBDA_FUNCTION_NAME without AWS_LAMBDA_FUNCTION_MEMORY_SIZE: the machine's
    RAM is not the function's tier, so profile and exec stop and say what is missing
    (they sized 10,240 MiB from MemTotal before); a cgroup limit stands in for it."""
    env = lambda_fake_roots(tmp_path)
    for args in (["profile"], ["exec", "--", "true"]):
        p = tunerd(*args, env=env, check=False)
        assert p.returncode == 5 and p.stdout == "", (args, p.returncode, p.stderr)
        line, = p.stderr.splitlines()
        assert "AWS_LAMBDA_FUNCTION_MEMORY_SIZE is not set" in line, line
        assert "pass --memory MiB" in line and "lambda detected" in line, line
    assert tunerd("profile", "--memory", "3008", env=env).returncode == 0
    d = json.loads(tunerd("detect", "--json", env=env).stdout)
    assert "AWS_LAMBDA_FUNCTION_MEMORY_SIZE is not set" in d["warning"]
    # the same function with a memory cgroup: sized from it, no warning
    env = lambda_fake_roots(tmp_path / "cg", memory_max=2048 * 1024 ** 2)
    doc = json.loads(tunerd("profile", "--format", "json", env=env).stdout)
    assert doc["memory_mb"] == 2048, doc


COMMANDS = ["profile", "detect", "exec", "check-profiles", "watch", "stats"]


@pytest.mark.parametrize("cmd", COMMANDS)
def test_command_help_is_that_commands_own(cmd):
    """`tunerd CMD --help` prints CMD's usage and options only; `tunerd --help` has
    every command's."""
    whole = tunerd("--help").stdout
    text = tunerd(cmd, "--help").stdout
    assert text.startswith(f"usage: tunerd {cmd} "), text
    for other in COMMANDS:
        assert (f"tunerd {other} " in text) == (other == cmd), (other, text)
        assert f"tunerd {other} " in whole
    opts = set(re.findall(r"^  (--?[a-z-]+)", text, re.M)) - {"-h"}
    # the options the help lists are exactly those the parser names as cmd's
    bogus = tunerd(cmd, "--bogus", check=False)
    assert bogus.returncode == 2
    valid = re.search(r"\(valid: ([^)]*)\)", bogus.stderr).group(1).split(", ")
    assert set(valid) == opts, (valid, opts)
    assert "exit status:" in text


def test_unknown_option_names_only_that_commands_options():
    p = tunerd("detect", "--bogus", check=False)
    line, = p.stderr.splitlines()
    assert p.returncode == 2 and "unknown option '--bogus' for detect" in line
    assert "--json" in line and "--memory" not in line and "--listen" not in line, line
    # an option of another command is refused, naming who takes it
    p = tunerd("detect", "--memory", "5", check=False)
    line, = p.stderr.splitlines()
    assert p.returncode == 2 and "--memory is only valid with profile, exec" in line, line


def test_plugin_dir_option():
    ref = parse_env(tunerd("profile", "--memory", "2048", "--plugin-dir",
                           "/opt/lib/gdalplugins:/usr/lib/gdalplugins").stdout)
    assert ref["GDAL_DRIVER_PATH"] == "/opt/lib/gdalplugins:/usr/lib/gdalplugins"
    for bad in ["lib", "/a:", "/a:b", ":/a"]:
        p = tunerd("profile", "--memory", "2048", "--plugin-dir", bad, check=False)
        assert p.returncode == 2 and "must be absolute paths separated by ':'" in p.stderr
    # --no-plugin: no GDAL_DRIVER_PATH at all
    ref = parse_env(tunerd("profile", "--memory", "2048", "--no-plugin", "--plugin-dir",
                           "/x").stdout)
    assert "GDAL_DRIVER_PATH" not in ref


def test_relocatable_profiles(tmp_path):
    """A layer installs /opt/bin/tunerd and /opt/share/vsitune/profiles: the
    binary finds its profiles relative to itself before the compiled-in dirs."""
    (tmp_path / "bin").mkdir()
    prof = tmp_path / "share" / "vsitune" / "profiles"
    prof.mkdir(parents=True)
    shutil.copy(TUNERD, tmp_path / "bin" / "tunerd")
    for f in PROFILES.glob("*.profile"):
        shutil.copy(f, prof / f.name)
    text = (prof / "lambda.profile").read_text()
    (prof / "lambda.profile").write_text(re.sub(r"^note = .*$", "note = relocated copy",
                                                text, flags=re.M))
    env = clean_env()
    del env["TUNERD_PROFILES_DIR"]
    p = subprocess.run([str(tmp_path / "bin" / "tunerd"), "profile", "--memory", "10240",
                        "--format", "json"], capture_output=True, text=True, env=env,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["note"] == "relocated copy"


def test_platform_host_is_this_machine_even_inside_kubernetes():
    env = clean_env(KUBERNETES_SERVICE_HOST="10.0.0.1")
    doc = json.loads(tunerd("profile", "--format", "json", env=env).stdout)
    assert doc["platform"] == "kubernetes" and doc["memory_source"].startswith("detected:")
    doc = json.loads(tunerd("profile", "--platform", "host", "--format", "json", env=env).stdout)
    assert doc["platform"] == "host" and doc["memory_source"].startswith("detected:")
    assert doc["vcpu_source"] == "detected"


# ---------------------------------------------------------------- issue 12: never breaks a start

FARGATE = """# AWS Fargate (an example platform added as data only)
name = fargate
title = AWS Fargate
detect_env = TEST_FARGATE_TASK
memory_min_mb = 512
memory_max_mb = 122880
cpu_rule = given
cpus_allowed = 1, 2, 4, 8, 16
max_vcpu = 16
tmp_dir = /tmp
start_method = fork
"""


def test_a_new_profile_file_is_a_new_platform(tmp_path):
    prof = tmp_path / "profiles"
    shutil.copytree(PROFILES, prof)
    (prof / "fargate.profile").write_text(FARGATE)
    env = clean_env(TUNERD_PROFILES_DIR=str(prof))
    doc = json.loads(tunerd("profile", "--platform", "fargate", "--memory", "8192", "--cpus",
                            "2", "--format", "json", env=env).stdout)
    assert doc["platform"] == "fargate" and doc["workers"] == 2
    assert "fargate.profile: ok" in tunerd("check-profiles", env=env).stdout
    # detected by its own variable
    env["TEST_FARGATE_TASK"] = "arn:aws:ecs:task/1"
    d = json.loads(tunerd("detect", "--json", env=env).stdout)
    assert d["platform"] == "fargate" and d["platform_source"] == "env TEST_FARGATE_TASK is set"
    # names must be plain, and a name without a file is unknown, listing the valid ones
    p = tunerd("profile", "--platform", "../lambda", "--memory", "2048", env=env, check=False)
    assert p.returncode == 2 and "bad platform name" in p.stderr
    p = tunerd("profile", "--platform", "ecs", "--memory", "2048", env=env, check=False)
    assert p.returncode == 2 and "(valid: lambda, cloudrun, azure-functions, kubernetes, host, " \
        "fargate)" in p.stderr


def test_detect_under_lambda_reports_the_tiers_vcpu():
    env = clean_env(AWS_LAMBDA_FUNCTION_NAME="fn", AWS_LAMBDA_FUNCTION_MEMORY_SIZE="3538")
    d = json.loads(tunerd("detect", "--json", env=env).stdout)
    assert d["cpus"] == 2 and "lambda rule" in d["cpus_source"]
    assert f"not the host's {len(os.sched_getaffinity(0))} cores" in d["cpus_source"]


def test_plugin_dir_is_tunerds_own_and_checked(tmp_path):
    # in the build tree: the build's plugin, no warning
    p = tunerd("profile", "--platform", "host", "--memory", "2048", "--cpus", "1")
    assert parse_env(p.stdout)["GDAL_DRIVER_PATH"] == str(BUILD / "vsiplugin")
    assert p.stderr == ""
    # an installed tree (cmake --install --prefix P): P/lib/gdalplugins, next to P/bin
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    shutil.copy(TUNERD, prefix / "bin" / "tunerd")
    env = clean_env()
    p = subprocess.run([str(prefix / "bin" / "tunerd"), "profile", "--platform", "host",
                        "--memory", "2048", "--cpus", "1"], capture_output=True, text=True,
                       env=env, timeout=30)
    assert parse_env(p.stdout)["GDAL_DRIVER_PATH"] == str(prefix / "lib" / "gdalplugins")
    # ... which holds no plugin here: one warning, in words
    assert p.stderr.count("\n") == 1 and "holds no gdal_vsitune.so" in p.stderr
    (prefix / "lib" / "gdalplugins").mkdir(parents=True)
    shutil.copy(BUILD / "vsiplugin" / "gdal_vsitune.so", prefix / "lib" / "gdalplugins")
    p = subprocess.run([str(prefix / "bin" / "tunerd"), "exec", "--memory", "2048", "--",
                        "printenv", "GDAL_DRIVER_PATH"], capture_output=True, text=True,
                       env=env, timeout=30)
    assert p.stdout.strip() == str(prefix / "lib" / "gdalplugins") and p.stderr == ""
    # exec --memory on a plain host sizes the host: no Lambda, no /opt
    p = tunerd("exec", "--memory", "2048", "--", "printenv", "TUNERD_WORKERS",
               "GDAL_DRIVER_PATH", check=False)
    assert p.stdout.split() == [str(min(2, len(os.sched_getaffinity(0)))),
                                str(BUILD / "vsiplugin")]
    # a plan for Lambda made here keeps the layer's path, and does not check it here
    p = tunerd("profile", "--memory", "10240")
    assert parse_env(p.stdout)["GDAL_DRIVER_PATH"] == "/opt/lib/gdalplugins" and p.stderr == ""
    # --plugin-dir is checked too
    p = tunerd("profile", "--memory", "10240", "--plugin-dir", str(tmp_path))
    assert "holds no gdal_vsitune.so" in p.stderr


def test_exec_warns_when_a_kept_value_breaks_the_ledger():
    env = clean_env(GDAL_CACHEMAX="1000")
    p = subprocess.run([str(TUNERD), "exec", "--platform", "lambda", "--memory", "10240", "--",
                        "printenv", "GDAL_CACHEMAX"], capture_output=True, text=True,
                       timeout=30, env=env)
    assert p.returncode == 0 and p.stdout == "1000\n"  # kept, as always
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tunerd: warning: kept GDAL_CACHEMAX=1000 "
                                                   "breaks the ledger"), p.stderr
    assert "5 x 384 MiB" in lines[0]


def test_minimal_profile_for_the_smallest_lambda_tiers():
    for tier in ("128", "256"):
        p = tunerd("profile", "--memory", tier, "--format", "json")
        doc = json.loads(p.stdout)
        assert doc["minimal"] is True and doc["workers"] == 1 and doc["plugin"] is True
        assert doc["env"]["GDAL_CACHEMAX"] == "16" and doc["env"]["VSITUNE_CACHE_SIZE"] == str(8 << 20)
        assert "minimal profile" in p.stderr and len(p.stderr.splitlines()) == 1
    assert json.loads(tunerd("profile", "--memory", "128", "--format", "json").stdout)[
        "ledger"]["fits"] is False


def test_cachemax_above_99999_mib_is_bytes():
    env = parse_env(tunerd("profile", "--platform", "host", "--memory", "1048576", "--cpus",
                           "1").stdout)
    assert env["GDAL_CACHEMAX"] == str(209696 * 2 ** 20)
    # GDAL reads it as those bytes (a bare number under 100,000 would be MiB)
    p = subprocess.run(["/usr/bin/python3", "-c",
                        "from osgeo import gdal; print(gdal.GetCacheMax())"],
                       capture_output=True, text=True, timeout=60,
                       env=clean_env(GDAL_CACHEMAX=env["GDAL_CACHEMAX"]))
    assert int(p.stdout) == 209696 * 2 ** 20


@pytest.mark.skipif(not os.access(CGROUP_V1_MEMORY, os.W_OK), reason="needs cgroup v1 memory")
def test_kubernetes_without_a_memory_limit_warns(tmp_path):
    # this machine's own cgroup has no memory limit
    env = clean_env(KUBERNETES_SERVICE_HOST="10.0.0.1")
    d = json.loads(tunerd("detect", "--json", env=env).stdout)
    if d["cgroup_memory_mb"] > 0:
        pytest.skip("this machine's cgroup has a memory limit")
    p = tunerd("profile", env=env)
    assert "kubernetes: no memory limit found" in p.stderr
    assert "set resources.limits.memory" in p.stderr
    # with a limit (a child cgroup of ours): no warning
    cg = CGROUP_V1_MEMORY / f"tunerd-k8s-{uuid.uuid4().hex[:8]}"
    cg.mkdir()
    try:
        (cg / "memory.limit_in_bytes").write_text(str(2 * 1024 ** 3))
        p = subprocess.run(["bash", "-c", f'echo $$ > {cg}/cgroup.procs && exec "$@"', "bash",
                            str(TUNERD), "profile"], capture_output=True, text=True, env=env,
                           timeout=30)
        assert p.returncode == 0 and "no memory limit" not in p.stderr, p.stderr
    finally:
        for _ in range(100):
            try:
                cg.rmdir()
                break
            except OSError:
                import time
                time.sleep(0.05)


@pytest.mark.parametrize("args", [["profile", "--workload", "tile\nGDAL_CACHEMAX=1"],
                                  ["profile", "--memory", "10240", "--platform", "x\x1b[2Ky"],
                                  ["profile", "--bogus\nline"]])
def test_usage_errors_are_one_line(args):
    """An argument carrying a newline or an escape sequence is echoed on one line, its
    control characters shown as '?': it can neither forge an output line nor hide one."""
    p = tunerd(*args, check=False)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stdout == ""
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tunerd: "), p.stderr
    assert "\x1b" not in p.stderr and "?" in lines[0], p.stderr
