#!/usr/bin/env bash
# test.sh: set everything up and run the whole test suite, the C unit tests (ctest)
# and the integration tests against the S3 lab (pytest, Debian's /usr/bin/python3),
# on every GDAL vsitune supports:
#
#   host    GDAL 3.6   this Debian 12 machine (scripts/setup.sh installs and builds)
#   trixie  GDAL 3.10  a minimal Debian 13 root (scripts/debroot.sh), built and run inside
#   sid     GDAL 3.13  a minimal Debian sid root, built and run inside
#
# Inside a root the plugin is built from this tree (bound at /vt/src) into
# $BUILD_DIR/in-<suite>, and the tests run there unchanged: the lab (node, nghttpx)
# and stock GDAL, the oracle, are the root's own. The roots run at the same time as
# this machine's suite (their output in $BUILD_DIR/phase-<suite>/log, printed when
# all are done). A per-GDAL summary ends the run.
# Exit status: 0 when every GDAL passed (a root whose suite the Debian mirror does
# not serve is SKIPPED, loudly, and does not fail the run); 1 otherwise: a root
# that cannot be made for another reason, a build failure or a test failure.
#
# Environment: VT_TEST_GDALS (which ones to run; default "host trixie sid"),
# VT_TEST_PARALLEL (1, the default: every GDAL at once; 0: one after another),
# BUILD_DIR (default ./build), VT_ROOTS_DIR (default $BUILD_DIR/roots: the roots are
# made once, about 5 minutes each, and reused).
# Extra arguments go to every pytest run. `test.sh --here [pytest args]` runs the
# suite on this system only (what each root runs). The fuzzers (scripts/fuzz.sh)
# run on this machine only: they exercise vsitune's own parsers, not GDAL.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-$ROOT/build}

# The suite on this system (built already): ctest, pytest. Results also as JUnit
# XML in $BUILD_DIR/results/ for the summary.
here() {
  mkdir -p "$BUILD_DIR/results"
  rm -f "$BUILD_DIR/results/"*.xml
  local rc=0
  echo "== unit tests (ctest), $(gdal-config --version 2>/dev/null || echo '?')"
  (cd "$BUILD_DIR" && ctest --output-on-failure -j2 --output-junit "$BUILD_DIR/results/ctest.xml") || rc=1
  if [ "${VT_FUZZ:-1}" = 1 ]; then
    echo "== fuzzing (libFuzzer, bounded, committed corpus: scripts/fuzz.sh)"
    VT_FUZZ_SECONDS=${VT_FUZZ_SECONDS:-10} "$ROOT/scripts/fuzz.sh" || rc=1
  fi
  echo "== integration tests (pytest, against the lab)"
  export VT_BUILD_DIR="$BUILD_DIR"
  cd "$ROOT"
  /usr/bin/python3 -m pytest -p no:cacheprovider -q -ra \
    --junitxml="$BUILD_DIR/results/pytest.xml" tests/integration "$@" || rc=1
  return "$rc"
}

if [ "${1:-}" = --here ]; then
  shift
  "$ROOT/scripts/setup.sh"
  here "$@"
  exit $?
fi

# This machine first: its packages (debootstrap among them), the lab's npm packages
# (which the roots use too), its build.
"$ROOT/scripts/setup.sh"

GDALS=${VT_TEST_GDALS:-host trixie sid}
ROOTS_DIR=${VT_ROOTS_DIR:-$BUILD_DIR/roots}
# What a root needs to build and test vsitune: scripts/setup.sh's Debian packages less
# the host-only ones (npm: the lab's packages come from the host's tests/lab/node_modules,
# visible inside with the rest of the tree).
ROOT_DEBS=(
  build-essential cmake pkg-config git ca-certificates curl
  libgdal-dev gdal-bin python3-gdal
  libcurl4-openssl-dev libnghttp2-dev libssl-dev
  nghttp2-proxy nghttp2-client openssl
  libcmocka-dev
  python3-rasterio python3-numpy python3-pytest python3-yaml python3-matplotlib
  python3-distributed python3-rioxarray uvicorn python3-fastapi python3-uvicorn
  nodejs
  valgrind procps time util-linux
  zip unzip
  prometheus jq
)

