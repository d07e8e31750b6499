# shellcheck shell=bash
# portable.sh: the host side of build-layer.sh --gdal (sourced by it, not run):
# makes the roots the portable build needs (scripts/debroot.sh, cached under
# $VT_ROOTS_DIR), gathers the target GDAL's headers and libgdal.so, fetches
# Debian's curl source once, runs build-portable.sh inside the bullseye root,
# and checks what every ELF file of the result needs (check_elf).
#
# Roots (all cached; debroot.sh makes each once and serialises parallel callers):
#   bullseye-build        gcc 10, glibc 2.31, static OpenSSL and zlib (+ arm64
#                         cross compiler and arm64 -dev packages for --arch arm64)
#   trixie, sid           GDAL 3.10 and 3.13 (libgdal-dev): headers + libgdal.so
#   trixie-arm64, sid-arm64  the same for arm64 (DEBROOT_ARCH=arm64: qemu-user)
# Cached build products: $VT_ROOTS_DIR/layer-src/{curl,nghttp2}-*/ (Debian's
# sources, their static builds in _vt-<arch>).
#
# Uses from build-layer.sh: ROOT, OPT, GDAL_RELEASE, GDAL_PREFIX, ARCH, STRIP, die.

ROOTS_DIR=${VT_ROOTS_DIR:-$ROOT/build/roots}
# curl from Debian bookworm (7.88.1): the oldest Debian curl with what vsitune
# uses (CURLOPT_AWS_SIGV4 7.75, CURLOPT_PREREQFUNCTION 7.80); bullseye's 7.74 is too old.
CURL_SUITE=bookworm
BUILD_DEBS=(build-essential dpkg-dev libssl-dev zlib1g-dev pkg-config
            autoconf automake libtool ca-certificates xz-utils binutils)
ARM64_DEBS=(crossbuild-essential-arm64 libssl-dev:arm64 zlib1g-dev:arm64)

# debroot SUITE DIR [PKG...]: scripts/debroot.sh, its "mirror does not serve it" exit
# (3) turned into ours (4), with its SKIPPED line passed on.
debroot() {
    local rc=0
    "$ROOT/scripts/debroot.sh" "$@" >/dev/null || rc=$?
    [ "$rc" = 0 ] && return 0
    [ "$rc" = 3 ] && exit 4
    die 1 "scripts/debroot.sh $1 $2 failed (exit $rc)"
}

# The Debian suite whose libgdal-dev is GDAL $1.
gdal_suite() {
    case $1 in
        3.10) echo trixie ;;
        3.13) echo sid ;;
        *) return 1 ;;
    esac
}

# gdal_prefix DEST: DEST/include and DEST/lib/libgdal.so of GDAL $GDAL_RELEASE for
# $ARCH, from --gdal-prefix or the Debian root that ships that release.
gdal_prefix() {
    local dest=$1 suite triplet r lib inc
    rm -rf "$dest" && mkdir -p "$dest/lib"
    if [ -n "$GDAL_PREFIX" ]; then
        inc=$GDAL_PREFIX/include lib=$GDAL_PREFIX/lib/libgdal.so
    else
        suite=$(gdal_suite "$GDAL_RELEASE") ||
            die 2 "no Debian root ships GDAL $GDAL_RELEASE: give its install with --gdal-prefix DIR"
        r=$ROOTS_DIR/$suite triplet=x86_64-linux-gnu
        if [ "$ARCH" = arm64 ]; then
            r=$ROOTS_DIR/$suite-arm64 triplet=aarch64-linux-gnu
            grep -qs '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64 ||
                die 2 "an arm64 root needs qemu-user-static with binfmt_misc enabled (/proc/sys/fs/binfmt_misc/qemu-aarch64)"
        fi
        DEBROOT_ARCH=$([ "$ARCH" = arm64 ] && echo arm64) debroot "$suite" "$r" libgdal-dev
        inc=$r/usr/include/gdal lib=$r/usr/lib/$triplet/libgdal.so
    fi
    [ -f "$inc/gdal_version.h" ] || [ -f "$inc/gdal/gdal_version.h" ] ||
        die 2 "no gdal_version.h in $inc"
    [ -e "$lib" ] || die 2 "no $lib"
    cp -a "$inc" "$dest/include"
    cp -L "$lib" "$dest/lib/libgdal.so"
    local got
    got=$(sed -n 's/^# *define GDAL_VERSION_MAJOR *\([0-9]*\).*/\1/p; s/^# *define GDAL_VERSION_MINOR *\([0-9]*\).*/.\1/p' \
          "$(version_h "$dest")" | tr -d '\n')
    [ "$got" = "$GDAL_RELEASE" ] || die 2 "the GDAL headers in $inc are $got, not $GDAL_RELEASE"
}

