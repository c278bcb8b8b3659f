#!/usr/bin/env bash
# gpu-quantize-table.sh: the quantizer's GPU runs in one device call: the CUDA tile encoder's
# parity tests, its seconds per 5,120 x 17,408 linear, the demo target quantized at 2..6 bits with
# --device cuda:0 (4 bits must reproduce models/demo/target), each width's perplexity on the
# held-out code and prose, transformers' greedy reference for demo_model_test, and the demo pair
# served on cuda:0, drafted against plain.
#   here:   [CUDA_BUILD=build-cuda] scripts/gpu-quantize-table.sh pack DIR   (DIR: bf16.tar.xz of the bf16 target,
#           cal.txt.xz of the calibration text, demo_target.sha256, heldout_{code,prose}.txt,
#           h200_prompts.jsonl, stubs/ (build/bench-stubs), drafter/ when models/demo cannot travel
#           beside the bf16 target (64 MiB a call); packs the binaries it runs)
#   there:  scripts/gpu-quantize-table.sh run DIR    (writes logs and results under $OUT)
set -uo pipefail
cd "$(dirname "$0")/.."
mode=$1
dir=$2
cuda=${CUDA_BUILD:-build-cuda}
bins="$cuda/tools/twinspan-quantize $cuda/tools/twinspan-quantize-compare
  $cuda/tools/twinspan-perplexity ${CPU_BUILD:-build}/tools/twinspan-exl3
  $cuda/tests/cuda/trellis_encode_cuda_test $cuda/tests/cuda/cuda_tile_encoder_cuda_test
  $cuda/twinspan-serve"
if [ "$mode" = pack ]; then
  set -e
  rm -rf "$dir/bundle" "$dir/bundle.tar.xz"
  # shellcheck disable=SC2086
  ../shared/tools/device-bundle.sh "$dir/bundle" $bins >/dev/null
  strip "$dir"/bundle/bin/* "$dir"/bundle/lib/*.so* 2>/dev/null || true
  tar -C "$dir" -cf - bundle | xz -T1 --lzma2=preset=6,dict=256MiB >"$dir/bundle.tar.xz"
  rm -rf "$dir/bundle"
  du -sh "$dir"/*
  exit 0
fi

out=${OUT:-./gpu-out}
work=${WORK:-/tmp/twinspan-qt}
mkdir -p "$out" "$work"
tar -C "$work" -xJf "$dir/bundle.tar.xz"
tar -C "$work" -xJf "$dir/bf16.tar.xz"
xz -dc "$dir/cal.txt.xz" >"$work/cal.txt"
run=$work/bundle/run
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
git log -1 --format='commit %H' | tee -a "$out/gpu.txt"

for t in trellis_encode_cuda_test cuda_tile_encoder_cuda_test; do
  timeout 120 "$run" "$t" >"$out/$t.log" 2>&1
  echo "$t: rc $? ($(grep -cE '^\[       OK' "$out/$t.log") ok, $(grep -cE '^\[  FAILED' "$out/$t.log") failed)"
done
grep -iE 'tiles/s|per 5120|seconds' "$out/trellis_encode_cuda_test.log" | head -6

quantize() {
  local b=$1 start
  start=$(date +%s.%N)
  timeout "${QUANT_TIMEOUT:-90}" "$run" twinspan-quantize --in "$work/target" --out "$work/q$b" \
    --bits "$b" --calibration "$work/cal.txt" --cal-rows 64 --cal-cols 1024 --device cuda:0 \
    --threads 16 >"$out/q$b.log" 2>&1
  echo "q$b: rc $? in $(awk "BEGIN{print $(date +%s.%N) - $start}") s: $(tail -1 "$out/q$b.log" | cut -c1-160)"
}
quantize 4
echo "q4 model.safetensors $(sha256sum "$work/q4/model.safetensors" | cut -c1-64), models/demo $(cat "$dir/demo_target.sha256")"

"$run" twinspan-exl3 dequant-model --in "$work/q4" --out "$work/dense" --dtype f32 >/dev/null &&
  cp "$work/q4"/tokenizer* "$work/dense/" &&
  python3 tools/train/reference_tokens.py --dense "$work/dense" --tokenizer-dir "$work/q4" \
    --out "$out/reference.json"

# The demo pair on the H200, served by twinspan-serve on cuda:0: models/demo when it travelled,
# else the 4-bit target just written (the same bytes when the hashes above agree) and DIR/drafter.
demo_target=models/demo/target demo_drafter=models/demo/drafter
[ -f "$demo_target/config.json" ] || demo_target=$work/q4 demo_drafter=$dir/drafter
if [ -f "$demo_drafter/config.json" ] && [ -f "$demo_target/config.json" ]; then
  "$run" twinspan-serve --model "$demo_target" --drafter-model "$demo_drafter" --head-variant two-span \
    --device cuda:0 --listen 127.0.0.1:0 --parallel 4 --context 2048 >"$out/serve.out" 2>"$out/serve.log" &
  serve=$!
  for _ in $(seq 1 300); do grep -q "listening grpc=" "$out/serve.out" && break; sleep 0.1; done
  port=$(sed -n 's/.*listening grpc=\([0-9]*\).*/\1/p' "$out/serve.out" | head -1)
  for draft in "" --no-draft; do
    # The machine's protobuf is newer than Debian's generated stubs: its pure-Python runtime reads them.
    PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python TWINSPAN_BENCH_STUBS=$dir/stubs timeout 150 \
      python3 tools/bench/twinspan-bench --target "127.0.0.1:$port" \
      --prompts "$dir/h200_prompts.jsonl" --modes greedy,sampled --levels 1,4 \
      --tokens 128 --reps 3 --warmup 1 $draft --jsonl "$out/h200${draft:+_plain}.jsonl" 2>&1 |
      grep -E '^\|' | cut -c1-120
  done
  kill "$serve"
  wait "$serve"
  tail -3 "$out/serve.log"
fi
for b in 2 3 5 6; do quantize "$b"; done
for m in target q2 q3 q4 q5 q6; do
  for t in code prose; do
    [ -f "$work/$m/config.json" ] || continue
    "$run" twinspan-perplexity --model "$work/$m" --text "$dir/heldout_$t.txt" --max-tokens 4096 \
      --window 512 --threads 2 --json >"$out/ppl_${m}_$t.json" 2>/dev/null &
  done
done
wait
cat "$out"/ppl_*.json

timeout 120 "$run" twinspan-quantize-compare --bench 5120x17408 --device cuda:0 --threads 16 \
  >"$out/bench_cuda.log" 2>&1
echo "encoder bench rc $?: $(tail -3 "$out/bench_cuda.log")"

timeout 60 "$run" twinspan-quantize-compare --bench 5120x17408 --slice 17 --device cpu --threads 16 \
  >"$out/bench_cpu.log" 2>&1
echo "cpu encoder bench rc $?: $(tail -2 "$out/bench_cpu.log")"
