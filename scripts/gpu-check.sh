#!/usr/bin/env bash
# gpu-check.sh: the GPU tests and benchmarks in one go.
#   scripts/gpu-check.sh bundle [BUILD_DIR]  (here, after building BUILD_DIR, default build-cuda):
#       packs the GPU test and benchmark binaries with their shared libraries and the golden files
#       they read into device/device.tar.xz, for a GPU machine that lacks our libraries. xz shrinks
#       the binaries' device code about sevenfold, so a set fits the 64 MiB one GPU call carries.
#       GPU_SET picks the set: default (every *_cuda_test but target_exl3_cuda_test and the
#       services' tests, the benchmark and twinspan-synth), exl3-target (target_exl3_cuda_test:
#       exl3_qwen3_tiny and its logits, ~51 MB) or services (services_cuda_test,
#       target_verifier_cuda_test, logits_sampler_cuda_test and the binaries the end-to-end test
#       starts: twinspan-target, twinspan-drafter, twinspan-serve, make-demo; no golden files).
#   scripts/gpu-check.sh                     (on the GPU machine, with device/ carried along):
#       unpacks device/device.tar.xz, runs every *_cuda_test and twinspan_gpu_bench in it, writes
#       logs under $OUT (default ./gpu-out) and prints a short summary last. BENCH_ARGS passes
#       extra flags to the benchmark.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = bundle ]; then
  set -e
  build=${2:-build-cuda}
  rm -rf device/bundle device/golden device/device.tar.xz
  mkdir -p device/golden
  case ${GPU_SET:-default} in
    default)
      bins=$(find "$build/tests/cuda" "$build/tools" -maxdepth 2 -type f -executable \
        \( -name '*_cuda_test' ! -name 'target_exl3_cuda_test' ! -name 'services_cuda_test' \
        ! -name 'target_verifier_cuda_test' ! -name 'logits_sampler_cuda_test' \
        -o -name 'twinspan_gpu_bench' -o -name 'twinspan-synth' \) 2>/dev/null)
      golden='exl3_linear hf_qwen3_tiny hf_qwen3_5_tiny/model exl3_qwen3_5_tiny' ;;
    services)
      bins=$(find "$build/tests/cuda" -maxdepth 1 -type f -executable \( -name services_cuda_test \
        -o -name target_verifier_cuda_test -o -name logits_sampler_cuda_test \))
      for b in twinspan-target twinspan-drafter twinspan-serve make-demo; do
        [ -x "$build/$b" ] || { echo "missing $build/$b: build it first" >&2; exit 2; }
        bins="$bins $build/$b"
      done
      golden='' ;;
    exl3-target)
      bins=$(find "$build/tests/cuda" -maxdepth 1 -type f -executable -name 'target_exl3_cuda_test')
      golden='exl3_qwen3_tiny exl3_qwen3_tiny_ref' ;;
    *) echo "unknown GPU_SET ${GPU_SET}" >&2; exit 2 ;;
  esac
  ../shared/tools/device-bundle.sh device/bundle $bins
  strip device/bundle/bin/* device/bundle/lib/*.so* 2>/dev/null || true
  # The checkpoints without their tokenizers or meta files: no GPU test reads them.
  if [ -n "$golden" ]; then
    (cd "${TWINSPAN_GOLDEN:-../shared/golden}" && tar -cf - --exclude=tokenizer.json \
      --exclude='*meta.json' $golden) | tar -xf - -C device/golden
  fi
  git log -1 --format='commit %H' > device/commit
  tar -C device -cJf device/device.tar.xz bundle golden commit
  rm -rf device/bundle device/golden
  du -sh device | awk '{print "device/: "$1}'
  exit 0
fi

if [ ! -d device/bundle ] && [ -f device/device.tar.xz ]; then  # python3 where xz is missing.
  tar -C device -xJf device/device.tar.xz 2>/dev/null ||
    python3 -c 'import tarfile; tarfile.open("device/device.tar.xz").extractall("device")' || exit 1
fi
out=${OUT:-gpu-out}
mkdir -p "$out"
bundle=device/bundle
export TWINSPAN_GOLDEN=$PWD/device/golden
case $out in /*) logs=$out/services ;; *) logs=$PWD/$out/services ;; esac
export TWINSPAN_TEST_LOG_DIR=$logs  # services_cuda_test keeps its processes' logs there
status=0

{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit,temperature.gpu \
    --format=csv; cat device/commit; } | tee "$out/machine.txt"

for t in "$bundle"/bin/*_cuda_test; do
  [ -e "$t" ] || continue
  name=$(basename "$t")
  "$bundle/run" "$name" >"$out/$name.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  echo "$name: exit $rc, $(grep -E '^\[  (PASSED|FAILED)  \]|^SUMMARY' "$out/$name.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED|Failure$|error' "$out/$name.log" | head -20
done

if [ -x "$bundle/bin/twinspan_gpu_bench" ]; then
  "$bundle/run" twinspan_gpu_bench --json "$out/bench.json" ${BENCH_ARGS:-} >"$out/bench.txt" 2>&1 || status=1
  cat "$out/bench.txt"
fi
exit $status
