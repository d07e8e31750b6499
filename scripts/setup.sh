#!/usr/bin/env bash
# setup.sh: install every dependency vsitune needs on Debian 12 and build it.
#
# Idempotent: packages already present are not reinstalled, npm packages come
# from tests/lab/package-lock.json (npm ci), the build is incremental.
# Environment: BUILD_DIR (default ./build), VT_CMAKE_ARGS (extra cmake args),
# VT_SKIP_APT=1 to skip the apt step.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}

DEBS=(
  build-essential cmake pkg-config git
  libgdal-dev gdal-bin python3-gdal
  libcurl4-openssl-dev libnghttp2-dev libssl-dev
  nghttp2-proxy nghttp2-client openssl
  libcmocka-dev
  clang libclang-rt-14-dev
  python3-rasterio python3-numpy python3-pytest python3-yaml python3-matplotlib
  python3-distributed python3-rioxarray uvicorn
  nodejs npm
  valgrind procps time
  zip unzip
  debootstrap qemu-user-static binfmt-support
  prometheus jq
  python3-fastapi python3-uvicorn
)

need_apt() {
  local missing=()
  for p in "${DEBS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # nodesource's nodejs ships npm itself; Debian's npm package would conflict.
  if command -v npm >/dev/null 2>&1; then
    local keep=()
    for p in "${missing[@]}"; do [ "$p" = npm ] || [ "$p" = nodejs ] || keep+=("$p"); done
    missing=("${keep[@]}")
  fi
  printf '%s\n' "${missing[@]}"
}

if [ "${VT_SKIP_APT:-0}" != 1 ]; then
  mapfile -t MISSING < <(need_apt | sed '/^$/d')
  if [ "${#MISSING[@]}" -gt 0 ]; then
    echo "setup: installing Debian packages: ${MISSING[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${MISSING[@]}" >/dev/null
  fi
fi

# arm64 roots (the Lambda layer's arm64 check) run through qemu-user: binfmt_misc must
# know qemu-aarch64. A container may not have binfmt_misc mounted, or may not allow it:
# then the arm64 tests say so and skip.
if [ "$(id -u)" = 0 ] && command -v update-binfmts >/dev/null 2>&1 &&
   ! grep -qs '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64; then
  [ -e /proc/sys/fs/binfmt_misc/register ] ||
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null || true
  update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
fi

if [ -f "$ROOT/tests/lab/package-lock.json" ]; then
  if [ ! -d "$ROOT/tests/lab/node_modules" ] || \
     [ "$ROOT/tests/lab/package-lock.json" -nt "$ROOT/tests/lab/node_modules/.package-lock.json" ]; then
    echo "setup: installing the lab's npm packages (npm ci)"
    (cd "$ROOT/tests/lab" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  fi
fi

CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
[ "${CI:-}" = true ] && CMAKE_ARGS+=(-DVT_WERROR=ON)
# shellcheck disable=SC2206
CMAKE_ARGS+=(${VT_CMAKE_ARGS:-})
cmake -S "$ROOT" -B "$BUILD_DIR" "${CMAKE_ARGS[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
test -f "$BUILD_DIR/vsiplugin/gdal_vsitune.so" || { echo "setup: build failed" >&2; exit 1; }
echo "setup: built in $BUILD_DIR"
