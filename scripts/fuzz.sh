#!/usr/bin/env bash
# fuzz.sh: build the libFuzzer targets of tests/fuzz (clang, ASan+UBSan) and run each
# for a bounded time on its committed corpus (tests/fuzz/corpus/<name>); new inputs
# go to a scratch copy, never into the repository. Exit non-zero on any crash.
# Environment: VT_FUZZ_SECONDS (per target, default 20), BUILD_DIR.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${BUILD_DIR:-$ROOT/build}/fuzz
SECS=${VT_FUZZ_SECONDS:-20}
CC=${VT_FUZZ_CC:-clang}
command -v "$CC" >/dev/null || { echo "fuzz: $CC not installed (scripts/setup.sh installs it)" >&2; exit 1; }
mkdir -p "$OUT"
FLAGS=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -D_GNU_SOURCE -I"$ROOT/vsiplugin")
declare -A SRC=(
  [content_range]="$ROOT/vsiplugin/engine_retry.c"
  [retry_after]="$ROOT/vsiplugin/engine_retry.c"
  [s3_error]="$ROOT/vsiplugin/xmlscan.c"
)
for name in content_range retry_after s3_error; do
  "$CC" "${FLAGS[@]}" -o "$OUT/fuzz_$name" "$ROOT/tests/fuzz/fuzz_$name.c" ${SRC[$name]} -lm
  work="$OUT/corpus-$name"
  rm -rf "$work"; mkdir -p "$work"
  cp "$ROOT/tests/fuzz/corpus/$name/"* "$work/"
  echo "== fuzz $name (${SECS} s)"
  "$OUT/fuzz_$name" -max_total_time="$SECS" -max_len=4096 -print_final_stats=0 \
    -artifact_prefix="$OUT/crash-$name-" "$work" 2>"$OUT/fuzz_$name.log" || {
      tail -40 "$OUT/fuzz_$name.log" >&2; echo "fuzz: $name found a crash" >&2; exit 1; }
  grep -E "^#[0-9]+.*DONE" "$OUT/fuzz_$name.log" | tail -1 || true
done
echo "fuzz: every target ran ${SECS} s without a crash"
