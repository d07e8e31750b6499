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
# and stock GDAL, the oracle, are the root's own. A per-GDAL summary ends the run.
# Exit status: 0 when every GDAL passed (a root whose suite the Debian mirror does
# not serve is SKIPPED, loudly); 1 otherwise.
#
# Environment: VT_TEST_GDALS (which ones to run: "host trixie sid"; default host for now),
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

# trixie and sid join the default once the plugin builds there (issue 10)
GDALS=${VT_TEST_GDALS:-host}
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
declare -A STATUS SECS RDIRS GDALVER
ORDER=()

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

# Make (or check) the roots in the background while this machine's suite runs: it is
# mostly download and unpack time.
declare -A PREP
mkdir -p "$ROOTS_DIR"
for g in $GDALS; do
  [ "$g" = host ] && continue
  "$ROOT/scripts/debroot.sh" "$g" "$ROOTS_DIR/$g" "${ROOT_DEBS[@]}" >"$ROOTS_DIR/$g.prepare.log" 2>&1 &
  PREP[$g]=$!
done
# shellcheck disable=SC2317
stop_prep() { local p; for p in "${PREP[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop_prep EXIT

for g in $GDALS; do
  ORDER+=("$g")
  t0=$SECONDS
  if [ "$g" = host ]; then
    echo "===== GDAL on this machine ($(. /etc/os-release && echo "$PRETTY_NAME"))"
    if here "$@"; then STATUS[$g]=passed; else STATUS[$g]=FAILED; fi
    GDALVER[$g]=$(gdal-config --version 2>/dev/null || echo '?')
    RDIRS[$g]=$BUILD_DIR/results
  else
    echo "===== GDAL of Debian $g (a root made by scripts/debroot.sh)"
    rdir=$ROOTS_DIR/$g
    set +e
    wait "${PREP[$g]}"
    rc=$?
    set -e
    grep -v "^$rdir\$" "$ROOTS_DIR/$g.prepare.log" || true
    if [ "$rc" = 3 ]; then
      STATUS[$g]=SKIPPED
      echo "SKIPPED: GDAL of Debian $g: the Debian mirror does not serve it (message above)"
    elif [ "$rc" != 0 ]; then
      STATUS[$g]=FAILED
      echo "FAILED: GDAL of Debian $g: the root could not be made (message above)"
    else
      bdir=$BUILD_DIR/in-$g
      mkdir -p "$bdir"
      rm -f "$bdir/results/"*.xml  # a failed build must not show an older run's results
      binds=(--bind "$ROOT:/vt/src" --bind "$bdir:/vt/build")
      # ../shared (test data: beside the clone, or two levels up from a git worktree
      # under <clone's parent>/wt/) where the tests look for it: beside the tree
      for sh in "$ROOT/../shared" "$ROOT/../../shared"; do
        if [ -d "$sh" ]; then binds+=(--bind "$(cd "$sh" && pwd):/vt/shared:ro"); break; fi
      done
      if "$ROOT/scripts/debroot.sh" --run "$rdir" "${binds[@]}" -- \
           BUILD_DIR=/vt/build VT_SKIP_APT=1 VT_FIXTURE_DIR=/vt/build/fixtures VT_FUZZ=0 \
           /bin/bash /vt/src/scripts/test.sh --here "$@"; then
        STATUS[$g]=passed
      else
        STATUS[$g]=FAILED
      fi
      GDALVER[$g]=$("$ROOT/scripts/debroot.sh" --run "$rdir" -- gdal-config --version 2>/dev/null || echo '?')
      RDIRS[$g]=$bdir/results
    fi
  fi
  SECS[$g]=$((SECONDS - t0))
done

echo
echo "===== summary (per GDAL)"
rc=0
dirs=()
for g in "${ORDER[@]}"; do
  res=
  if [ -d "${RDIRS[$g]:-/nonexistent}" ]; then
    res=$(counts 0 0 "${RDIRS[$g]}" | head -1)
    dirs+=("${RDIRS[$g]}")
  fi
  printf '%-7s GDAL %-7s %-8s %5d s  %s\n' "$g" "${GDALVER[$g]:-?}" "${STATUS[$g]}" \
    "${SECS[$g]}" "$res"
  [ "${STATUS[$g]}" = FAILED ] && rc=1
done
echo "total time $SECONDS s"
# The closing line: every GDAL's ctest and pytest counts added up.
nskip=0 nbroken=0
for g in "${ORDER[@]}"; do
  [ "${STATUS[$g]}" = SKIPPED ] && nskip=$((nskip + 1))
  [ "${STATUS[$g]}" = FAILED ] && [ ! -f "${RDIRS[$g]:-/nonexistent}/pytest.xml" ] && nbroken=$((nbroken + 1))
done
echo "total: $(counts "$nskip" "$nbroken" "${dirs[@]}" | tail -1)"
exit "$rc"
