#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (ctest) while the tests labelled `asan`
# (those that parse untrusted input) build with clang, AddressSanitizer + UBSan at the lowest
# priority; then runs those again, with each fuzz target's brief libFuzzer run.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's end in seconds from the start, so a CI log shows where its minutes go.
phase() { echo "test.sh: $1 done at $SECONDS s"; }
scripts/install-deps.sh
phase "packages"
# Line tables only (-g1): full debug info costs CI minutes and the tests need only file:line traces.
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
# The CUDA backend for the supported GPUs even without one (a plain build compiles it only for the
# GPUs present): device code through the compiler for each; SASS assembled only for sm_90, the
# H200's (ptxas is about half of the device compile; -DTWINSPAN_CUDA_ARCHS=all assembles all five).
# The units instantiating the EXL3 and attention kernels are built for sm_90 only and compiled to
# unoptimized PTX for the others, to check them: a third of the device compile.
# The device code branches on __CUDA_ARCH__ >= 900 alone, so sm_89 compiles sm_86's code and sm_121
# sm_120's: CI compiles one of each pair, and all four once the code compares another value.
check_archs="86;120"
if grep -rhoE "__CUDA_ARCH__ *[<>=!]+ *[0-9]+" kernels tools tests | grep -qv ">= 900$"; then
  check_archs="86;89;120;121"
fi
cuda_archs="90-real;${check_archs//;/-virtual;}-virtual"
# Line tables for the .cu files' host side too (nvcc's -g is full debug info).
# The test programs' own code at -O1 (the libraries they test at -O2): a quarter less compile for
# tests that spend their time in the libraries.
scripts/build.sh "${flags[@]}" "-DCMAKE_CUDA_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG -Xcompiler=-g1" \
  "-DCMAKE_CUDA_ARCHITECTURES=$cuda_archs" "-DTWINSPAN_CUDA_CHECK_ARCHS=$check_archs" \
  -DTWINSPAN_TEST_OPTIMIZE=-O1
phase "main build"

asan=build-asan
# Services stay on: the public request parser's replay needs the protos (only asan targets build).
# clang-14 so that the same pass builds the libFuzzer targets (TWINSPAN_FUZZ) and ctest runs each
# briefly after replaying its corpus; scripts/fuzz.sh runs them for millions of executions.
# The test programs' own code at -O0 there: half the sanitized compile of a test (the libraries
# stay at -O2, the fuzzers too).
CC=clang-14 CXX=clang++-14 cmake -S . -B "$asan" -G Ninja "${flags[@]}" \
  -DTWINSPAN_SANITIZE=address,undefined -DTWINSPAN_FUZZ=ON -DTWINSPAN_CUDA=OFF \
  -DTWINSPAN_TEST_OPTIMIZE=-O0 >/dev/null
mapfile -t targets < <(cd "$asan" && ctest -N -L asan | sed -n 's/^ *Test *#[0-9]*: //p')
# The asan build runs beside the tests at the lowest priority: the tests wait on processes, podman
# and the network much of the time, and a nice-19 build takes only the CPU they leave idle.
nice -n 19 ninja -C "$asan" -j "${JOBS:-$(nproc)}" "${targets[@]}" >"$asan/build.log" 2>&1 &
asan_build=$!
if ! (cd build && ctest --output-on-failure -j "$(nproc)"); then
  kill "$asan_build" 2>/dev/null || true
  wait "$asan_build" || true
  exit 1
fi
phase "main ctest"
if ! wait "$asan_build"; then
  cat "$asan/build.log"
  exit 1
fi
tail -n 1 "$asan/build.log"
phase "asan build"
(cd "$asan" && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ctest --output-on-failure -j "$(nproc)" -L asan)