# counts NSKIPPED NBROKEN DIR... -> one line per results folder "ctest: P passed, F failed, S skipped;
# pytest: ...", then a last line with the totals over all of them (JUnit XML files)
counts() {
  /usr/bin/python3 - "$@" <<'PYEOF'
import sys, xml.etree.ElementTree as ET
from pathlib import Path
tot = [0, 0, int(sys.argv[1])]  # passed, failed, skipped; argv[1]: GDALs skipped whole
tot[1] = int(sys.argv[2])  # GDALs that failed before their tests ran (a build failure)
for d in map(Path, sys.argv[3:]):
    out = []
    for name, label in (("ctest.xml", "ctest"), ("pytest.xml", "pytest")):
        f = d / name
        if not f.is_file():
            out.append(f"{label}: no results")
            continue
        root = ET.parse(f).getroot()
        suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
        t = sum(int(s.get("tests", 0)) for s in suites)
        fl = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
        sk = sum(int(s.get("skipped", 0) or 0) + int(s.get("disabled", 0) or 0) for s in suites)
        out.append(f"{label}: {t - fl - sk} passed, {fl} failed, {sk} skipped")
        for i, v in enumerate((t - fl - sk, fl, sk)):
            tot[i] += v
    print("; ".join(out))
print(f"{tot[0]} passed, {tot[1]} failed, {tot[2]} skipped")
PYEOF
}

# What each GDAL's phase leaves in $BUILD_DIR/phase-<g>/: status (passed, FAILED or
# SKIPPED), seconds, gdal (its version), results (the JUnit XML folder), and for a
# root its whole output (log). A root's phase may run in the background.
phase_dir() { echo "$BUILD_DIR/phase-$1"; }
phase_set() { printf '%s\n' "$3" >"$(phase_dir "$1")/$2"; }
phase_get() { cat "$(phase_dir "$1")/$2" 2>/dev/null || true; }

# Run "$@" in the background and wait for it, so that a TERM to this shell (the
# trap below) can end it at once instead of after it finishes.
CHILD=
run_child() {
  local rc=0
  "$@" &
  CHILD=$!
  wait "$CHILD" || rc=$?
  CHILD=
  return "$rc"
}

host_phase() {
  local t0=$SECONDS
  echo "===== GDAL on this machine ($(. /etc/os-release && echo "$PRETTY_NAME"))"
  if here "$@"; then phase_set host status passed; else phase_set host status FAILED; fi
  phase_set host gdal "$(gdal-config --version 2>/dev/null || echo '?')"
  phase_set host results "$BUILD_DIR/results"
  phase_set host seconds $((SECONDS - t0))
}

# root_phase SUITE [pytest args]: make (or check) the root, then build and run the
# suite inside it.
root_phase() {
  local g=$1 t0=$SECONDS rc=0
  shift
  local rdir=$ROOTS_DIR/$g bdir=$BUILD_DIR/in-$g
  echo "===== GDAL of Debian $g (a root made by scripts/debroot.sh)"
  run_child "$ROOT/scripts/debroot.sh" "$g" "$rdir" "${ROOT_DEBS[@]}" \
    >"$ROOTS_DIR/$g.prepare.log" 2>&1 || rc=$?
  grep -v "^$rdir\$" "$ROOTS_DIR/$g.prepare.log" || true
  if [ "$rc" = 3 ]; then
    phase_set "$g" status SKIPPED
    phase_set "$g" why "$(grep -m1 '^SKIPPED: ' "$ROOTS_DIR/$g.prepare.log" || echo 'SKIPPED: the mirror')"
    echo "SKIPPED: GDAL of Debian $g: the Debian mirror does not serve it (message above)"
  elif [ "$rc" != 0 ]; then
    phase_set "$g" status FAILED
    echo "FAILED: GDAL of Debian $g: the root could not be made (message above)"
  else
    mkdir -p "$bdir"
    rm -f "$bdir/results/"*.xml  # a failed build must not show an older run's results
    local binds=(--bind "$ROOT:/vt/src" --bind "$bdir:/vt/build") sh
    # ../shared (test data: beside the clone, or two levels up from a git worktree
    # under <clone's parent>/wt/) where the tests look for it: beside the tree
    for sh in "$ROOT/../shared" "$ROOT/../../shared"; do
      if [ -d "$sh" ]; then binds+=(--bind "$(cd "$sh" && pwd):/vt/shared:ro"); break; fi
    done
    if run_child "$ROOT/scripts/debroot.sh" --run "$rdir" "${binds[@]}" -- \
         BUILD_DIR=/vt/build VT_SKIP_APT=1 VT_FIXTURE_DIR=/vt/build/fixtures VT_FUZZ=0 \
         /bin/bash /vt/src/scripts/test.sh --here "$@"; then
      phase_set "$g" status passed
    else
      phase_set "$g" status FAILED
    fi
    phase_set "$g" gdal "$("$ROOT/scripts/debroot.sh" --run "$rdir" -- gdal-config --version 2>/dev/null || echo '?')"
    phase_set "$g" results "$bdir/results"
  fi
  phase_set "$g" seconds $((SECONDS - t0))
}

