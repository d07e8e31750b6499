#!/usr/bin/env bash
# build-layer.sh: package gdal_vsitune.so, tunerd, the Lambda exec wrapper and
# the platform profiles as an AWS Lambda layer zip.
#
# Why a script and not just `zip`: a layer is unpacked under /opt, so the zip's
# root must be what a `cmake --install --prefix /opt` puts under /opt, with the
# plugin in lib/gdalplugins (the GDAL_DRIVER_PATH tunerd's lambda profile
# emits) and tunerd next to share/vsitune/profiles (where it looks first).
# The script stages exactly that install, checks the layout, records what the
# binaries need from the function's runtime (RUNTIME.txt, see
# docs/packaging.md: the layer does NOT ship GDAL, libcurl or OpenSSL), and zips
# it with file modes kept.
#
# Two builds:
# - the portable layer (--gdal RELEASE): for Lambda's Amazon Linux 2023 (glibc
#   2.34) next to a GDAL layer of that release (lambgeo's, or rasterio's).
#   build-portable.sh compiles it inside a Debian bullseye root (glibc 2.31,
#   made by scripts/debroot.sh and cached) against the target release's headers
#   and libgdal.so (taken from a Debian root that ships that release, or
#   --gdal-prefix), with a private static libcurl/nghttp2/OpenSSL: the zip then
#   needs only libgdal.so.<soname>, libstdc++, libgcc_s and glibc (<= 2.34),
#   which this script checks before zipping (exit 3 otherwise).
# - the host build (no --gdal): the install of this machine's CMake build; it
#   needs this system's GDAL, libcurl and OpenSSL (RUNTIME.txt lists them), so it
#   is for a container image built on the same Debian, not for a Lambda layer.
#
# Usage: build-layer.sh [--gdal RELEASE [--gdal-prefix DIR] [--arch ARCH]]
#                       [--build-dir DIR] [--output FILE] [--no-strip] [-h]
#   --gdal RELEASE   build the portable layer for GDAL RELEASE (major.minor).
#                    3.10 and 3.13 take headers and libgdal from Debian trixie
#                    and sid roots (made under $VT_ROOTS_DIR, default
#                    <repo>/build/roots); any other release needs --gdal-prefix.
#   --gdal-prefix DIR  a GDAL install of that release: DIR/include (gdal.h in it
#                    or in include/gdal/) and DIR/lib/libgdal.so (a conda env,
#                    an unpacked lambgeo layer, a GDAL built from source).
#   --arch ARCH      x86_64 (default) or arm64 (cross-built in the same root).
#   --build-dir DIR  package this existing CMake build. Its CMAKE_INSTALL_LIBDIR
#                    must be "lib" (Debian's default for /usr/local; Red Hat and
#                    Amazon Linux default to lib64: add -DCMAKE_INSTALL_LIBDIR=lib).
#                    Default: configure and build a dedicated tree
#                    <repo>/build-layer (prefix /opt, no tests) and package it.
#   --output FILE    the zip to write (default <repo>/build-layer/vsitune-layer.zip);
#                    an existing file is replaced.
#   --no-strip       keep debug symbols (the default strips: layers count size).
#   The portable layer's default output is
#   <repo>/build/layer/vsitune-layer-gdal<RELEASE>-<ARCH>.zip.
# Exit status: 0 ok, 2 bad usage or a missing tool/build, 3 the staged install
# does not have the layer layout (or, portable, an ELF file needs more than
# Lambda has), 1 anything else (build, zip, a root that cannot be made), 4 the
# Debian mirror does not serve a root the build needs (a "SKIPPED:" line says why).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD_DIR=
OUTPUT=
STRIP=--strip
GDAL_RELEASE='' GDAL_PREFIX='' ARCH=x86_64

die() { echo "build-layer: $2" >&2; exit "$1"; }

