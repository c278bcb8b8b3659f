#!/usr/bin/env bash
# gpu-check.sh: the GPU tests and benchmarks in one go.
#   scripts/gpu-check.sh bundle [BUILD_DIR]  (here, after building BUILD_DIR, default build-cuda):
#       packs the GPU test and benchmark binaries and twinspan-synth with their shared libraries into
#       device/bundle and the golden files they read into device/golden, for a GPU machine that
#       lacks our libraries.
#   scripts/gpu-check.sh                     (on the GPU machine, with device/ carried along):
#       runs every *_cuda_test and twinspan_gpu_bench, writes logs under $OUT (default ./gpu-out)
#       and prints a short summary last. BENCH_ARGS passes extra flags to the benchmark.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = bundle ]; then
  set -e
  build=${2:-build-cuda}
  rm -rf device/bundle device/golden
  mkdir -p device/golden/exl3_linear
  bins=$(find "$build/tests/cuda" "$build/tools" -maxdepth 2 -type f -executable \
    \( -name '*_cuda_test' -o -name 'twinspan_gpu_bench' -o -name 'twinspan-synth' \) 2>/dev/null)
  ../shared/tools/device-bundle.sh device/bundle $bins
  strip device/bundle/bin/* device/bundle/lib/*.so* 2>/dev/null || true
  cp "${TWINSPAN_GOLDEN:-../shared/golden}"/exl3_linear/*.safetensors device/golden/exl3_linear/
  git log -1 --format='commit %H' > device/commit
  du -sh device | awk '{print "device/: "$1}'
  exit 0
fi

out=${OUT:-gpu-out}
mkdir -p "$out"
bundle=device/bundle
export TWINSPAN_GOLDEN=$PWD/device/golden
status=0

{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit,temperature.gpu \
    --format=csv; cat device/commit; } | tee "$out/machine.txt"

for t in "$bundle"/bin/*_cuda_test; do
  [ -e "$t" ] || continue
  name=$(basename "$t")
  "$bundle/run" "$name" >"$out/$name.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  echo "$name: exit $rc, $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/$name.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED|Failure$|error' "$out/$name.log" | head -20
done

if [ -x "$bundle/bin/twinspan_gpu_bench" ]; then
  "$bundle/run" twinspan_gpu_bench --json "$out/bench.json" ${BENCH_ARGS:-} >"$out/bench.txt" 2>&1 || status=1
  cat "$out/bench.txt"
fi
exit $status
