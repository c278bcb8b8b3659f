#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (ctest); then rebuilds the tests labelled
# `asan` (those that parse untrusted input) with clang, AddressSanitizer + UBSan and runs them
# again, with each fuzz target's brief libFuzzer run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Line tables only (-g1): full debug info costs CI minutes and the tests need only file:line traces.
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
# The CUDA backend for all five supported GPUs even without one (a plain build compiles it only for
# the GPUs present): device code through the compiler for each; SASS assembled only for sm_90, the
# H200's (ptxas is about half of the device compile; -DTWINSPAN_CUDA_ARCHS=all assembles all five).
cuda_archs="90-real;86-virtual;89-virtual;120-virtual;121-virtual"
scripts/build.sh "${flags[@]}" "-DCMAKE_CUDA_ARCHITECTURES=$cuda_archs"
(cd build && ctest --output-on-failure -j "$(nproc)")

asan=build-asan
# Services stay on: the public request parser's replay needs the protos (only asan targets build).
# clang-14 so that the same pass builds the libFuzzer targets (TWINSPAN_FUZZ) and ctest runs each
# briefly after replaying its corpus; scripts/fuzz.sh runs them for millions of executions.
CC=clang-14 CXX=clang++-14 cmake -S . -B "$asan" -G Ninja "${flags[@]}" \
  -DTWINSPAN_SANITIZE=address,undefined -DTWINSPAN_FUZZ=ON -DTWINSPAN_CUDA=OFF >/dev/null
mapfile -t targets < <(cd "$asan" && ctest -N -L asan | sed -n 's/^ *Test *#[0-9]*: //p')
cmake --build "$asan" -j "${JOBS:-$(nproc)}" --target "${targets[@]}"
(cd "$asan" && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ctest --output-on-failure -j "$(nproc)" -L asan)
