#!/usr/bin/env bash
# fuzz.sh: build the libFuzzer targets of tests/fuzz (clang, ASan+UBSan) and run each
# for a bounded time on its committed corpus (tests/fuzz/corpus/<name>); new inputs
# go to a scratch copy, never into the repository. Exit non-zero on any crash.
# The plugin's and tunerd's core libraries are built once with the same
# instrumentation (CMake, clang, VT_BUILD_TESTS=OFF) so every target calls the code
# that ships, and the fuzzer sees its coverage.
# Environment: VT_FUZZ_SECONDS (per target, default 10), VT_FUZZ_TARGETS (names,
# default all), BUILD_DIR.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${BUILD_DIR:-$ROOT/build}/fuzz
SECS=${VT_FUZZ_SECONDS:-10}
CC=${VT_FUZZ_CC:-clang}
command -v "$CC" >/dev/null || { echo "fuzz: $CC not installed (scripts/setup.sh installs it)" >&2; exit 1; }
mkdir -p "$OUT"
SAN=(-fsanitize=address,undefined -fno-sanitize-recover=undefined)
LIBS_DIR="$OUT/cmake"
cmake -S "$ROOT" -B "$LIBS_DIR" -DCMAKE_C_COMPILER="$CC" -DCMAKE_BUILD_TYPE=None \
  -DVT_BUILD_TESTS=OFF -DCMAKE_C_FLAGS="-g -O1 -fsanitize=fuzzer-no-link ${SAN[*]}" >/dev/null
cmake --build "$LIBS_DIR" -j"$(nproc)" --target vtcore tunerdcore >/dev/null
# shellcheck disable=SC2207
SYSLIBS=($(pkg-config --libs gdal libcurl libcrypto) -lpthread -lm)
declare -A LIB=(
  [content_range]=vsiplugin/libvtcore.a [curl_headers]=vsiplugin/libvtcore.a [retry_after]=vsiplugin/libvtcore.a
  [s3_error]=vsiplugin/libvtcore.a [creds_ini]=vsiplugin/libvtcore.a
  [creds_doc]=vsiplugin/libvtcore.a [aws_profile]=vsiplugin/libvtcore.a
  [options]=vsiplugin/libvtcore.a
  [tunerd_args]=tunerd/libtunerdcore.a [tunerd_profile]=tunerd/libtunerdcore.a
  [shm_segment]=vsiplugin/libvtcore.a [tiffmap]=vsiplugin/libvtcore.a
)
TARGETS=${VT_FUZZ_TARGETS:-content_range curl_headers retry_after s3_error creds_ini creds_doc aws_profile options tunerd_args tunerd_profile shm_segment tiffmap}
for name in $TARGETS; do
  [ -n "${LIB[$name]:-}" ] || { echo "fuzz: unknown target $name" >&2; exit 1; }
  "$CC" -g -O1 -fsanitize=fuzzer "${SAN[@]}" -D_GNU_SOURCE -I"$ROOT/vsiplugin" -I"$ROOT/common" -I"$ROOT/tunerd" \
    $(pkg-config --cflags gdal) -o "$OUT/fuzz_$name" "$ROOT/tests/fuzz/fuzz_$name.c" \
    "$LIBS_DIR/${LIB[$name]}" "${SYSLIBS[@]}"
  work="$OUT/corpus-$name"
  rm -rf "$work"; mkdir -p "$work"
  cp "$ROOT/tests/fuzz/corpus/$name/"* "$work/"
  echo "== fuzz $name (${SECS} s)"
  "$OUT/fuzz_$name" -max_total_time="$SECS" -max_len=4096 -timeout=30 -print_final_stats=0 \
    -artifact_prefix="$OUT/crash-$name-" "$work" 2>"$OUT/fuzz_$name.log" || {
      tail -40 "$OUT/fuzz_$name.log" >&2; echo "fuzz: $name found a crash" >&2; exit 1; }
  grep -E "^#[0-9]+.*DONE" "$OUT/fuzz_$name.log" | tail -1 || true
done
echo "fuzz: every target ran ${SECS} s without a crash"
