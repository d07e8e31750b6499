#!/usr/bin/python3
"""test_packaging.py: the three ways vsitune ships, checked on real artifacts.

1. `cmake --install` into a DESTDIR stage: the exact file list, and the staged
   plugin and tunerd work from there (GDAL loads the plugin from the staged
   gdalplugins dir; tunerd reads the staged profiles with no environment);
   docs/packaging.md's environment block is what that tunerd prints.
2. The Lambda layer (packaging/lambda/build-layer.sh): the zip's file list and
   modes, unzipped: tunerd sizes a 10,240 MB function, the exec wrapper finds
   its sibling tunerd, local GDAL and rasterio load the plugin from lib/gdalplugins;
   RUNTIME.txt says what the ELF files really need; bad arguments exit 2.
3. The container recipe (packaging/container/Dockerfile; no Docker engine
   here): a strict parse, every COPY source exists, build packages come from
   scripts/setup.sh, runtime packages are real Debian 12 packages owning every
   library the binaries link; the configure step runs on a tree holding only
   what the COPY lines copy, the install step runs into a stage, and the
   ENTRYPOINT + CMD run from that stage. VT_PACKAGING_FULL_BUILD=1 also runs the
   compile step (about a minute on the 2-core CI machine).

Run: /usr/bin/python3 -m pytest tests/integration/test_packaging.py
Needs a built tree; $VT_BUILD_DIR (or $VT_BINARY_DIR) overrides build/.
"""
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("VT_BUILD_DIR") or os.environ.get("VT_BINARY_DIR")
             or REPO / "build")
LAYER_SCRIPT = REPO / "packaging" / "lambda" / "build-layer.sh"
DOCKERFILE = REPO / "packaging" / "container" / "Dockerfile"
PROFILES = sorted(p.name for p in (REPO / "profiles").glob("*.profile"))
# A PATH without tunerd on it, so a binary found is the one the test means.
BARE_PATH = "/usr/bin:/bin"


def cache_value(name):
    text = (BUILD / "CMakeCache.txt").read_text()
    m = re.search(rf"^{name}:[A-Z]+=(.*)$", text, re.M)
    assert m, f"{name} not in {BUILD}/CMakeCache.txt"
    return m.group(1)


def bare_env(**extra):
    """Only PATH (and what the test adds): no GDAL_*, TUNERD_*, platform variables."""
    env = {"PATH": BARE_PATH, "HOME": "/nonexistent", "LC_ALL": "C"}
    env.update(extra)
    return env


def run(args, env=None, timeout=60, cwd=None):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, env=env if env is not None else bare_env(),
                          cwd=cwd)


def files_under(root):
    return sorted(str(p.relative_to(root)) for p in Path(root).rglob("*")
                  if p.is_file() or p.is_symlink())


def parse_env_lines(text):
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def gdal_formats(plugin_dir, tool_prefix=()):
    """gdalinfo --formats with only plugin_dir on GDAL_DRIVER_PATH and CPL_DEBUG on:
    (the VSITUNE format line or None, the .so path GDAL auto-registered or None)."""
    p = run([*tool_prefix, "gdalinfo", "--formats"],
            env=bare_env(GDAL_DRIVER_PATH=str(plugin_dir), CPL_DEBUG="ON"))
    assert p.returncode == 0, p.stderr
    # the driver declares its capabilities: GDAL does not have to assume them
    assert "Assuming DCAP_RASTER for driver VSITUNE" not in p.stderr, p.stderr
    line = next((ln.strip() for ln in p.stdout.splitlines()
                 if ln.strip().startswith("VSITUNE ")), None)
    m = re.search(r"Auto register (\S+gdal_vsitune\.so) using GDALRegister_vsitune",
                  p.stderr)
    return line, (m.group(1) if m else None)


