#!/usr/bin/python3
"""test_lambda_layer.py: the portable Lambda layer (issue 21) drops into a GDAL it
was not compiled in.

packaging/lambda/build-layer.sh --gdal RELEASE [--arch ARCH] builds the layer in a
Debian bullseye root (glibc 2.31) against the headers and libgdal.so of Debian's
GDAL of that release, with a private static libcurl/nghttp2/OpenSSL. This file
unpacks each zip and checks:

1. every ELF file: the highest GLIBC symbol version it asks for is <= 2.34
   (Lambda's Amazon Linux 2023), its NEEDED entries are only what a Lambda
   function with a GDAL layer has, the plugin exports GDALRegister_vsitune alone
   and asks nothing of an outside libcurl or OpenSSL;
2. loaded by the GDAL of a Debian root (trixie: 3.10, sid: 3.13; its own gdalinfo
   and rasterio, a different build of that release than the one it was linked
   against), the plugin takes over /vsis3/: the lab's request log shows gdalinfo
   of the 212 MB COG = 1 request, a window read by rasterio = 2, all with
   vsitune's User-Agent, and the values equal the local file's; over TLS the
   plugin's own libcurl negotiates HTTP/2;
3. HTTPS where the only CA bundle is Amazon Linux's path
   (/etc/pki/tls/certs/ca-bundle.crt; Debian's /etc/ssl/certs hidden; no
   CURL_CA_BUNDLE): the plugin's own libcurl has no bundle built in and must
   find that one.

The roots and the layer's build products (curl's source and static build) are
cached under $VT_ROOTS_DIR (default build/roots), made by the scripts
(scripts/debroot.sh; DEBROOT_ARCH=arm64 for arm64). A root the Debian mirror
does not serve is a skip that says so; any other failure to build is a failure.
The arm64 zip (3.10, cross-built) gets checks 1 and 2 in an arm64 trixie root
under qemu-user (skipped, saying why, where binfmt_misc cannot run arm64
binaries).

Run: /usr/bin/python3 -m pytest tests/integration/test_lambda_layer.py
Needs root (debootstrap, chroot). About 10 minutes on a cold cache.
"""
import hashlib
import os
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

import lab_client
from test_vsitune_helpers import PY, VT_UA, kinds

REPO = Path(__file__).resolve().parents[2]
BUILD = lab_client.build_dir()
ROOTS = Path(os.environ.get("VT_ROOTS_DIR") or BUILD / "roots")
LAYER = REPO / "packaging" / "lambda" / "build-layer.sh"
DEBROOT = REPO / "scripts" / "debroot.sh"
# GDAL release -> the Debian suite whose GDAL loads the layer
RELEASES = {"3.10": "trixie", "3.13": "sid"}
ROOT_DEBS = ["gdal-bin", "python3-rasterio", "python3-numpy", "ca-certificates"]
# What a Lambda function with a GDAL layer provides (libpthread, libdl, librt: glibc
# 2.34 merged them into libc and still ships the files for binaries linked before).
ALLOWED_NEEDED = re.compile(r"libgdal\.so\.\d+|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libc\.so\.6|"
                            r"libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|"
                            r"ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1")
# A 64x64 window inside one 512x512 tile of the s2 fixture, in its data swath.
WINDOW = (8000, 3000, 64, 64)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (debootstrap, chroot)"),
    # scripts/test.sh runs the suite inside its trixie and sid roots too: this file
    # makes and enters roots itself, so it belongs to the host phase only
    pytest.mark.skipif(Path("/.debroot").exists(),
                       reason="inside a scripts/debroot.sh root: runs in the host phase"),
]


def sh(args, timeout=3600, **kw):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, **kw)