usage() { sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case $1 in
        --build-dir) [ $# -ge 2 ] || die 2 "--build-dir needs a directory"
                     BUILD_DIR=$2; shift 2 ;;
        --output)    [ $# -ge 2 ] || die 2 "--output needs a file name"
                     OUTPUT=$2; shift 2 ;;
        --no-strip)  STRIP=; shift ;;
        --gdal)      [ $# -ge 2 ] || die 2 "--gdal needs a GDAL release (3.10, 3.13)"
                     GDAL_RELEASE=$2; shift 2 ;;
        --gdal-prefix) [ $# -ge 2 ] || die 2 "--gdal-prefix needs a directory"
                     GDAL_PREFIX=$2; shift 2 ;;
        --arch)      [ $# -ge 2 ] || die 2 "--arch needs x86_64 or arm64"
                     ARCH=$2; shift 2 ;;
        -h|--help)   usage; exit 0 ;;
        *)           die 2 "unknown argument '$1' (valid: --gdal RELEASE, --gdal-prefix DIR, --arch ARCH, --build-dir DIR, --output FILE, --no-strip, --help)" ;;
    esac
done
case $ARCH in x86_64|arm64) ;; *) die 2 "--arch must be x86_64 or arm64 (got '$ARCH')" ;; esac
case $GDAL_RELEASE in
    '') [ -z "$GDAL_PREFIX" ] && [ "$ARCH" = x86_64 ] ||
            die 2 "--gdal-prefix and --arch go with --gdal RELEASE" ;;
    [0-9]*.[0-9]*) [ -z "$BUILD_DIR" ] || die 2 "--build-dir is the host build: not with --gdal" ;;
    *) die 2 "--gdal needs a major.minor release such as 3.10 (got '$GDAL_RELEASE')" ;;
esac
[ -n "$OUTPUT" ] || if [ -n "$GDAL_RELEASE" ]; then
    OUTPUT=$ROOT/build/layer/vsitune-layer-gdal$GDAL_RELEASE-$ARCH.zip
else
    OUTPUT=$ROOT/build-layer/vsitune-layer.zip
fi

for tool in cmake zip readelf; do
    command -v "$tool" >/dev/null 2>&1 ||
        die 2 "'$tool' not found (Debian: apt-get install cmake zip binutils)"
done
case $OUTPUT in
    *.zip) ;;
    *) die 2 "--output must name a .zip file (got '$OUTPUT')" ;;
esac

# The staging tree is ours alone; removed on every exit.
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/vsitune-layer.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
OPT=$STAGE/opt

if [ -n "$GDAL_RELEASE" ]; then
    # shellcheck source=packaging/lambda/portable.sh
    . "$ROOT/packaging/lambda/portable.sh"
    portable_build   # -> $OPT/lib/gdalplugins/gdal_vsitune.so, $OPT/bin/tunerd
    install -m 0755 "$ROOT/tunerd/lambda-exec-wrapper" "$OPT/bin/"
    mkdir -p "$OPT/share/vsitune/profiles" "$OPT/share/vsitune/python"
    install -m 0644 "$ROOT"/profiles/*.profile "$OPT/share/vsitune/profiles/"
    install -m 0644 "$ROOT/tunerd/python/tunerd_plan.py" "$OPT/share/vsitune/python/"
else
    if [ -z "$BUILD_DIR" ]; then
        BUILD_DIR=$ROOT/build-layer/build
        cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
              -DCMAKE_INSTALL_PREFIX=/opt -DCMAKE_INSTALL_LIBDIR=lib \
              -DVT_BUILD_TESTS=OFF >/dev/null
        cmake --build "$BUILD_DIR" -j"$(nproc)"
    fi
    [ -f "$BUILD_DIR/CMakeCache.txt" ] ||
        die 2 "'$BUILD_DIR' is not a CMake build directory (no CMakeCache.txt)"
    [ -f "$BUILD_DIR/vsiplugin/gdal_vsitune.so" ] && [ -x "$BUILD_DIR/tunerd/tunerd" ] ||
        die 2 "'$BUILD_DIR' has no built gdal_vsitune.so and tunerd (run: cmake --build $BUILD_DIR)"

    # shellcheck disable=SC2086  # STRIP is empty or one word
    DESTDIR=$STAGE cmake --install "$BUILD_DIR" --prefix /opt $STRIP >/dev/null
    rm -rf "$OPT/share/doc"   # documentation is not a runtime file
    # Lambda has no /dev/shm, so no shared cache: its segment watcher is not shipped.
    rm -f "$OPT/lib/gdalplugins/vsitune-shmwatch"
fi

for f in lib/gdalplugins/gdal_vsitune.so bin/tunerd bin/lambda-exec-wrapper \
         share/vsitune/profiles/lambda.profile share/vsitune/profiles/host.profile; do
    [ -f "$OPT/$f" ] || die 3 "the install has no /opt/$f: reconfigure $BUILD_DIR with \
-DCMAKE_INSTALL_LIBDIR=lib (found: $(cd "$OPT" && find . -type f | sort | tr '\n' ' '))"
done
for f in bin/tunerd bin/lambda-exec-wrapper; do
    [ -x "$OPT/$f" ] || die 3 "/opt/$f is not executable"
done
extra=$(cd "$OPT" && find . -type f ! -path './lib/gdalplugins/gdal_vsitune.so' \
        ! -path './bin/tunerd' ! -path './bin/lambda-exec-wrapper' \
        ! -path './share/vsitune/profiles/*.profile' \
        ! -path './share/vsitune/python/tunerd_plan.py' \
        ! -path './share/vsitune/README.txt' | sort)
[ -z "$extra" ] || die 3 "unexpected files in the install, refusing to ship them: $extra"

# What the function's runtime must provide: read from the ELF files themselves.
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u | tr '\n' ' '; }
versions() {  # the highest version asked of each symbol set: GLIBC_2.34 ...
    readelf -V "$1" | sed -n 's/.*Name: \([A-Za-z][A-Za-z_+]*_[0-9][0-9.]*\) .*/\1/p' |
        sed -E 's/^(.*)_([0-9][0-9.]*)$/\1 \2/' | sort -k1,1 -k2,2V |
        awk '{ best[$1] = $2 } END { for (n in best) print n "_" best[n] }' | sort | tr '\n' ' '
}
if [ -n "$GDAL_RELEASE" ]; then
    gdal_version=$GDAL_VERSION_BUILT
    built_on="a Debian 11 (bullseye, glibc 2.31) root, for $ARCH"
    curl_line="libcurl 7.88.1 (Debian bookworm's source), nghttp2 and OpenSSL are inside the plugin (static, hidden)."