# version_h PREFIX: PREFIX's gdal_version.h (in include/ or include/gdal/).
version_h() {
    if [ -f "$1/include/gdal/gdal_version.h" ]; then echo "$1/include/gdal/gdal_version.h"
    else echo "$1/include/gdal_version.h"; fi
}

# The bullseye build root, with Debian bookworm's curl and nghttp2 sources in $SRCDIR.
build_root() {
    BROOT=$ROOTS_DIR/bullseye-build SRCDIR=$ROOTS_DIR/layer-src
    debroot bullseye "$BROOT" "${BUILD_DEBS[@]}"
    if [ "$ARCH" = arm64 ]; then
        "$ROOT/scripts/debroot.sh" --run "$BROOT" -- dpkg --add-architecture arm64
        debroot bullseye "$BROOT" "${ARM64_DEBS[@]}"
    fi
    mkdir -p "$SRCDIR"
    exec 8>"$SRCDIR.lock"
    flock 8
    if ! ls "$SRCDIR"/curl-*/configure.ac "$SRCDIR"/nghttp2-*/configure.ac >/dev/null 2>&1; then
        echo "build-layer: fetching Debian $CURL_SUITE's curl and nghttp2 sources (apt-get source)" >&2
        "$ROOT/scripts/debroot.sh" --run "$BROOT" --bind "$SRCDIR:/vt/layer-src" -- /bin/sh -euc '
            sed -n "s/^deb \([^ ]*\) .*/deb-src \1 $1 main/p" /etc/apt/sources.list | head -n 1 \
                >/etc/apt/sources.list.d/vt-curl-src.list
            apt-get update -q >/dev/null
            cd /vt/layer-src && apt-get source -q "curl/$1" "nghttp2/$1" >/dev/null' sh "$CURL_SUITE" ||
            die 1 "apt-get source curl/$CURL_SUITE nghttp2/$CURL_SUITE failed in $BROOT (does the mirror serve deb-src?)"
    fi
    flock -u 8
}