def readelf_needed(path):
    p = run(["readelf", "-d", path])
    assert p.returncode == 0, p.stderr
    return sorted(set(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", p.stdout)))


def mark_lambda_profile(profiles_dir, marker):
    """Rewrite the lambda profile's note so its output proves which copy was read."""
    f = Path(profiles_dir) / "lambda.profile"
    text = f.read_text()
    assert re.search(r"^note = ", text, re.M)
    f.write_text(re.sub(r"^note = .*$", f"note = {marker}", text, flags=re.M))


@pytest.fixture(scope="module")
def built():
    so = BUILD / "vsiplugin" / "gdal_vsitune.so"
    tunerd = BUILD / "tunerd" / "tunerd"
    assert so.is_file() and tunerd.is_file(), \
        f"build first: cmake -S {REPO} -B {BUILD} && cmake --build {BUILD} -j2"
    assert shutil.which("tunerd", path=BARE_PATH) is None, \
        "a tunerd is installed in /usr/bin or /bin: the tests could not tell which one ran"
    return BUILD


# ---------------------------------------------------------------- make install

@pytest.fixture(scope="module")
def staged(built, tmp_path_factory):
    """DESTDIR=<stage> cmake --install <build>: (stage, prefix dir inside it, libdir)."""
    stage = tmp_path_factory.mktemp("destdir")
    p = run(["cmake", "--install", built], env=bare_env(DESTDIR=str(stage)), timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    prefix = cache_value("CMAKE_INSTALL_PREFIX")
    root = stage / prefix.lstrip("/")
    return stage, root, cache_value("CMAKE_INSTALL_LIBDIR")


def test_install_puts_exactly_the_product_files(staged):
    stage, root, libdir = staged
    docs = sorted(p.name for p in (REPO / "docs").glob("*.md"))
    expected = sorted(
        [f"{libdir}/gdalplugins/gdal_vsitune.so", f"{libdir}/gdalplugins/vsitune-shmwatch",
         "bin/tunerd", "bin/lambda-exec-wrapper",
         "share/doc/vsitune/README.md", "share/vsitune/python/tunerd_plan.py"]
        + [f"share/doc/vsitune/{d}" for d in docs]
        + [f"share/vsitune/profiles/{p}" for p in PROFILES])
    # nothing outside the prefix, nothing more or less inside it
    assert files_under(stage) == sorted(str((root / f).relative_to(stage)) for f in expected)
    for exe in ("bin/tunerd", "bin/lambda-exec-wrapper", f"{libdir}/gdalplugins/vsitune-shmwatch"):
        assert os.access(root / exe, os.X_OK), exe
    for p in PROFILES:
        assert (root / "share/vsitune/profiles" / p).read_bytes() == \
            (REPO / "profiles" / p).read_bytes()
    assert (root / "bin/lambda-exec-wrapper").read_bytes() == \
        (REPO / "tunerd" / "lambda-exec-wrapper").read_bytes()
    assert (root / "share/doc/vsitune/README.md").read_bytes() == \
        (REPO / "README.md").read_bytes()


def test_staged_plugin_loads_from_the_staged_dir(staged, tmp_path):
    _, root, libdir = staged
    plugin_dir = root / libdir / "gdalplugins"
    line, path = gdal_formats(plugin_dir)
    assert line and line.startswith("VSITUNE -raster-"), line
    assert path == str(plugin_dir / "gdal_vsitune.so")
    # control: the same command without the staged dir has no VSITUNE
    empty = tmp_path / "empty"
    empty.mkdir()
    assert gdal_formats(empty) == (None, None)


def test_staged_tunerd_finds_its_profiles_with_no_environment(staged, tmp_path):
    _, root, _ = staged
    p = run([root / "bin/tunerd", "profile", "--memory", "1769"])
    assert p.returncode == 0, p.stderr
    env = parse_env_lines(p.stdout)
    # docs/tuning.md's lambda 1,769 row: inline, GDAL_CACHEMAX 352
    assert env["TUNERD_WORKERS"] == "1" and env["GDAL_CACHEMAX"] == "352", p.stdout
    # The profiles read are the staged ones (not the compiled-in source tree):
    # a copy of the installed tree whose lambda profile carries a marker.
    copy = tmp_path / "tree"
    shutil.copytree(root, copy, symlinks=True)
    mark_lambda_profile(copy / "share/vsitune/profiles", "staged copy read")
    p = run([copy / "bin/tunerd", "profile", "--memory", "1769", "--format", "json"])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["note"] == "staged copy read"


def test_docs_environment_block_is_what_tunerd_prints(staged):
    """docs/packaging.md's TiTiler environment is the installed tunerd's output
    for the command named in its marker comment, line for line."""
    _, root, _ = staged
    text = (REPO / "docs" / "packaging.md").read_text()
    m = re.search(r"<!-- packaging-env: tunerd (.*?) -->\n```\n(.*?)```", text, re.S)
    assert m, "docs/packaging.md has no packaging-env block"
    p = run([root / "bin/tunerd", *shlex.split(m.group(1))])
    assert p.returncode == 0 and p.stderr == "", p.stderr  # the staged plugin is found
    # GDAL_DRIVER_PATH is the staged tree's own lib/gdalplugins: /usr/local once installed
    assert m.group(2).splitlines() == p.stdout.replace(str(root), "/usr/local").splitlines()


# ---------------------------------------------------------------- Lambda layer

LAYER_FILES = sorted(["bin/tunerd", "bin/lambda-exec-wrapper",
                      "lib/gdalplugins/gdal_vsitune.so", "share/vsitune/RUNTIME.txt",
                      "share/vsitune/python/tunerd_plan.py"]
                     + [f"share/vsitune/profiles/{p}" for p in PROFILES])


@pytest.fixture(scope="module")
def layer(built, tmp_path_factory):
    """(zip path, unzipped dir): build-layer.sh on the test's build, unzipped
    with Debian's unzip, as Lambda does into /opt."""
    out = tmp_path_factory.mktemp("layer")
    zpath = out / "vsitune-layer.zip"
    p = run([LAYER_SCRIPT, "--build-dir", built, "--output", zpath],
            env=bare_env(TMPDIR=str(out)), timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert zpath.is_file()
    opt = out / "opt"
    p = run(["unzip", "-q", zpath, "-d", opt])
    assert p.returncode == 0, p.stderr
    # the script cleans its staging tree up
    assert sorted(x.name for x in out.iterdir()) == ["opt", "vsitune-layer.zip"]
    return zpath, opt


def test_layer_zip_has_the_opt_layout_and_modes(layer):
    zpath, _ = layer
    with zipfile.ZipFile(zpath) as z:
        infos = z.infolist()
    names = sorted(i.filename for i in infos if not i.is_dir())
    assert names == LAYER_FILES
    for i in infos:  # the zip's root is /opt: no absolute paths, no opt/ prefix
        assert not i.filename.startswith(("/", "opt/")) and ".." not in i.filename
    modes = {i.filename: i.external_attr >> 16 for i in infos if not i.is_dir()}
    for f, mode in modes.items():
        assert stat.S_ISREG(mode), f  # no symlinks or devices
        assert mode & 0o444 == 0o444, f"{f} not world-readable: {oct(mode)}"
        if f.startswith("bin/"):
            assert mode & 0o111 == 0o111, f"{f} not executable: {oct(mode)}"


def test_layer_binaries_are_stripped_and_match_runtime_txt(layer, built):
    _, opt = layer
    so = opt / "lib/gdalplugins/gdal_vsitune.so"
    sections = run(["readelf", "-S", so]).stdout
    assert ".debug_info" not in sections and ".symtab" not in sections
    runtime = (opt / "share/vsitune/RUNTIME.txt").read_text()
    for path, label in ((so, "lib/gdalplugins/gdal_vsitune.so"), (opt / "bin/tunerd",
                                                                    "bin/tunerd")):
        m = re.search(rf"^{re.escape(label)} needs: (.*)$", runtime, re.M)
        assert m, runtime
        assert sorted(m.group(1).split()) == readelf_needed(path)
    needed = readelf_needed(so)
    for lib in ("libcurl.so.4", "libcrypto.so.3"):
        assert lib in needed
    assert any(n.startswith("libgdal.so.") for n in needed), needed  # soname per GDAL release
    gdal = run(["gdal-config", "--version"]).stdout.strip()
    assert f"Built against GDAL: {gdal} " in runtime
    # every library resolves on this (Debian 12) machine
    ldd = run(["ldd", so])
    assert ldd.returncode == 0 and "not found" not in ldd.stdout, ldd.stdout


def test_layer_tunerd_sizes_a_10240_mb_function(layer, tmp_path):
    _, opt = layer
    p = run([opt / "bin/tunerd", "profile", "--format", "json"],
            env=bare_env(AWS_LAMBDA_FUNCTION_MEMORY_SIZE="10240"))
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert j["platform"] == "lambda"
    assert "AWS_LAMBDA_FUNCTION_MEMORY_SIZE" in j["memory_source"]
    assert (j["workers"], j["worker_kind"], j["gdal_cachemax_mb"]) == (5, "processes", 384)
    # the plugin next to tunerd's own install: /opt/lib/gdalplugins on Lambda
    assert j["env"]["GDAL_DRIVER_PATH"] == str(opt / "lib/gdalplugins")
    assert "warning" not in p.stderr
    assert j["env"]["GDAL_CACHEMAX"] == "384" and j["env"]["TUNERD_WORKERS"] == "5"
    # the profiles it read are the layer's own
    copy = tmp_path / "opt"
    shutil.copytree(opt, copy, symlinks=True)
    mark_lambda_profile(copy / "share/vsitune/profiles", "layer copy read")
    p = run([copy / "bin/tunerd", "profile", "--format", "json"],
            env=bare_env(AWS_LAMBDA_FUNCTION_MEMORY_SIZE="10240"))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["note"] == "layer copy read"


def test_layer_exec_wrapper_uses_its_sibling_tunerd(layer):
    _, opt = layer
    env = bare_env(AWS_LAMBDA_FUNCTION_NAME="fn", AWS_LAMBDA_FUNCTION_MEMORY_SIZE="10240",
                   GDAL_NUM_THREADS="2")
    p = run([opt / "bin/lambda-exec-wrapper", "env"], env=env)
    assert p.returncode == 0, p.stderr
    assert "untuned" not in p.stderr
    got = parse_env_lines(p.stdout)
    assert got["TUNERD_WORKERS"] == "5" and got["GDAL_CACHEMAX"] == "384"
    assert got["GDAL_DRIVER_PATH"] == str(opt / "lib/gdalplugins")
    assert p.stderr == ""
    assert got["GDAL_NUM_THREADS"] == "2"  # the function's own setting wins


def test_layer_plugin_loads_in_local_gdal_and_rasterio(layer):
    _, opt = layer
    plugin_dir = opt / "lib/gdalplugins"
    line, path = gdal_formats(plugin_dir)
    assert line and line.startswith("VSITUNE -raster-"), line
    assert path == str(plugin_dir / "gdal_vsitune.so")
    # the docs' rasterio example: the plugin is in rasterio's GDAL (Debian's python3-rasterio)
    code = ("import rasterio\n"
            "with rasterio.Env() as env:\n"
            "    print('VSITUNE' in env.drivers())\n")
    p = run(["/usr/bin/python3", "-c", code], env=bare_env(GDAL_DRIVER_PATH=str(plugin_dir)))
    assert p.returncode == 0 and p.stdout.strip() == "True", p.stdout + p.stderr
    p = run(["/usr/bin/python3", "-c", code], env=bare_env(GDAL_DRIVER_PATH="/nonexistent"))
    assert p.returncode == 0 and p.stdout.strip() == "False", p.stdout + p.stderr


@pytest.mark.parametrize("args, msg", [
    (["--bogus"], "unknown argument '--bogus'"),
    (["--build-dir"], "--build-dir needs a directory"),
    (["--build-dir", "/nonexistent"], "is not a CMake build directory"),
    (["--output", "/tmp/x.tar"], "--output must name a .zip file"),
])
def test_layer_script_bad_input(args, msg):
    p = run([LAYER_SCRIPT, *args], timeout=30)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.startswith("build-layer: ") and msg in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_layer_script_help():
    p = run([LAYER_SCRIPT, "--help"], timeout=30)
    assert p.returncode == 0 and p.stdout.startswith("Usage: build-layer.sh")
    assert "Exit status" in p.stdout and "1 anything else" in p.stdout


def test_layer_script_refuses_a_build_with_another_libdir(built, tmp_path):
    """A build configured for lib64 would put the plugin where no layer user
    looks: exit 3 and say which setting, ship nothing."""
    bdir = tmp_path / "b"
    p = run(["cmake", "-S", REPO, "-B", bdir, "-DVT_BUILD_TESTS=OFF",
             "-DCMAKE_INSTALL_LIBDIR=lib64"], timeout=120)
    assert p.returncode == 0, p.stderr
    # its install rules take the binaries from its own tree: use the test's build
    for f in ("vsiplugin/gdal_vsitune.so", "vsiplugin/vsitune-shmwatch", "tunerd/tunerd"):
        shutil.copy2(built / f, bdir / f)
    out = tmp_path / "layer.zip"
    p = run([LAYER_SCRIPT, "--build-dir", bdir, "--output", out],
            env=bare_env(TMPDIR=str(tmp_path)), timeout=120)
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert "has no /opt/lib/gdalplugins/gdal_vsitune.so" in p.stderr
    assert "CMAKE_INSTALL_LIBDIR=lib" in p.stderr and "lib64/gdalplugins" in p.stderr
    assert not out.exists()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["b"]  # staging removed


# ---------------------------------------------------------------- container recipe

def script_runs(script):
    """The commands of a script a RUN runs (packaging/build-stage.sh, shared by both
    recipes), one '&&' chain a line, as RUN argument texts: comments and `set`
    dropped."""
    return [ln.strip() for ln in script.read_text().splitlines()
            if ln.strip() and not ln.lstrip().startswith("#") and not ln.startswith("set ")]


def dockerfile_instructions(path=None):
    """[(INSTRUCTION, args text, stage index)]: comments dropped, continuations joined;
    a RUN of a shell script COPY'd from the repository into /src stands for the
    script's commands (script_runs), each a RUN."""
    out, stage, buf = [], -1, ""
    for raw in (path or DOCKERFILE).read_text().splitlines():
        if not buf and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        if raw.rstrip().endswith("\\"):
            buf += raw.rstrip()[:-1] + " "
            continue
        line = (buf + raw).strip()
        buf = ""
        instr, _, rest = line.partition(" ")
        instr = instr.upper()
        if instr == "FROM":
            stage += 1
        m = re.fullmatch(r"sh /src/(\S+\.sh)", rest.strip())
        if instr == "RUN" and m:
            copied = [a for i, a, s in out if i == "COPY" and s == stage
                      and a.split()[0] == m.group(1)]
            assert copied, f"RUN of {m.group(1)}, which the stage does not COPY"
            out += [("RUN", cmd, stage) for cmd in script_runs(REPO / m.group(1))]
            continue
        out.append((instr, rest.strip(), stage))
    assert not buf, "Dockerfile ends inside a continuation"
    return out


def test_both_recipes_build_alike():
    """The container recipe and the Lambda image build the same way: the same
    build stage (one script, packaging/build-stage.sh, and the same sources)."""
    lam = REPO / "packaging" / "lambda-image" / "Dockerfile"
    build = [(i, a) for i, a, s in dockerfile_instructions() if s == 0]
    assert build == [(i, a) for i, a, s in dockerfile_instructions(lam) if s == 0]
    assert ("RUN", next(a for i, a in build if a.startswith("cmake "))) in build


def setup_debs():
    text = (REPO / "scripts" / "setup.sh").read_text()
    block = re.search(r"^DEBS=\((.*?)^\)", text, re.M | re.S).group(1)
    return set(block.split())


def apt_installs(run_args):
    pkgs = []
    for cmd in run_args.split("&&"):
        words = shlex.split(cmd)
        if words[:2] == ["apt-get", "install"]:
            pkgs += [w for w in words[2:] if not w.startswith("-")]
    return pkgs


def build_commands(ins):
    """The RUN with the cmake steps: [configure, build, install] as word lists."""
    runs = [a for i, a, _ in ins if i == "RUN" and a.startswith("cmake ")]
    assert len(runs) == 1, runs
    cmds = [shlex.split(c) for c in runs[0].split("&&")]
    assert len(cmds) == 3, cmds
    return cmds


def configure_settings(configure):
    """(source dir, build dir, {-D name: value}) from `cmake -S X -B Y -D...`."""
    assert configure[:1] == ["cmake"] and "-S" in configure and "-B" in configure
    src = configure[configure.index("-S") + 1]
    bld = configure[configure.index("-B") + 1]
    defs = dict(w[2:].split("=", 1) for w in configure if w.startswith("-D"))
    return src, bld, defs


def test_dockerfile_is_debian12_with_only_known_instructions():
    ins = dockerfile_instructions()
    assert {i for i, _, _ in ins} <= {"FROM", "RUN", "WORKDIR", "COPY", "ENV", "ENTRYPOINT",
                                      "CMD", "ARG", "LABEL"}
    froms = [a for i, a, _ in ins if i == "FROM"]
    assert len(froms) == 2, froms
    for a in froms:
        assert re.match(r"debian:(bookworm|12)(-slim)?(\s+AS\s+\w+)?$", a, re.I), a
    assert ins[0][0] == "FROM"


def test_dockerfile_copy_sources_exist_in_the_repo():
    ins = dockerfile_instructions()
    local = [a for i, a, _ in ins if i == "COPY" and not a.startswith("--from")]
    assert local
    for a in local:
        words = shlex.split(a)
        assert not any(w.startswith("--") for w in words), a
        for src in words[:-1]:
            assert not src.startswith("/") and ".." not in src, src
            assert (REPO / src).exists(), f"COPY source {src} is not in the repo"
        assert words[-1].startswith("/"), a


def test_dockerfile_run_steps_are_setup_steps():
    """Every command a RUN line runs is one scripts/setup.sh runs, with the same
    apt flags, plus the two a Dockerfile adds: dropping apt's lists (image size)
    and the staged install (the packaging step itself)."""
    setup = (REPO / "scripts" / "setup.sh").read_text()
    extra = {("rm", "-rf", "/var/lib/apt/lists/*"), ("cmake", "--install")}
    seen = set()
    for instr, args, _ in dockerfile_instructions():
        if instr != "RUN":
            continue
        assert not re.search(r"[;|]|\|\||`", args), f"RUN must be '&&' chains only: {args}"
        for cmd in args.split("&&"):
            words = shlex.split(cmd)
            words = words[1:] if words and words[0].startswith("DESTDIR=") else words
            verb = tuple(words[:2])
            seen.add(verb)
            if tuple(words[:3]) in extra or verb in extra:
                continue
            assert verb in {("apt-get", "update"), ("apt-get", "install"), ("cmake", "-S"),
                            ("cmake", "--build")}, f"not a setup.sh step: {cmd.strip()}"
            assert " ".join(verb) in setup, f"scripts/setup.sh does not run {verb}"
            if verb == ("apt-get", "install"):
                assert "-y" in words and "--no-install-recommends" in words, cmd
    assert {("apt-get", "install"), ("cmake", "-S"), ("cmake", "--build"),
            ("cmake", "--install")} <= seen


def test_dockerfile_packages_match_setup_and_the_linked_libraries(built):
    ins = dockerfile_instructions()
    base = next(a for i, a, s in ins if i == "FROM").split()[0]
    here = re.search(r"^VERSION_CODENAME=(\S+)", Path("/etc/os-release").read_text(), re.M)
    if here is None or here.group(1) not in base:
        # its package names are that release's (libgdal32, libssl3, ...); scripts/test.sh
        # checks it on the Debian 12 machine, the other GDALs in roots of other releases
        pytest.skip(f"the container recipe is built FROM {base}: checked on that release only")
    debs = setup_debs()
    build_pkgs = [p for i, a, s in ins if i == "RUN" and s == 0 for p in apt_installs(a)]
    runtime_pkgs = [p for i, a, s in ins if i == "RUN" and s == 1 for p in apt_installs(a)]
    assert build_pkgs and runtime_pkgs
    assert set(build_pkgs) <= debs, f"not in setup.sh DEBS: {set(build_pkgs) - debs}"
    shown = run(["apt-cache", "show", "--no-all-versions", *runtime_pkgs]).stdout
    known = set(re.findall(r"^Package: (\S+)$", shown, re.M))
    assert set(runtime_pkgs) <= known, f"not Debian packages here: {set(runtime_pkgs) - known}"
    # every shared library the plugin and tunerd link is owned by a package the
    # runtime stage installs (one dpkg-query for all paths: it is slow)
    libs = {}
    for binary in (built / "vsiplugin/gdal_vsitune.so", built / "tunerd/tunerd"):
        needed = readelf_needed(binary)
        for line in run(["ldd", binary]).stdout.splitlines():
            m = re.match(r"\s*(\S+) => (/\S+)", line)
            if m and m.group(1) in needed:
                real = os.path.realpath(m.group(2))
                libs[m.group(1)] = {m.group(2), real, "/usr" + m.group(2), "/usr" + real}
    assert {"libcurl.so.4", "libcrypto.so.3", "libc.so.6"} <= set(libs)
    assert any(n.startswith("libgdal.so.") for n in libs), libs
    paths = sorted(set().union(*libs.values()))
    owner_of = {}
    for line in run(["dpkg-query", "-S", *paths]).stdout.splitlines():
        pkgs, _, path = line.partition(": ")
        owner_of[path] = {o.split(":")[0] for o in pkgs.split(", ")}
    for soname, cands in libs.items():
        owners = set().union(*(owner_of.get(c, set()) for c in cands))
        assert owners, f"no Debian package owns {soname} ({sorted(cands)})"
        assert owners & set(runtime_pkgs), \
            f"{soname} (from {owners}) is not installed by the runtime stage"


def test_dockerfile_build_steps_are_setup_steps_and_run(built, tmp_path):
    """Configure on a tree with only what COPY copies; the build command is
    setup.sh's; install into a stage; ENV and ENTRYPOINT point into that stage
    and the ENTRYPOINT + CMD run from it."""
    ins = dockerfile_instructions()
    configure, build, install = build_commands(ins)
    src, bld, defs = configure_settings(configure)
    # setup.sh: cmake --build "$BUILD_DIR" -j"$(nproc)"
    assert build == ["cmake", "--build", bld, "-j$(nproc)"], build
    setup = (REPO / "scripts" / "setup.sh").read_text()
    assert 'cmake --build "$BUILD_DIR" -j"$(nproc)"' in setup
    assert 'cmake -S "$ROOT" -B "$BUILD_DIR"' in setup
    assert install[0].startswith("DESTDIR=") and install[1:4] == ["cmake", "--install", bld]
    dest = install[0].split("=", 1)[1]

    # the build context as the COPY lines make it
    ctx = tmp_path / "src"
    for a in [a for i, a, _ in ins if i == "COPY" and not a.startswith("--from")]:
        words = shlex.split(a)
        for s in words[:-1]:
            dst_dir = ctx / os.path.relpath(words[-1], src)
            if (REPO / s).is_dir():
                shutil.copytree(REPO / s, dst_dir, dirs_exist_ok=True)
            else:
                dst_dir.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / s, dst_dir / Path(s).name)
    bdir = tmp_path / "build"
    sub = [str(ctx) if w == src else str(bdir) if w == bld else w for w in configure]
    p = run(sub, env=bare_env(), timeout=120)
    assert p.returncode == 0, "configure on the COPY'd tree failed:\n" + p.stdout + p.stderr
    if os.environ.get("VT_PACKAGING_FULL_BUILD") == "1":
        p = run(["cmake", "--build", bdir, f"-j{min(2, os.cpu_count() or 1)}"], timeout=900)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr
        built = bdir
    # the install step, on the test's build (configured with the same prefix?)
    prefix = defs.get("CMAKE_INSTALL_PREFIX", "/usr/local")
    stage = tmp_path / "stage"
    p = run(["cmake", "--install", built, "--prefix", prefix, *install[4:]],
            env=bare_env(DESTDIR=str(stage)), timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr

    # COPY --from=build <dest><prefix>/ <prefix>/ : the stage holds what it copies
    (cp,) = [shlex.split(a) for i, a, _ in ins if i == "COPY" and a.startswith("--from")]
    assert cp[0] == "--from=build" and cp[1].rstrip("/") == dest + prefix, cp
    assert cp[2].rstrip("/") == prefix
    root = stage / prefix.lstrip("/")
    assert (root / "bin" / "tunerd").is_file()

    envs = dict(a.split("=", 1) for i, a, s in ins if i == "ENV" and s == 1)
    gdp = envs["GDAL_DRIVER_PATH"]
    assert gdp.startswith(prefix + "/")
    staged_plugins = stage / gdp.lstrip("/")
    assert (staged_plugins / "gdal_vsitune.so").is_file(), gdp
    entry = json.loads(next(a for i, a, _ in ins if i == "ENTRYPOINT"))
    cmd = json.loads(next(a for i, a, _ in ins if i == "CMD"))
    assert entry[0] == f"{prefix}/bin/tunerd" and entry[1] == "exec" and entry[-1] == "--"
    # the container's start, from the stage: tunerd exec sizes (for this
    # machine), keeps the image's GDAL_DRIVER_PATH, and GDAL loads the plugin
    p = run([stage / entry[0].lstrip("/"), *entry[1:], "env"],
            env=bare_env(GDAL_DRIVER_PATH=str(staged_plugins)))
    assert p.returncode == 0, p.stderr
    got = parse_env_lines(p.stdout)
    assert got["GDAL_DRIVER_PATH"] == str(staged_plugins)
    assert int(got["TUNERD_WORKERS"]) >= 1 and int(got["GDAL_CACHEMAX"]) >= 32
    p = run([stage / entry[0].lstrip("/"), *entry[1:], *cmd],
            env=bare_env(GDAL_DRIVER_PATH=str(staged_plugins)))
    assert p.returncode == 0, p.stderr
    assert any(ln.strip().startswith("VSITUNE -raster-") for ln in p.stdout.splitlines())


def test_uninstall_with_the_install_manifest(built, tmp_path):
    """README's uninstall: every file an install wrote is in install_manifest.txt;
    removing them leaves no file under the prefix."""
    prefix = tmp_path / "prefix"
    p = run(["cmake", "--install", built, "--prefix", prefix], env=bare_env(), timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    manifest = Path(built) / "install_manifest.txt"
    listed = manifest.read_text().split()
    assert listed and all(f.startswith(str(prefix)) for f in listed)
    assert sorted(listed) == sorted(str(f) for f in prefix.rglob("*") if f.is_file())
    p = subprocess.run(["xargs", "rm", "-v"], stdin=open(manifest), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert not [f for f in prefix.rglob("*") if f.is_file()]


def test_lambda_environment_merge_recipe(tmp_path):
    """docs/packaging.md's jq merge: the function's own variables kept and winning,
    tunerd's added; a function without an environment gets tunerd's alone."""
    text = (REPO / "docs" / "packaging.md").read_text()
    m = re.search(r"^jq -s '(.*)' current\.json tuned\.json > env\.json$", text, re.M)
    assert m, "docs/packaging.md has the jq merge line"
    tuned = tmp_path / "tuned.json"
    p = run([BUILD / "tunerd" / "tunerd", "profile", "--memory", "10240", "--format",
             "lambda-json"], env=bare_env(TUNERD_PROFILES_DIR=str(REPO / "profiles")))
    assert p.returncode == 0, p.stderr
    tuned.write_text(p.stdout)
    current = tmp_path / "current.json"  # `--query Environment` of a function with variables
    current.write_text(json.dumps({"Variables": {"DB_URL": "postgres://x", "GDAL_CACHEMAX": "512"}}))
    out = subprocess.run(["jq", "-s", m.group(1), str(current), str(tuned)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    merged = json.loads(out.stdout)["Variables"]
    assert merged["DB_URL"] == "postgres://x" and merged["GDAL_CACHEMAX"] == "512"
    assert merged["TUNERD_WORKERS"] == "5" and merged["GDAL_DRIVER_PATH"] == "/opt/lib/gdalplugins"
    current.write_text("null\n")  # a function without an environment
    out = subprocess.run(["jq", "-s", m.group(1), str(current), str(tuned)],
                         capture_output=True, text=True, timeout=30)
    assert json.loads(out.stdout)["Variables"] == json.loads(tuned.read_text())["Variables"]
