#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (ctest), then the AddressSanitizer pass
# over the format and tokenizer tests that parse untrusted input.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
(cd build && ctest --output-on-failure -j "$(nproc)")
BUILD_DIR=build-asan scripts/build.sh -DTWINSPAN_SANITIZE=address,undefined -DTWINSPAN_CUDA=OFF \
  -DTWINSPAN_SERVICES=OFF
(cd build-asan && ctest --output-on-failure -j "$(nproc)" -L asan)
