#!/usr/bin/env bash
# demo.sh: set everything up (scripts/setup.sh), start the S3 lab, upload a
# generated Sentinel-2-like COG, read it cold through stock GDAL and through
# vsitune, and print what the server saw, side by side.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BUILD_DIR=${BUILD_DIR:-$ROOT/build}
"$ROOT/scripts/setup.sh"
exec /usr/bin/python3 "$ROOT/tests/lab/demo.py" --build-dir "$BUILD_DIR" "$@"
