#!/usr/bin/env bash
# Configures and builds Twinspan into build/ (BUILD_DIR overrides); extra arguments go to cmake.
# TARGETS (space-separated) builds only those targets and what they need; default everything.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
cmake -S . -B "$build_dir" -G Ninja "$@" >/dev/null
# shellcheck disable=SC2086
cmake --build "$build_dir" -j "$jobs" ${TARGETS:+--target $TARGETS}
