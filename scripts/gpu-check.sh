#!/usr/bin/env bash
# gpu-check.sh: the GPU tests and benchmarks in one go.
#   scripts/gpu-check.sh bundle [BUILD_DIR [DEST]]  (here, after building BUILD_DIR, default
#       build-cuda; DEST default device): packs the GPU test and benchmark binaries with their
#       shared libraries into DEST/bundle, the golden files they read into DEST/golden, and this
#       script into DEST, for a GPU machine that lacks our libraries. A binary named
#       twinspan_gpu_bench_old placed in DEST/bundle/bin afterwards (a previous build's bench,
#       bundled the same way) is timed too, for before/after numbers from one call.
#   DEST/gpu-check.sh  or  scripts/gpu-check.sh  (on the GPU machine, with DEST carried along):
#       runs every *_cuda_test, then twinspan_gpu_bench_old (OLD_BENCH_ARGS, default the forward
#       and head sections) if present, then twinspan_gpu_bench (BENCH_ARGS); writes logs under $OUT
#       (default ./gpu-out) and prints a short summary last.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ "${1:-}" = bundle ]; then
  set -e
  cd "$here/.."
  build=${2:-build-cuda}
  dest=${3:-device}
  rm -rf "$dest/bundle" "$dest/golden"
  mkdir -p "$dest/golden/exl3_linear"
  bins=$(find "$build/tests/cuda" "$build/tools" -maxdepth 2 -type f -executable \
    \( -name '*_cuda_test' -o -name 'twinspan_gpu_bench' \) 2>/dev/null)
  ../shared/tools/device-bundle.sh "$dest/bundle" $bins
  strip "$dest"/bundle/bin/* "$dest"/bundle/lib/*.so* 2>/dev/null || true
  cp "${TWINSPAN_GOLDEN:-../shared/golden}"/exl3_linear/*.safetensors "$dest/golden/exl3_linear/"
  cp "$here/gpu-check.sh" "$dest/gpu-check.sh"
  git log -1 --format='commit %H' > "$dest/commit"
  git status --porcelain --untracked-files=no | sed 's/^/modified: /' >> "$dest/commit"
  du -sh "$dest" | awk '{print "'"$dest"'/: "$1}'
  exit 0
fi

# The bundle sits beside this script (DEST/gpu-check.sh) or in the repo's device/ folder.
if [ -d "$here/bundle" ]; then root=$here; else root=$here/../device; fi
out=${OUT:-gpu-out}
mkdir -p "$out"
bundle=$root/bundle
export TWINSPAN_GOLDEN=$root/golden
status=0

{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit,temperature.gpu \
    --format=csv; cat "$root/commit"; } | tee "$out/machine.txt"

summary=()
for t in "$bundle"/bin/*_cuda_test; do
  [ -e "$t" ] || continue
  name=$(basename "$t")
  start=$SECONDS
  "$bundle/run" "$name" >"$out/$name.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  line="$name: exit $rc in $((SECONDS - start)) s, $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/$name.log" | tr '\n' ' ')"
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
# shellcheck disable=SC2086
run_bench twinspan_gpu_bench_old bench-old.txt --json "$out/bench-old.json" \
  ${OLD_BENCH_ARGS:---sections forward,head}
# shellcheck disable=SC2086
run_bench twinspan_gpu_bench bench.txt --json "$out/bench.json" ${BENCH_ARGS:-}

echo "==== summary"
printf '%s\n' "${summary[@]}"
for f in bench-old.txt bench.txt; do
  [ -e "$out/$f" ] || continue
  echo "-- $f"
  grep -E "^copy|^tuning|^  rows" "$out/$f" | sed -E "s/ \(p10[^)]*\)//; s/ read\+write//; s/exllamav3 stack/xl3/; s/ of copy//" | cut -c1-118
done
exit $status
