#!/usr/bin/env bash
# tunerd_bench.sh: how long one `tunerd profile` takes, process start included.
#
# Runs each command N times (default 1000) back to back and prints the mean
# wall time per run, as processes and in process (tunerd_bench.c); the target is "well under 10 ms" (issue 5). A second
# line times `true` the same way, so the cost of fork+exec on this machine
# can be subtracted by eye. Usage: bench/tunerd_bench.sh [N] [BUILD_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${1:-1000}
BUILD=${2:-$ROOT/build}
TUNERD=$BUILD/tunerd/tunerd
case $N in ''|*[!0-9]*|0) echo "tunerd_bench: N must be a positive whole number, got '$N'" >&2; exit 2;; esac
[ -x "$TUNERD" ] || { echo "tunerd_bench: $TUNERD not built (cmake --build build --target tunerd)" >&2; exit 2; }
export TUNERD_PROFILES_DIR=$ROOT/profiles

time_runs() { # label, command...
    local label=$1; shift
    "$@" >/dev/null || { echo "tunerd_bench: '$*' failed" >&2; exit 1; }
    local t0 t1 i
    t0=$(date +%s%N)
    for ((i = 0; i < N; i++)); do "$@" >/dev/null; done
    t1=$(date +%s%N)
    awk -v ns=$((t1 - t0)) -v n="$N" -v l="$label" \
        'BEGIN { printf "%-44s %5d runs  %7.3f ms/run\n", l, n, ns / n / 1e6 }'
}

# In process: the harness links the same tunerdcore the binary uses.
HARNESS=$BUILD/tunerd_bench_inproc
cc -std=c11 -O2 -Wall -Wextra -I"$ROOT/tunerd" -o "$HARNESS" "$ROOT/bench/tunerd_bench.c" \
    "$BUILD/tunerd/libtunerdcore.a" -lm
echo "tunerd_bench: $(nproc) cores, $(uname -r), $(date -u +%FT%TZ)"
time_runs "tunerd profile --memory 10240 --format json" "$TUNERD" profile --memory 10240 --format json
time_runs "tunerd profile (detect, host, env)" "$TUNERD" profile
time_runs "tunerd detect" "$TUNERD" detect
time_runs "true (process start baseline)" /bin/true
"$HARNESS" "$N" 2>&1
