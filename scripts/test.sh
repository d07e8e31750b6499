#!/usr/bin/env bash
# test.sh: set everything up (scripts/setup.sh) and run the whole test suite:
# the C unit tests (ctest) and the integration tests against the S3 lab
# (pytest, Debian's /usr/bin/python3). Extra arguments go to pytest.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-$ROOT/build}
"$ROOT/scripts/setup.sh"

echo "== unit tests (ctest)"
(cd "$BUILD_DIR" && ctest --output-on-failure -j2)

echo "== fuzzing (libFuzzer, bounded, committed corpus: scripts/fuzz.sh)"
VT_FUZZ_SECONDS=${VT_FUZZ_SECONDS:-20} "$ROOT/scripts/fuzz.sh"

echo "== integration tests (pytest, against the lab)"
export VT_BUILD_DIR="$BUILD_DIR"
cd "$ROOT"
/usr/bin/python3 -m pytest -p no:cacheprovider -q -ra tests/integration "$@"