# root_job SUITE [pytest args]: root_phase with its output in the phase's log only
# (it runs in the background, beside the other GDALs).
root_job() {
  # shellcheck disable=SC2317
  trap '[ -z "$CHILD" ] || kill "$CHILD" 2>/dev/null; exit 143' TERM
  root_phase "$@" >"$(phase_dir "$1")/log" 2>&1
}

ORDER=() ROOTS=()
mkdir -p "$ROOTS_DIR"
for g in $GDALS; do
  ORDER+=("$g")
  [ "$g" = host ] || ROOTS+=("$g")
  rm -rf "$(phase_dir "$g")"
  mkdir -p "$(phase_dir "$g")"
done

# Every GDAL at once (VT_TEST_PARALLEL=0: one after the other): the integration
# tests mostly wait on the lab's delays (two suites at once used 0.8 of a core on
# average), so the run takes about as long as the longest suite.
# The roots' output is kept in their logs and printed whole once all are done.
# Nothing of one suite meets another: each lab picks free ports, a root has its own
# PID namespace, /tmp and /dev/shm.
PARALLEL=${VT_TEST_PARALLEL:-1}
declare -A JOB
# shellcheck disable=SC2317
stop_roots() { local p; for p in "${JOB[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop_roots EXIT
if [ "$PARALLEL" = 1 ]; then
  for g in "${ROOTS[@]}"; do
    echo "===== GDAL of Debian $g: running in the background (log: $(phase_dir "$g")/log)"
    root_job "$g" "$@" &
    JOB[$g]=$!
  done
fi
if [[ " $GDALS " == *" host "* ]]; then host_phase "$@"; fi
for g in "${ROOTS[@]}"; do
  if [ "$PARALLEL" = 1 ]; then
    wait "${JOB[$g]}" || true
    unset "JOB[$g]"
    cat "$(phase_dir "$g")/log" 2>/dev/null || true
  else
    root_phase "$g" "$@"
  fi
done

echo
echo "===== summary (per GDAL)"
rc=0
dirs=()
nskip=0 nbroken=0
for g in "${ORDER[@]}"; do
  st=$(phase_get "$g" status) res='' rd=$(phase_get "$g" results)
  [ -n "$st" ] || st=FAILED  # the phase did not end (killed)
  if [ -n "$rd" ] && [ -d "$rd" ]; then
    res=$(counts 0 0 "$rd" | sed -n 1p)  # sed reads all: no broken pipe
    dirs+=("$rd")
  fi
  secs=$(phase_get "$g" seconds)
  printf '%-7s GDAL %-7s %-8s %5d s  %s\n' "$g" "$(phase_get "$g" gdal)" "$st" \
    "${secs:-0}" "$res"
  [ "$st" = SKIPPED ] && echo "        $(phase_get "$g" why)"
  [ "$st" = FAILED ] && rc=1
  [ "$st" = SKIPPED ] && nskip=$((nskip + 1))
  [ "$st" = FAILED ] && [ ! -f "${rd:-/nonexistent}/pytest.xml" ] && nbroken=$((nbroken + 1))
done
echo "total time $SECONDS s ($([ "$PARALLEL" = 1 ] && echo "every GDAL at once" || echo "one GDAL after another"))"
# The closing line: every GDAL's ctest and pytest counts added up.
echo "total: $(counts "$nskip" "$nbroken" "${dirs[@]}" | tail -1)"
exit "$rc"
