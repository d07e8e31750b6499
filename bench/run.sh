#!/usr/bin/env bash
# run.sh: install/build everything (scripts/setup.sh), then run the benchmark suite.
# Arguments go to bench/run.py (e.g. --quick, --only 1,3: results in a scratch folder
# under the build directory; --publish --root sid: a full run that replaces
# bench/results/ and docs/performance.md). BUILD_DIR selects the build directory, as
# for setup.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
BUILD_DIR="$BUILD_DIR" "$ROOT/scripts/setup.sh"
exec /usr/bin/python3 "$ROOT/bench/run.py" --build-dir "$BUILD_DIR" "$@"