# The builds checked: (GDAL release, architecture). arm64 runs under qemu-user.
BUILDS = [("3.10", "x86_64"), ("3.13", "x86_64"), ("3.10", "arm64")]
TRIPLET = {"x86_64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}


def need_arch(arch):
    # The arm64 root under qemu-user takes about 20 minutes to make from nothing (the
    # CI's budget is the whole suite's 30): run where it is cached or asked for.
    if arch == "arm64" and os.environ.get("VT_TEST_ARM64") != "1" and \
            not (root_of("3.10", "arm64") / ".debroot").exists():
        pytest.skip("arm64 (qemu-user) runs with VT_TEST_ARM64=1 or once its root "
                    f"{root_of('3.10', 'arm64')} is made: about 20 minutes from nothing")
    if arch == "arm64" and "enabled" not in _read("/proc/sys/fs/binfmt_misc/qemu-aarch64"):
        pytest.skip("arm64 needs qemu-user-static with binfmt_misc enabled "
                    "(apt-get install qemu-user-static binfmt-support)")


def _read(path):
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def root_of(release, arch):
    """The Debian root whose GDAL loads the layer: ROOTS/trixie, ROOTS/trixie-arm64, ..."""
    return ROOTS / (RELEASES[release] + ("-arm64" if arch == "arm64" else ""))


def make_root(release, arch, extra=()):
    """scripts/debroot.sh SUITE DIR ROOT_DEBS [extra]: the root, or a skip when the
    mirror does not serve SUITE (exit 3)."""
    suite, where = RELEASES[release], root_of(release, arch)
    env = {**os.environ, "DEBROOT_ARCH": "arm64"} if arch == "arm64" else None
    p = sh([DEBROOT, suite, where, *ROOT_DEBS, *extra], env=env)
    if p.returncode == 3:
        pytest.skip(f"Debian {suite}: {p.stderr.strip().splitlines()[-1]}")
    assert p.returncode == 0, p.stderr[-3000:]
    return Path(where)


_layers = {}


def layer(release, arch, tmp_path_factory):
    """build-layer.sh --gdal RELEASE --arch ARCH, unpacked: (zip path, unpacked dir)."""
    key = (release, arch)
    need_arch(arch)
    if key not in _layers:
        out = BUILD / "layer" / f"vsitune-layer-gdal{release}-{arch}.zip"
        p = sh([LAYER, "--gdal", release, "--arch", arch, "--output", out],
               env={**os.environ, "VT_ROOTS_DIR": str(ROOTS)})
        if p.returncode == 4:
            pytest.skip(f"the Debian mirror cannot serve a root the build needs: "
                        f"{p.stderr.strip().splitlines()[-1]}")
        assert p.returncode == 0, (p.stdout + p.stderr)[-5000:]
        d = tmp_path_factory.mktemp(f"layer-{release}-{arch}")
        with zipfile.ZipFile(out) as z:
            for info in z.infolist():
                z.extract(info, d)
                mode = info.external_attr >> 16
                if mode:
                    os.chmod(d / info.filename, mode & 0o7777)
        _layers[key] = (out, d)
    return _layers[key]


def elf_files(d):
    return [p for p in sorted(Path(d).rglob("*"))
            if p.is_file() and p.read_bytes()[:4] == b"\x7fELF"]


def glibc_max(path):
    vs = re.findall(r"GLIBC_(\d+(?:\.\d+)+)", sh(["readelf", "-V", "--wide", path]).stdout)
    return max((tuple(map(int, v.split("."))) for v in vs), default=())


def needed(path):
    return re.findall(r"\(NEEDED\).*\[(.*)\]", sh(["readelf", "-d", path]).stdout)


def dynsyms(path, defined):
    """Dynamic symbols of path: the defined ones, or the undefined ones."""
    out = sh(["nm", "-D", "--defined-only" if defined else "--undefined-only", path]).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()}


def in_root(rootdir, binds, env, args, timeout=600):
    """args inside rootdir (scripts/debroot.sh --run), with exactly env."""
    cmd = [DEBROOT, "--run", rootdir]
    for b in binds:
        cmd += ["--bind", b]
    cmd += ["--", "/usr/bin/env", *[f"{k}={v}" for k, v in env.items()], *args]
    return sh(cmd, timeout=timeout)


def lab_env(lab, endpoint, plugin_dir, drop=()):
    env = {k: v for k, v in lab.env(endpoint).items() if k not in drop}
    env.update({"AWS_EC2_METADATA_DISABLED": "true",
                "CPL_AWS_EC2_API_ROOT_URL": "http://127.0.0.1:9",
                "GDAL_DRIVER_PATH": str(plugin_dir)})
    return env