portable_build() {
    local gdir=$ROOTS_DIR/layer-gdal-$GDAL_RELEASE-$ARCH out
    [ -n "$GDAL_PREFIX" ] || gdal_suite "$GDAL_RELEASE" >/dev/null ||
        die 2 "no Debian root ships GDAL $GDAL_RELEASE: give its install with --gdal-prefix DIR"
    build_root
    gdal_prefix "$gdir"
    out=$STAGE/portable
    mkdir -p "$out"
    "$ROOT/scripts/debroot.sh" --run "$BROOT" --bind "$ROOT:/vt/src:ro" \
        --bind "$gdir:/vt/gdal:ro" --bind "$SRCDIR:/vt/layer-src" --bind "$out:/vt/out" -- \
        /bin/bash /vt/src/packaging/lambda/build-portable.sh /vt/src /vt/gdal \
        /vt/layer-src /vt/out "$([ "$ARCH" = arm64 ] && echo aarch64 || echo x86_64)" >&2 ||
        die 1 "the portable build failed (above)"
    mkdir -p "$OPT/lib/gdalplugins" "$OPT/bin"
    cp "$out/lib/gdalplugins/gdal_vsitune.so" "$OPT/lib/gdalplugins/"
    cp "$out/bin/tunerd" "$OPT/bin/"
    if [ -n "$STRIP" ]; then
        "$ROOT/scripts/debroot.sh" --run "$BROOT" --bind "$OPT:/vt/opt" -- \
            "$([ "$ARCH" = arm64 ] && echo aarch64-linux-gnu-strip || echo strip)" \
            --strip-unneeded /vt/opt/lib/gdalplugins/gdal_vsitune.so /vt/opt/bin/tunerd
    fi
    GDAL_VERSION_BUILT=$(sed -n 's/^# *define GDAL_RELEASE_NAME *"\(.*\)"/\1/p' "$(version_h "$gdir")")
    GDAL_SONAME=$(readelf -d "$gdir/lib/libgdal.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    check_elf "$OPT"
}

# check_elf DIR: every ELF file under DIR needs no GLIBC symbol version newer than
# 2.34 and only libraries a Lambda function with a GDAL layer has (die 3 otherwise).
# libpthread/libdl/librt: glibc 2.34 merged them into libc but still ships the files.
ELF_ALLOWED='libgdal\.so\.[0-9]+|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1'
check_elf() {
    local f bad='' v
    while IFS= read -r f; do
        head -c 4 "$f" | grep -q 'ELF' || continue
        v=$(readelf -V --wide "$f" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1)
        [ -z "$v" ] || [ "$(printf '%s\n2.34\n' "$v" | sort -V | tail -n 1)" = 2.34 ] ||
            bad="$bad ${f#"$1"/}: GLIBC_$v;"
        for n in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
            printf '%s\n' "$n" | grep -qxE "$ELF_ALLOWED" || bad="$bad ${f#"$1"/}: NEEDED $n;"
        done
    done < <(find "$1" -type f)
    [ -z "$bad" ] || die 3 "not loadable on Lambda (glibc 2.34, a GDAL layer):$bad"
}

# portable_readme FILE: the zip's README: what it is for and the environment to set.
portable_readme() {
    cat >"$1" <<EOF
vsitune Lambda layer for GDAL $GDAL_RELEASE ($GDAL_VERSION_BUILT headers), $ARCH
================================================================

What it needs: Lambda's Amazon Linux 2023 runtimes (python3.12, python3.13,
provided.al2023; glibc 2.34) and a GDAL $GDAL_RELEASE that the function already
loads: a GDAL layer (lambgeo's, /opt/lib/$GDAL_SONAME) or a GDAL of your own
image. The plugin has NEEDED $GDAL_SONAME and binds to the one already loaded;
its libcurl, nghttp2 and OpenSSL are private static copies. A GDAL of another
major.minor release leaves the plugin inactive (one warning), never half loaded.

Files (under /opt once the layer is attached):
  lib/gdalplugins/gdal_vsitune.so   the plugin (GDAL_DRIVER_PATH points here)
  bin/tunerd                        sizes the settings for the function's memory
  bin/lambda-exec-wrapper           AWS_LAMBDA_EXEC_WRAPPER: runs tunerd, then the runtime
  share/vsitune/profiles/           tunerd's profiles
  share/vsitune/python/tunerd_plan.py  applies tunerd's worker plan in Python
  share/vsitune/RUNTIME.txt         what each binary needs (read from the ELF files)

Environment of the function (either):
  AWS_LAMBDA_EXEC_WRAPPER=/opt/bin/lambda-exec-wrapper
      tunerd adds GDAL_DRIVER_PATH and the tuned GDAL/VSITUNE settings for the
      function's memory (AWS_LAMBDA_FUNCTION_MEMORY_SIZE), keeping any you set.
  GDAL_DRIVER_PATH=/opt/lib/gdalplugins
      the plugin alone, with its defaults; add what
      /opt/bin/tunerd profile --platform lambda --memory <MB>
      prints to the function's environment for the tuned settings.
If your GDAL layer sets GDAL_DRIVER_PATH itself, join both: dir1:/opt/lib/gdalplugins.
HTTPS: the plugin uses CURL_CA_BUNDLE / SSL_CERT_FILE when set, else the system
bundle (/etc/pki/tls/certs/ca-bundle.crt on Amazon Linux).
Check it is active: CPL_DEBUG=VSITUNE shows "VSITUNE" lines; gdalinfo --formats lists VSITUNE.
EOF
}
