#!/bin/bash
# build.sh: the recipe's build (rattler-build / conda-build run it with PREFIX,
# SRC_DIR, CMAKE_ARGS, CPU_COUNT set): the plugin and tunerd against the host
# environment's libgdal-core, installed into $PREFIX/lib/gdalplugins and
# $PREFIX/bin, plus the activation scripts.
set -euxo pipefail

# conda's pkg-config searches $PREFIX/lib/pkgconfig; say so for any other one
export PKG_CONFIG_PATH=${PREFIX}/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
# shellcheck disable=SC2086  # CMAKE_ARGS is a list of arguments
cmake -S "${SRC_DIR}" -B _build -G "${CMAKE_GENERATOR:-Ninja}" ${CMAKE_ARGS:-} \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="${PREFIX}" \
      -DCMAKE_INSTALL_PREFIX="${PREFIX}" \
      -DCMAKE_INSTALL_LIBDIR=lib \
      -DVT_BUILD_TESTS=OFF
cmake --build _build -j"${CPU_COUNT:-2}"
cmake --install _build --strip
rm -rf "${PREFIX}/share/doc/vsitune"

# the activation scripts, as conda-forge's GDAL packages install theirs
for d in activate deactivate; do
  mkdir -p "${PREFIX}/etc/conda/${d}.d"
  cp "${RECIPE_DIR}/scripts/${d}.sh" "${PREFIX}/etc/conda/${d}.d/libgdal-vsitune_${d}.sh"
done