def cert_binds(lab):
    """Binds making the lab's TLS certificate visible at its host path in a root."""
    certs = {Path(v).parent for k, v in lab.env("h2").items() if k.endswith(("CA_BUNDLE", "CERT_FILE"))}
    return [f"{d}:{d}:ro" for d in sorted(certs)]


RASTERIO_WINDOW = r'''
import hashlib, sys
import rasterio
from rasterio.windows import Window
with rasterio.open(sys.argv[1]) as ds:
    a = ds.read(1, window=Window(*map(int, sys.argv[2:6])))
print(a.dtype, a.shape, int(a.sum()), hashlib.sha256(a.tobytes()).hexdigest())
'''


def local_window(path):
    import rasterio
    from rasterio.windows import Window
    with rasterio.open(path) as ds:
        a = ds.read(1, window=Window(*WINDOW))
    return f"{a.dtype} {a.shape} {int(a.sum())} {hashlib.sha256(a.tobytes()).hexdigest()}"


def check_vsitune_log(log, cog, n):
    assert kinds(log) == ["GET_RANGE"] * n, [(e["kind"], e["range"], e["user_agent"]) for e in log]
    assert all(e["user_agent"].startswith(VT_UA) for e in log), [e["user_agent"] for e in log]
    assert all(e["status"] == 206 and e["key"] == cog["key"] for e in log), log


# ---------------------------------------------------------------- 1. the ELF files
@pytest.mark.parametrize("release,arch", BUILDS)
def test_elf_files_need_only_lambda(release, arch, tmp_path_factory):
    zpath, d = layer(release, arch, tmp_path_factory)
    elves = elf_files(d)
    names = sorted(str(p.relative_to(d)) for p in elves)
    assert names == ["bin/tunerd", "lib/gdalplugins/gdal_vsitune.so"], names
    machine = {"x86_64": "X86-64", "arm64": "AArch64"}[arch]
    for p in elves:
        assert machine in sh(["readelf", "-h", p]).stdout, p
        assert glibc_max(p) and glibc_max(p) <= (2, 34), (p, glibc_max(p))
        bad = [n for n in needed(p) if not ALLOWED_NEEDED.fullmatch(n)]
        assert not bad, (p, needed(p))
    plugin = d / "lib/gdalplugins/gdal_vsitune.so"
    soname = sh(["readelf", "-d", root_of(release, arch) / "usr/lib" / TRIPLET[arch] / "libgdal.so"]).stdout
    want = re.search(r"\(SONAME\).*\[(.*)\]", soname).group(1)
    assert want in needed(plugin), needed(plugin)
    # only the entry point is exported; curl, nghttp2 and OpenSSL are inside, hidden
    assert dynsyms(plugin, defined=True) - {"_init", "_fini"} == {"GDALRegister_vsitune"}
    outside = {s for s in dynsyms(plugin, defined=False)
               if re.match(r"(curl_|Curl_|nghttp2_|SSL_|EVP_|OPENSSL_|CRYPTO_)", s)}
    assert not outside, sorted(outside)
    size = zpath.stat().st_size
    print(f"{zpath.name}: {size} bytes")
    assert size < 5 * 1024 * 1024, size  # lambgeo's GDAL layers are 30-52 MB


