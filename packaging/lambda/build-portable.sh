#!/usr/bin/env bash
# build-portable.sh: compile gdal_vsitune.so and tunerd so that they load on any
# glibc >= 2.31 (Amazon Linux 2023 has 2.34) next to a GDAL of one release.
# build-layer.sh --gdal runs it inside a Debian bullseye root (gcc 10, glibc
# 2.31); it is not meant to be run on a newer system (the point is the old glibc).
#
# Why not CMake: bullseye's cmake (3.18) is older than the project's minimum, and
# this build differs from the normal one in exactly what it links, which is
# clearer spelled out here than hidden in a preset:
# - libgdal: the target release's own libgdal.so (copied from a system that has
#   it), so the plugin gets NEEDED libgdal.so.<soname of that release> and
#   --no-undefined proves every GDAL symbol it uses exists in that release.
#   NEEDED (rather than leaving the symbols undefined) because Python loads
#   rasterio's and osgeo's extension modules RTLD_LOCAL: their libgdal is not in
#   the global scope a dlopen'd plugin resolves against, so an undefined-symbol
#   plugin fails to load under rasterio; a NEEDED entry finds the libgdal already
#   loaded by its soname.
# - libcurl, nghttp2, OpenSSL, zlib: static, private copies (curl and nghttp2
#   built from Debian's source packages by this script, since Debian's
#   libnghttp2.a is not position-independent; OpenSSL and zlib the root's .a
#   files), hidden by -Wl,--exclude-libs,ALL and a version script exporting only
#   GDALRegister_vsitune: they cannot meet the GDAL layer's own libcurl/OpenSSL.
#   curl is built without a CA bundle path: the plugin finds one at run time
#   (engine.c: GDAL's options first, then the well-known files of Debian and
#   Amazon Linux).
#
# Usage (inside the root): build-portable.sh SRC GDAL_PREFIX DEPS OUT [ARCH]
#   SRC          the vsitune tree
#   GDAL_PREFIX  include/ (gdal.h directly or in include/gdal/) and lib/libgdal.so
#   DEPS         holds the unpacked curl-*/ and nghttp2-*/ source trees (each
#                built once into its _vt-ARCH folder and reused)
#   OUT          receives lib/gdalplugins/gdal_vsitune.so and bin/tunerd
#   ARCH         x86_64 (default) or aarch64 (cross-built with aarch64-linux-gnu-gcc)
set -euo pipefail
[ $# -ge 4 ] || { sed -n '/^# Usage/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
SRC=$1 GDAL=$2 DEPS=$3 OUT=$4 ARCH=${5:-x86_64}
case $ARCH in
  x86_64)  HOST=x86_64-linux-gnu ;;
  aarch64) HOST=aarch64-linux-gnu ;;
  *) echo "build-portable: unknown ARCH '$ARCH' (x86_64, aarch64)" >&2; exit 2 ;;
esac
CC=$HOST-gcc CXX=$HOST-g++
SYSLIB=/usr/lib/$HOST
JOBS=$(nproc)

GDAL_INC=$GDAL/include
[ -f "$GDAL_INC/gdal/gdal.h" ] && GDAL_INC=$GDAL_INC/gdal
[ -f "$GDAL_INC/gdal.h" ] && [ -e "$GDAL/lib/libgdal.so" ] ||
  { echo "build-portable: $GDAL has no include/gdal.h or lib/libgdal.so" >&2; exit 2; }

# autotools_lib NAME SUBDIR CONFIGURE-ARGS...: DEPS/NAME-*/ configured for $HOST into
# its _vt-$ARCH prefix, SUBDIR (the library's folder) built and installed once
# (again when the arguments change: prefix/.done holds them).
autotools_lib() {
  local name=$1 sub=$2 src b prefix
  shift 2
  src=$(ls -d "$DEPS/$name"-*/ | head -n 1) && src=${src%/}
  prefix=$src/_vt-$ARCH b=$src/_build-$ARCH
  if [ "$(cat "$prefix/.done" 2>/dev/null)" != "$*" ]; then
    rm -rf "$prefix" "$b" && mkdir -p "$b"
    (cd "$src" && { [ -x configure ] || autoreconf -fi >/dev/null; })
    (cd "$b" &&
     CC=$CC CFLAGS="-O2 -fPIC -fvisibility=hidden" PKG_CONFIG_LIBDIR=$SYSLIB/pkgconfig \
       ../configure --host="$HOST" --prefix="$prefix" --disable-shared --enable-static \
       --with-pic "$@" >configure.log 2>&1 || { tail -n 30 configure.log >&2; exit 1; }
     make -j"$JOBS" -C "$sub" >make.log 2>&1 || { tail -n 30 make.log >&2; exit 1; }
     make -C "$sub" install >/dev/null
     [ "$sub" = lib ] && [ ! -d include ] || make -C include install >/dev/null)
    printf '%s\n' "$*" >"$prefix/.done"
  fi
  echo "$prefix"
}
# nghttp2: the library only
NGHTTP2=$(autotools_lib nghttp2 lib --enable-lib-only)
# libcurl: HTTP(S) only, OpenSSL + nghttp2 + zlib, no CA path baked in
CURL=$(autotools_lib curl lib --with-openssl --with-nghttp2="$NGHTTP2" --with-zlib \
  --enable-symbol-hiding --without-ca-bundle --without-ca-path --without-ca-fallback \
  --without-libidn2 --without-librtmp --without-libssh2 --without-libssh \
  --without-libpsl --without-brotli --without-zstd --without-gssapi \
  --disable-ldap --disable-ldaps --disable-rtsp --disable-dict --disable-telnet \
  --disable-tftp --disable-pop3 --disable-imap --disable-smtp --disable-gopher \
  --disable-mqtt --disable-manual --disable-ntlm --disable-docs)

