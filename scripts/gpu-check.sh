#!/usr/bin/env bash
# gpu-check.sh: the GPU tests and benchmarks in one go.
#   scripts/gpu-check.sh bundle [BUILD_DIR [DEST]]  (here, after building BUILD_DIR, default
#       build-cuda; DEST default device): packs the GPU test and benchmark binaries and
#       twinspan-synth with their shared libraries, the golden files they read and this script into
#       DEST/device.tar.xz, for a GPU machine that lacks our libraries (xz shrinks the device code
#       about sevenfold, so a set fits the 64 MiB one GPU call carries). GPU_SET picks the set:
#       default (every *_cuda_test but target_exl3_cuda_test and the services' three, the benches,
#       twinspan-synth), exl3-target (target_exl3_cuda_test with exl3_qwen3_tiny and its logits,
#       ~51 MB) or services (services_cuda_test, target_verifier_cuda_test,
#       logits_sampler_cuda_test and the binaries the end-to-end test starts: twinspan-target,
#       twinspan-drafter, twinspan-serve, make-demo; no golden files, ~10 MB).
#       OLD_BENCH=PATH adds a previous build's twinspan_gpu_bench as twinspan_gpu_bench_old, timed
#       in the same call for before/after numbers.
#   scripts/gpu-check.sh  or  DEST/gpu-check.sh  (on the GPU machine, with DEST carried along):
#       unpacks DEST/device.tar.xz, runs every *_cuda_test (TESTS: a grep -E filter of their
#       names), then twinspan_gpu_bench_old (OLD_BENCH_ARGS, default the forward and head
#       sections) if present and twinspan_gpu_bench (BENCH_ARGS; SKIP_BENCH=1 skips both), then
#       the one-round benchmark on a synthetic 27B pair when ROUND=1 (ROUND_ARGS); writes logs under
#       $OUT (default ./gpu-out) and prints a short summary last.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ "${1:-}" = bundle ]; then
  set -e
  cd "$here/.."
  build=${2:-build-cuda}
  dest=${3:-device}
  mkdir -p "$dest"
  rm -rf "$dest/golden" "$dest/device.tar.xz"
  mkdir -p "$dest/golden"
  case ${GPU_SET:-default} in
    default)
      bins=$(find "$build/tests/cuda" "$build/tools" -maxdepth 2 -type f -executable \
        \( -name '*_cuda_test' ! -name 'target_exl3_cuda_test' ! -name 'services_cuda_test' \
        ! -name 'target_verifier_cuda_test' ! -name 'logits_sampler_cuda_test' \
        -o -name 'twinspan_gpu_bench' -o -name 'twinspan_round_bench' -o -name 'twinspan-synth' \) \
        2>/dev/null)
      golden='exl3_linear hf_qwen3_tiny hf_qwen3_5_tiny exl3_qwen3_5_tiny exl3_qwen3_5_tiny_ref' ;;
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
  rm -rf "$dest/bundle"
  ../shared/tools/device-bundle.sh "$dest/bundle" $bins
  if [ -n "${OLD_BENCH:-}" ]; then
    ../shared/tools/device-bundle.sh "$dest/old" "$OLD_BENCH" >/dev/null
    cp -n "$dest"/old/lib/* "$dest/bundle/lib/" 2>/dev/null || true
    cp "$dest/old/bin/$(basename "$OLD_BENCH")" "$dest/bundle/bin/twinspan_gpu_bench_old"
    rm -rf "$dest/old"
  fi
  strip "$dest"/bundle/bin/* "$dest"/bundle/lib/*.so* 2>/dev/null || true
  # The checkpoints without their tokenizers or meta files: no GPU test reads them.
  if [ -n "$golden" ]; then
    (cd "${TWINSPAN_GOLDEN:-../shared/golden}" && tar -cf - --exclude=tokenizer.json \
      --exclude='*meta.json' $golden) | tar -xf - -C "$dest/golden"
  fi
  cp "$here/gpu-check.sh" "$dest/gpu-check.sh"
  git log -1 --format='commit %H' > "$dest/commit"
  git status --porcelain --untracked-files=no | sed 's/^/modified: /' >> "$dest/commit"
  tar -C "$dest" -cJf "$dest/device.tar.xz" bundle golden commit
  rm -rf "$dest/bundle" "$dest/golden"
  du -sh "$dest" | awk '{print "'"$dest"'/: "$1}'
  exit 0
fi

# The bundle sits beside this script (DEST/gpu-check.sh) or in the repo's device/ folder.
if [ -e "$here/device.tar.xz" ] || [ -d "$here/bundle" ]; then root=$here; else root=$here/../device; fi
if [ ! -d "$root/bundle" ] && [ -f "$root/device.tar.xz" ]; then  # python3 where xz is missing.
  tar -C "$root" -xJf "$root/device.tar.xz" 2>/dev/null ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$root/device.tar.xz" "$root" || exit 1
fi
out=${OUT:-gpu-out}
mkdir -p "$out"
bundle=$root/bundle
export TWINSPAN_GOLDEN=$root/golden
case $out in /*) logs=$out/services ;; *) logs=$PWD/$out/services ;; esac
export TWINSPAN_TEST_LOG_DIR=$logs  # services_cuda_test keeps its processes' logs there
status=0
summary=()

{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit,temperature.gpu \
    --format=csv; cat "$root/commit"; } | tee "$out/machine.txt"

for t in "$bundle"/bin/*_cuda_test; do
  [ -e "$t" ] || continue
  name=$(basename "$t")
  [[ $name =~ ${TESTS:-.} ]] || continue
  start=$SECONDS
  "$bundle/run" "$name" >"$out/$name.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  line="$name: exit $rc in $((SECONDS - start)) s, $(grep -E '^\[  (PASSED|FAILED)  \]|^SUMMARY' "$out/$name.log" | tr '\n' ' ')"
  summary+=("$line")
  echo "$line"
  grep -E '^\[  FAILED|Failure$|error|worst' "$out/$name.log" | head -20
done

run_bench() {  # run_bench NAME LOG ARGS...
  local name=$1 log=$2
  shift 2
  [ -x "$bundle/bin/$name" ] || return 0
  local start=$SECONDS
  "$bundle/run" "$name" "$@" >"$out/$log" 2>&1 || status=1
  summary+=("$name: $((SECONDS - start)) s")
  cat "$out/$log"
}
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  # shellcheck disable=SC2086
  run_bench twinspan_gpu_bench_old bench-old.txt --json "$out/bench-old.json" \
    ${OLD_BENCH_ARGS:---sections forward,head}
  # shellcheck disable=SC2086
  run_bench twinspan_gpu_bench bench.txt --json "$out/bench.json" ${BENCH_ARGS:-}
fi

if [ "${ROUND:-0}" = 1 ] && [ -x "$bundle/bin/twinspan_round_bench" ]; then
  pair=${PAIR_DIR:-/tmp/twinspan-27b}
  start=$SECONDS
  for preset in qwen3.8-27b qwen3.8-27b-dflash2; do
    [ -e "$pair/$preset/config.json" ] ||
      "$bundle/run" twinspan-synth --preset "$preset" --out "$pair/$preset" --threads "$(nproc)" \
        >"$out/synth-$preset.log" 2>&1 || status=1
  done
  summary+=("twinspan-synth: $((SECONDS - start)) s")
  # shellcheck disable=SC2086
  run_bench twinspan_round_bench round.txt --target "$pair/qwen3.8-27b" \
    --drafter "$pair/qwen3.8-27b-dflash2" --json "$out/round.json" ${ROUND_ARGS:-}
fi

echo "==== summary"
printf '%s\n' "${summary[@]}"
for f in bench-old.txt bench.txt; do
  [ -e "$out/$f" ] || continue
  echo "-- $f"
  grep -E "^copy|^tuning|^  rows" "$out/$f" | sed -E "s/ \(p10[^)]*\)//; s/ read\+write//; s/exllamav3 stack/xl3/; s/ of copy//" | cut -c1-118
done
[ -e "$out/round.txt" ] && { echo "-- round.txt"; tail -15 "$out/round.txt"; }
exit $status
