#!/usr/bin/env bash
# device.sh STAGE [recipe args...]: one stage of the demo pair's recipe on the GPU machine, in one
# call. Runs the stage's smoke test first (tiny, CPU) so a broken environment fails in seconds,
# then the stage itself, and packs what it wrote into $OUT as parts of at most 15 MiB (the device
# tool brings back 8 files of 16 MiB): unpack here with `cat OUT/STAGE.tar.part-* | tar -x -C DIR`.
#   tools/train/device.sh target
#   tools/train/device.sh drafter --target DIR --tokenizer-dir DIR --mask-token-id N
# With DEQUANT=EXL3_DIR and BUNDLE=DIR (device-bundle.sh of twinspan-exl3), the drafter stage first
# writes EXL3_DIR as dense fp32 weights into $WORK/dense (pass --target "$WORK/dense").
set -euo pipefail
stage=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/train-out}
work=${WORK:-/tmp/twinspan-train}
mkdir -p "$out" "$work"
export PYTHONUNBUFFERED=1
python3 -c 'import torch, tokenizers; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "tokenizers", tokenizers.__version__)'
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
if [ "${SKIP_SMOKE:-0}" != 1 ]; then
  smoke_args=()
  if [ "$stage" = drafter ]; then
    smoke_args=(--target "$work/smoke/target" --tokenizer-dir "$work/smoke/target" --mask-token-id 1023)
    python3 "$here/recipe.py" target --out "$work/smoke" --smoke >"$work/smoke-target.log" 2>&1 ||
      { tail -40 "$work/smoke-target.log"; exit 1; }
  fi
  python3 "$here/recipe.py" "$stage" --out "$work/smoke" --smoke "${smoke_args[@]}" >"$work/smoke.log" 2>&1 ||
    { tail -40 "$work/smoke.log"; exit 1; }
  echo "device.sh: smoke $stage passed"
fi
if [ -n "${DEQUANT:-}" ]; then
  rm -rf "$work/dense"
  "$BUNDLE/run" twinspan-exl3 dequant-model --in "$DEQUANT" --out "$work/dense" --dtype f32
fi
rm -rf "$work/$stage"
python3 "$here/recipe.py" "$stage" --out "$work/$stage" "$@" 2>&1 | tee "$out/$stage.log"
tar -C "$work/$stage" -cf - . | split -b 15M -d - "$out/$stage.tar.part-"
ls -la "$out"
