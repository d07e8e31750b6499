#!/bin/sh
# build-stage.sh: the build stage of both container recipes
# (packaging/container/Dockerfile, packaging/lambda-image/Dockerfile), one
# copy: Debian 12's build packages (the build subset of scripts/setup.sh's
# DEBS list), then setup.sh's configure and build steps and the staged
# install into /stage, whose /stage/usr/local/ the runtime stages copy.
# Run as `RUN sh /src/packaging/build-stage.sh` after the sources are
# COPY'd to /src. tests/integration/test_packaging.py and
# test_packaging_lambda_image.py read its commands as the recipes' RUN steps
# (one '&&' chain a line, as a RUN would hold).
set -eu
apt-get update && apt-get install -y --no-install-recommends build-essential cmake pkg-config libgdal-dev libcurl4-openssl-dev libnghttp2-dev libssl-dev && rm -rf /var/lib/apt/lists/*
cmake -S /src -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVT_BUILD_TESTS=OFF -DCMAKE_INSTALL_PREFIX=/usr/local && cmake --build /build -j"$(nproc)" && DESTDIR=/stage cmake --install /build --strip
