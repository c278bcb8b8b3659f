#!/usr/bin/env bash
# gpu-check.sh: the GPU tests and benchmarks in one go.
#   scripts/gpu-check.sh bundle [BUILD_DIR [DEST]]  (here, after building BUILD_DIR, default
#       build-cuda; DEST default device): packs the GPU test and benchmark binaries and
#       twinspan-synth with their shared libraries, the golden files they read and this script into
#       DEST/device.tar.xz, for a GPU machine that lacks our libraries (xz with a 256 MiB dictionary
#       packs the device code that every binary links once; one GPU call carries at most 64 MiB). ONLY=REGEX bundles the binaries whose
#       names match and SKIP=REGEX drops some; each brings the golden data it reads (GOLDEN_SKIP=REGEX
#       leaves sets out). Three sets:
#       the default (SKIP defaults to the two EXL3 tests, ~47 MB), the EXL3 linear with the benches
#       (ONLY='exl3_linear_cuda_test|bench' SKIP=, ~35 MB) and the EXL3 target (ONLY=target_exl3
#       SKIP=, ~51 MB). The call carries the working tree too (~32 MB, models/demo 27 of it): it
#       warns when the two pass 64 MiB.
#       OLD_BENCH=PATH adds a previous build's twinspan_gpu_bench as twinspan_gpu_bench_old, timed
#       in the same call for before/after numbers.
#   scripts/gpu-check.sh  or  DEST/gpu-check.sh  (on the GPU machine, with DEST carried along):
#       unpacks DEST/device.tar.xz, runs every *_cuda_test (TESTS: a grep -E filter of their
#       names; each stopped after TEST_TIMEOUT seconds, default 300) and placement_test with the
#       drafter and target on GPU 0 (and on GPUs 0 and 1 where there are two), then twinspan_gpu_bench_old (OLD_BENCH_ARGS, default the forward and head
#       sections) if present and twinspan_gpu_bench (BENCH_ARGS; SKIP_BENCH=1 skips both), then
#       the one-round benchmark on a synthetic 27B pair when ROUND=1 (ROUND_ARGS; the pair is made
#       under PAIR_DIR, default /tmp/twinspan-27b, unless already there; ROUND_TREES="0 15 ..." runs it
#       once per tree node budget, 0 the chain, into round-tree-N-K.txt), and the prefix-reuse TTFT
#       bench when PREFIX=1 (PREFIX_MODELS, PREFIX_ARGS); writes logs under
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
  # The EXL3 tests' golden data (30 and 51 MB) fill a call each, so the default leaves them out.
  only=${ONLY:-.}
  skip=${SKIP-^(target_exl3_cuda_test|exl3_linear_cuda_test)$}
  bins=$(find "$build/tests/cuda" "$build/tests/integration" "$build/tools" -maxdepth 2 -type f \
    -executable \( -name '*_cuda_test' -o -name 'twinspan_gpu_bench' \
    -o -name 'twinspan_round_bench' -o -name 'twinspan-synth' -o -name placement_test \
    -o -name 'twinspan_prefix_bench' -o -name 'twinspan_wgmma_bits' \) \
    2>/dev/null | while read -r b; do
      n=$(basename "$b")
      if [[ $n =~ $only ]] && ! { [ -n "$skip" ] && [[ $n =~ $skip ]]; }; then echo "$b"; fi
    done)
  # The services' end-to-end tests start the real binaries: they travel with them.
  if [[ $bins == *services_cuda_test* || $bins == *placement_test* ]]; then
    bins="$bins $(find "$build" -maxdepth 1 -type f -executable \
      \( -name twinspan-target -o -name twinspan-drafter -o -name twinspan-serve \
      -o -name twinspan-router -o -name make-demo \) 2>/dev/null)"
  fi
  golden=""
  for b in $bins; do
    case $(basename "$b") in
      exl3_linear_cuda_test) golden="$golden exl3_linear" ;;
      target_cuda_test) golden="$golden hf_qwen3_tiny hf_qwen3_5_tiny exl3_qwen3_5_tiny exl3_qwen3_5_tiny_ref" ;;
      target_exl3_cuda_test) golden="$golden exl3_qwen3_tiny exl3_qwen3_tiny_ref" ;;
      prefix_cache_cuda_test) golden="$golden hf_qwen3_tiny exl3_qwen3_5_tiny" ;;
      drafter_cuda_test) golden="$golden hf_qwen3_tiny dflash_drafter_tiny dflash2_drafter_tiny" ;;
      drafted_plain_cuda_test) golden="$golden hf_qwen3_tiny hf_qwen3_5_tiny exl3_qwen3_5_tiny" ;;
    esac
  done
  # GOLDEN_SKIP=REGEX leaves those golden sets out (their tests then fail: filter them with
  # GTEST_FILTER on the GPU machine).
  if [ -n "${GOLDEN_SKIP:-}" ]; then
    golden=$(printf "%s\n" $golden | { grep -Ev "$GOLDEN_SKIP" || true; } | tr "\n" " ")
  fi
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
    # shellcheck disable=SC2086
    (cd "${TWINSPAN_GOLDEN:-../shared/golden}" && tar -cf - --exclude=tokenizer.json \
      --exclude='*meta.json' $(printf '%s\n' $golden | sort -u)) | tar -xf - -C "$dest/golden"
  fi
  cp "$here/gpu-check.sh" "$dest/gpu-check.sh"
  git log -1 --format='commit %H' > "$dest/commit"
  git status --porcelain --untracked-files=no | sed 's/^/modified: /' >> "$dest/commit"
  # A dictionary larger than one binary: every test links the same device code, so it packs once.
  tar -C "$dest" -cf - bundle golden commit | xz -T1 --lzma2=preset=6,dict=256MiB \
    > "$dest/device.tar.xz"
  rm -rf "$dest/bundle" "$dest/golden"
  du -sh "$dest" | awk '{print "'"$dest"'/: "$1}'
  # A call carries the working tree too (tracked and untracked-not-ignored files), 64 MiB in all.
  tree=$(($(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null |
    tail -1 | cut -f1) >> 20))
  total=$((($(du -sb "$dest" | cut -f1) >> 20) + tree))
  if [ "$total" -ge 64 ]; then
    echo "warning: $dest with the working tree ($tree MB, models/demo most of it) is $total MB; a" \
      "GPU call carries 64 MiB: bundle less (ONLY=, SKIP=) or move models/demo out of the" \
      "checkout for the call (no GPU test reads it)"
  fi
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
  timeout "${TEST_TIMEOUT:-300}" "$bundle/run" "$name" >"$out/$name.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  line="$name: exit $rc in $((SECONDS - start)) s, $(grep -E '^\[  (PASSED|FAILED)  \]|^SUMMARY' "$out/$name.log" | tr '\n' ' ')"
  summary+=("$line")
  echo "$line"
  grep -E '^\[  FAILED|Failure$|error|worst' "$out/$name.log" | head -20