else
    gdal_version=$(sed -n 's/^GDAL_VERSION:INTERNAL=//p; s/^GDAL_VERSION:STRING=//p' \
                   "$BUILD_DIR/CMakeCache.txt" | head -n 1)
    [ -n "$gdal_version" ] || gdal_version=$(pkg-config --modversion gdal 2>/dev/null || echo unknown)
    built_on="$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-unknown}"), $(uname -m)"
    curl_line="libcurl must be the OpenSSL flavour (CURL_OPENSSL_4 symbols) and built with nghttp2 for HTTP/2."
fi
cat > "$OPT/share/vsitune/RUNTIME.txt" <<EOF
vsitune Lambda layer: what the function's runtime must provide (not in this layer).
Built on: $built_on
Built against GDAL: $gdal_version (the plugin refuses any other major.minor and stays inactive)
lib/gdalplugins/gdal_vsitune.so needs: $(needed "$OPT/lib/gdalplugins/gdal_vsitune.so")
  highest symbol versions: $(versions "$OPT/lib/gdalplugins/gdal_vsitune.so")
bin/tunerd needs: $(needed "$OPT/bin/tunerd")
  highest symbol versions: $(versions "$OPT/bin/tunerd")
$curl_line
Set GDAL_DRIVER_PATH=/opt/lib/gdalplugins (tunerd's lambda profile does) or
AWS_LAMBDA_EXEC_WRAPPER=/opt/bin/lambda-exec-wrapper.
EOF
[ -z "$GDAL_RELEASE" ] || portable_readme "$OPT/share/vsitune/README.txt"

mkdir -p "$(dirname "$OUTPUT")"
OUTPUT=$(cd "$(dirname "$OUTPUT")" && pwd)/$(basename "$OUTPUT")
rm -f "$OUTPUT"
# -X: no extra uid/gid fields; -y: keep symlinks as links; modes are kept.
(cd "$OPT" && zip -q -r -X -y "$OUTPUT" bin lib share) || die 1 "zip failed"
echo "build-layer: wrote $OUTPUT ($(stat -c %s "$OUTPUT") bytes); runtime needs: $(needed "$OPT/lib/gdalplugins/gdal_vsitune.so")"