# ---------------------------------------------------------------- 2. drops into another GDAL
@pytest.mark.parametrize("release,arch", BUILDS)
def test_drops_into_debian_gdal(release, arch, lab, cogs, tmp_path_factory):
    zpath, d = layer(release, arch, tmp_path_factory)
    rootdir = make_root(release, arch)
    cog = cogs["s2"]
    binds = [f"{d}:/opt:ro", *cert_binds(lab)]
    plugins = "/opt/lib/gdalplugins"

    ver = in_root(rootdir, binds, {}, ["gdalinfo", "--version"])
    assert ver.stdout.startswith(f"GDAL {release}."), ver.stdout + ver.stderr
    uname = in_root(rootdir, binds, {}, ["uname", "-m"]).stdout.strip()
    assert uname == {"x86_64": "x86_64", "arm64": "aarch64"}[arch]
    fmts = in_root(rootdir, binds, {"GDAL_DRIVER_PATH": plugins}, ["gdalinfo", "--formats"])
    assert fmts.returncode == 0 and re.search(r"^\s*VSITUNE", fmts.stdout, re.M), \
        fmts.stdout[-2000:] + fmts.stderr

    lab.reset()
    info = in_root(rootdir, binds, lab_env(lab, "h1", plugins),
                   ["gdalinfo", f"/vsis3/lab/{cog['key']}"])
    assert info.returncode == 0, info.stderr
    check_vsitune_log(lab.log(), cog, 1)

    lab.reset()
    win = in_root(rootdir, binds, lab_env(lab, "h2", plugins),
                  [PY, "-c", RASTERIO_WINDOW, f"s3://lab/{cog['key']}", *WINDOW])
    assert win.returncode == 0, win.stderr
    check_vsitune_log(lab.log(), cog, 2)
    assert win.stdout.strip() == local_window(cog["path"])

    # the plugin's own static libcurl speaks HTTP/2 over TLS (nghttp2 inside): its
    # debug line for the one GET says which protocol the connection negotiated
    lab.reset()
    info = in_root(rootdir, binds, {**lab_env(lab, "h2", plugins), "CPL_DEBUG": "VSITUNE"},
                   ["gdalinfo", f"/vsis3/lab/{cog['key']}"])
    assert info.returncode == 0, info.stderr
    check_vsitune_log(lab.log(), cog, 1)
    gets = [ln for ln in info.stderr.splitlines() if ln.startswith("VSITUNE: GET ")]
    assert len(gets) == 1 and ", HTTP/2, " in gets[0], info.stderr[-3000:]


# ---------------------------------------------------------------- 3. Amazon Linux's CA path
# Inside the root's private mount namespace: /etc overlaid on a tmpfs (the root
# itself is not changed), Debian's bundle removed, the lab's CA at AL2023's path.
AL2023_CA = r'''
set -e
mount -t tmpfs tmpfs /mnt
mkdir /mnt/up /mnt/work
mount -t overlay overlay -o lowerdir=/etc,upperdir=/mnt/up,workdir=/mnt/work /etc
rm -rf /etc/ssl/certs
mkdir -p /etc/pki/tls/certs
cp "$1" /etc/pki/tls/certs/ca-bundle.crt
shift
exec "$@"
'''


def test_https_finds_amazon_linux_ca_bundle(lab, cogs, tmp_path_factory):
    zpath, d = layer("3.10", "x86_64", tmp_path_factory)
    rootdir = make_root("3.10", "x86_64")
    cog = cogs["s2"]
    env = lab_env(lab, "h2", "/opt/lib/gdalplugins",
                  drop=("CURL_CA_BUNDLE", "SSL_CERT_FILE", "GDAL_CURL_CA_BUNDLE"))
    env["CPL_DEBUG"] = "VSITUNE"
    lab.reset()
    p = in_root(rootdir, [f"{d}:/opt:ro", *cert_binds(lab)], env,
                ["/bin/sh", "-c", AL2023_CA, "sh", lab.env("h2")["CURL_CA_BUNDLE"],
                 "gdalinfo", f"/vsis3/lab/{cog['key']}"])
    assert p.returncode == 0, p.stderr[-3000:]
    assert "CA bundle /etc/pki/tls/certs/ca-bundle.crt" in p.stderr, p.stderr[-3000:]
    check_vsitune_log(lab.log(), cog, 1)


