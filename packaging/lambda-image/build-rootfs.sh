#!/usr/bin/env bash
# build-rootfs.sh: the Lambda container image's root filesystem, without Docker.
#
#   packaging/lambda-image/build-rootfs.sh ROOT BUILD_DIR
#
# The same content as packaging/lambda-image/Dockerfile produces: Debian 12
# (debootstrap minbase, through scripts/debroot.sh, which caches ROOT) with the
# packages of runtime-packages.txt, vsitune installed from BUILD_DIR (cmake
# --install --prefix /usr/local --strip, the Dockerfile's install step) and the
# Runtime API bootstrap at /var/runtime/bootstrap.py. Run the function with
#   scripts/debroot.sh --run ROOT --bind TASK_DIR:/var/task:ro -- \
#       AWS_LAMBDA_RUNTIME_API=HOST:PORT ... \
#       /usr/local/bin/lambda-exec-wrapper /usr/bin/python3 /var/runtime/bootstrap.py app.handler
# (tests/integration/test_packaging_lambda_image.py does). Needs root. Exit
# status: 0 ok, 2 usage, 3 the Debian mirror is not reachable (debroot.sh), 1
# anything else.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
[ $# -eq 2 ] || { echo "usage: $0 ROOT BUILD_DIR" >&2; exit 2; }
ROOT=$1
BUILD=$2
[ -f "$BUILD/vsiplugin/gdal_vsitune.so" ] || { echo "build-rootfs: $BUILD has no build" >&2; exit 2; }
mapfile -t PKGS < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$HERE/runtime-packages.txt")
"$REPO/scripts/debroot.sh" bookworm "$ROOT" "${PKGS[@]}" >/dev/null
DESTDIR="$ROOT" cmake --install "$BUILD" --prefix /usr/local --strip >/dev/null
install -D -m 0755 "$HERE/bootstrap.py" "$ROOT/var/runtime/bootstrap.py"
mkdir -p "$ROOT/var/task"
echo "$ROOT"