done

# The router's placement with "gpu" fields: drafter and target on GPU 0, then on GPUs 0 and 1 when
# there are two.
if [ -x "$bundle/bin/placement_test" ] && [[ placement_test =~ ${TESTS:-.} ]]; then
  placements=("0,0")
  [ "$(nvidia-smi -L | wc -l)" -ge 2 ] && placements+=("0,1")
  for gpus in "${placements[@]}"; do
    start=$SECONDS
    TWINSPAN_PLACEMENT_GPUS=$gpus timeout "${TEST_TIMEOUT:-300}" "$bundle/run" placement_test \
      >"$out/placement_test-$gpus.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || status=1
    line="placement_test (gpus $gpus): exit $rc in $((SECONDS - start)) s, $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/placement_test-$gpus.log" | tr '\n' ' ')"
    summary+=("$line")
    echo "$line"
  done
fi

# Whether Hopper's wgmma gives the mma.m16n8k16 chain's bits (docs/cuda.md, "The prompt path").
if [ -x "$bundle/bin/twinspan_wgmma_bits" ] && [[ twinspan_wgmma_bits =~ ${TESTS:-.} ]]; then
  "$bundle/run" twinspan_wgmma_bits >"$out/wgmma_bits.log" 2>&1 || status=1
  cat "$out/wgmma_bits.log"
  summary+=("$(grep '^wgmma bits' "$out/wgmma_bits.log" || echo 'wgmma bits: no verdict')")
fi

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
  # The pair of twinspan-synth (~14.2 GB target, 1.4 GB Q4 drafter), made once per machine.
  pair=${PAIR_DIR:-/tmp/twinspan-27b}
  for spec in "qwen3.8-27b target" "qwen3.8-27b-dflash2 drafter-q4 --drafter-bits 4"; do
    read -r preset dir extra <<<"$spec"
    [ -e "$pair/$dir/config.json" ] && continue
    start=$SECONDS
    # shellcheck disable=SC2086
    "$bundle/run" twinspan-synth --preset "$preset" --out "$pair/$dir" --threads "$(nproc)" \
      $extra >"$out/synth-$dir.log" 2>&1 || status=1
    summary+=("twinspan-synth $preset: $((SECONDS - start)) s")
  done
  if [ -z "${ROUND_TREES:-}" ]; then
    # shellcheck disable=SC2086
    run_bench twinspan_round_bench round.txt --target "$pair/target" \
      --drafter "$pair/drafter-q4" --json "$out/round.json" ${ROUND_ARGS:-}
  fi
  # One run per budget in the given order (repeat budgets to interleave them against drift).
  k=0
  for nodes in ${ROUND_TREES:-}; do
    k=$((k + 1))
    # shellcheck disable=SC2086
    run_bench twinspan_round_bench "round-tree-$nodes-$k.txt" --target "$pair/target" \
      --drafter "$pair/drafter-q4" --json "$out/round-tree-$nodes-$k.json" --tree-nodes "$nodes" \
      ${ROUND_ARGS:-}
  done
fi

# Prefix reuse: TTFT of a 4,096-token prompt resumed with a new 64-token suffix against fresh ones,
# for each folder of PREFIX_MODELS (default: the demo target, from the checkout run in).
if [ "${PREFIX:-0}" = 1 ] && [ -x "$bundle/bin/twinspan_prefix_bench" ]; then
  for model in ${PREFIX_MODELS:-models/demo/target}; do
    # shellcheck disable=SC2086
    run_bench twinspan_prefix_bench "prefix-$(basename "$model").txt" --model "$model" \
      --device cuda:0 ${PREFIX_ARGS:-}
  done
fi

echo "==== summary"
printf '%s\n' "${summary[@]}"
for f in bench-old.txt bench.txt; do
  [ -e "$out/$f" ] || continue
  echo "-- $f"
  grep -E "^copy|^tuning|^  rows" "$out/$f" | sed -E "s/ \(p10[^)]*\)//; s/ read\+write//; s/exllamav3 stack/xl3/; s/ of copy//" | cut -c1-118
done
[ -e "$out/round.txt" ] && { echo "-- round.txt"; grep -E "^(load|copy|FAILED)" "$out/round.txt";
  sed -n '/^==== summary/,$p' "$out/round.txt"; }
for f in "$out"/round-tree-*.txt; do
  [ -e "$f" ] && { echo "-- $(basename "$f")"; sed -n '/^==== summary/,$p' "$f"; }
done
exit $status