# ---------------------------------------------------------------- 4. the conda-forge recipe
# No conda channel is reachable here, so packaging/conda/recipe.yaml is not built.
# What is run: its build.sh, as rattler-build would (PREFIX, SRC_DIR, RECIPE_DIR,
# CMAKE_ARGS), against a prefix laid out like a conda environment (headers straight
# in include/, lib/libgdal.so, lib/pkgconfig/gdal.pc with Cflags -I${includedir})
# made from trixie's GDAL 3.10, libcurl, nghttp2 and OpenSSL; then its activation
# script puts the plugin on GDAL_DRIVER_PATH for trixie's gdalinfo, and its
# deactivation script restores what was there.
CONDA_PREFIX_SH = r'''
set -eu
P=/vt/work/prefix
T=$(gcc -dumpmachine)
mkdir -p $P/include $P/lib/pkgconfig
cp -a /usr/include/gdal/. $P/include/
for h in curl openssl nghttp2; do
  for d in /usr/include/$h /usr/include/$T/$h; do
    if [ -d $d ]; then mkdir -p $P/include/$h && cp -a $d/. $P/include/$h/; fi
  done
done
for l in gdal curl crypto ssl nghttp2; do cp -L /usr/lib/$T/lib$l.so $P/lib/; done
pc() {  # NAME VERSION LIBS
  printf 'prefix=%s\nlibdir=${prefix}/lib\nincludedir=${prefix}/include\nName: %s\nDescription: %s\nVersion: %s\nLibs: -L${libdir} %s\nCflags: -I${includedir}\n' \
    "$P" "$1" "$1" "$2" "$3" >$P/lib/pkgconfig/$1.pc
}
pc gdal "$(gdal-config --version)" -lgdal
pc libcurl "$(curl-config --version | cut -d' ' -f2)" -lcurl
pc libnghttp2 "$(pkg-config --modversion libnghttp2)" -lnghttp2
pc libcrypto "$(pkg-config --modversion libcrypto)" -lcrypto
pc openssl "$(pkg-config --modversion openssl)" "-lssl -lcrypto"
cd /vt/work
env PREFIX=$P SRC_DIR=/vt/src RECIPE_DIR=/vt/src/packaging/conda CPU_COUNT=2 \
    CMAKE_GENERATOR="Unix Makefiles" CMAKE_ARGS="-DCMAKE_FIND_ROOT_PATH=$P" \
    PKG_CONFIG_LIBDIR=$P/lib/pkgconfig /bin/bash /vt/src/packaging/conda/build.sh >/vt/work/build.log 2>&1
echo "pkgconfig-gdal-cflags: $(PKG_CONFIG_LIBDIR=$P/lib/pkgconfig pkg-config --cflags gdal)"
unset GDAL_DRIVER_PATH
export CONDA_PREFIX=$P
. $P/etc/conda/activate.d/libgdal-vsitune_activate.sh
echo "activated: $GDAL_DRIVER_PATH"
gdalinfo --format VSITUNE | head -n 3
. $P/etc/conda/deactivate.d/libgdal-vsitune_deactivate.sh
echo "deactivated: ${GDAL_DRIVER_PATH-unset}"
export GDAL_DRIVER_PATH=/other/plugins
. $P/etc/conda/activate.d/libgdal-vsitune_activate.sh
echo "joined: $GDAL_DRIVER_PATH"
. $P/etc/conda/deactivate.d/libgdal-vsitune_deactivate.sh
echo "restored: $GDAL_DRIVER_PATH"
'''


def test_conda_build_script(tmp_path):
    rootdir = make_root("3.10", "x86_64", extra=(
        "build-essential", "cmake", "pkg-config", "libgdal-dev", "libcurl4-openssl-dev",
        "libnghttp2-dev", "libssl-dev"))
    work = tmp_path / "work"
    work.mkdir()
    p = in_root(rootdir, [f"{REPO}:/vt/src:ro", f"{work}:/vt/work"], {},
                ["/bin/sh", "-c", CONDA_PREFIX_SH], timeout=1800)
    log = (work / "build.log").read_text() if (work / "build.log").exists() else ""
    assert p.returncode == 0, p.stdout + p.stderr + log[-4000:]
    prefix = "/vt/work/prefix"
    out = p.stdout
    assert f"pkgconfig-gdal-cflags: -I{prefix}/include" in out, out
    assert f"activated: {prefix}/lib/gdalplugins\n" in out, out
    assert re.search(r"Short Name: VSITUNE", out), out
    assert "deactivated: unset" in out, out
    assert f"joined: /other/plugins:{prefix}/lib/gdalplugins" in out, out
    assert "restored: /other/plugins" in out, out
    # built against the prefix's GDAL: its headers and its libgdal (the same soname)
    plugin = work / "prefix/lib/gdalplugins/gdal_vsitune.so"
    assert "libgdal.so.36" in needed(plugin), needed(plugin)
    cc = (work / "_build/compile_commands.json").read_text()
    assert re.search(rf"(-I|-isystem ){prefix}/include ", cc), cc[:2000]
    assert "/usr/include/gdal" not in cc, cc[:2000]
    assert (work / "prefix/bin/tunerd").is_file()