VERSION=$(sed -n 's/^project(vsitune VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
OBJ=$OUT/obj
rm -rf "$OBJ" && mkdir -p "$OBJ" "$OUT/lib/gdalplugins" "$OUT/bin"
CFLAGS=(-std=c11 -O2 -g -fPIC -fvisibility=hidden -Wall -D_GNU_SOURCE "-DVT_VERSION=\"$VERSION\"")
CXXFLAGS=(-std=c++17 -O2 -g -fPIC -fvisibility=hidden -fvisibility-inlines-hidden -Wall
          -D_GNU_SOURCE "-DVT_VERSION=\"$VERSION\"")
INC=(-I"$SRC/vsiplugin" -I"$SRC/common" -I"$GDAL_INC" -I"$CURL/include")

# -- the plugin: every .c under vsiplugin/ and common/ (as CMake's vtcore +
# gdal/plugin.c; not the segment watcher, a program), and every .cpp (the
# C++ ABI side: takeover, its vtable and streaming parts, the driver)
objs=()
for f in $(find "$SRC/vsiplugin" "$SRC/common" -name '*.c' ! -path '*/shmwatch/*' | sort); do
  o=$OBJ/$(basename "$f").o
  $CC "${CFLAGS[@]}" "${INC[@]}" -c "$f" -o "$o" &
  objs+=("$o")
  [ "$(jobs -rp | wc -l)" -lt "$JOBS" ] || wait -n
done
for f in $(find "$SRC/vsiplugin" -name '*.cpp' | sort); do
  o=$OBJ/$(basename "$f").o
  $CXX "${CXXFLAGS[@]}" "${INC[@]}" -c "$f" -o "$o" &
  objs+=("$o")
done
wait_all() { local p rc=0; for p in $(jobs -rp); do wait "$p" || rc=1; done; return "$rc"; }
wait_all
for o in "${objs[@]}"; do [ -f "$o" ] || { echo "build-portable: $o not built" >&2; exit 1; }; done
printf '{ global: GDALRegister_vsitune; local: *; };\n' >"$OBJ/exports.map"
# -lpthread/-ldl/-lrt: glibc 2.31 keeps these in their own libraries; glibc >= 2.34
# still ships libpthread.so.0, libdl.so.2, librt.so.1 (empty, for binaries like these)
# and defines the old symbol versions in libc itself.
$CXX -shared -o "$OUT/lib/gdalplugins/gdal_vsitune.so" "${objs[@]}" \
  -Wl,--no-undefined -Wl,--exclude-libs,ALL -Wl,--version-script="$OBJ/exports.map" \
  -Wl,--as-needed -L"$GDAL/lib" -lgdal \
  "$CURL/lib/libcurl.a" "$NGHTTP2/lib/libnghttp2.a" "$SYSLIB/libssl.a" "$SYSLIB/libcrypto.a" \
  "$SYSLIB/libz.a" -lpthread -ldl -lm

# -- tunerd: C only, libm (as tunerd/CMakeLists.txt, prefix /opt, libdir lib)
$CC "${CFLAGS[@]}" -I"$SRC/tunerd" -I"$SRC/vsiplugin" -I"$SRC/common" \
  -DTUNERD_PROFILES_DIR=\"/opt/share/vsitune/profiles\" \
  -DTUNERD_PLUGIN_DIR=\"/opt/lib/gdalplugins\" \
  -DTUNERD_PLUGIN_RELDIR=\"../lib/gdalplugins\" \
  -o "$OUT/bin/tunerd" "$SRC"/tunerd/*.c "$SRC"/common/*.c -lm
rm -rf "$OBJ"
echo "build-portable: built $OUT (GDAL headers $(sed -n 's/^# *define GDAL_RELEASE_NAME *"\(.*\)"/\1/p' "$GDAL_INC/gdal_version.h"), $ARCH)"
