#!/usr/bin/env bash
# Runs one libFuzzer binary over its committed corpus without writing to it: inputs that add
# coverage go to FUZZ_NEW_INPUTS_DIR (default: a scratch folder removed afterwards); a crash, leak
# or timeout fails the run and its input is kept as FUZZ_ARTIFACT_DIR/<fuzzer>-crash-... (default:
# the current folder).
#   run_fuzzer.sh FUZZER CORPUS [libFuzzer flags...]
set -euo pipefail
fuzzer=$1
corpus=$2
shift 2
if [ -n "${FUZZ_NEW_INPUTS_DIR:-}" ]; then
  scratch=$FUZZ_NEW_INPUTS_DIR
  mkdir -p "$scratch"
else
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
fi
artifacts=${FUZZ_ARTIFACT_DIR:-$PWD}
mkdir -p "$artifacts"
# -timeout: an input that takes this long is a hang; -rss_limit_mb: the parsers' inputs are small.
"$fuzzer" -artifact_prefix="$artifacts/$(basename "$fuzzer")-" -timeout=25 -rss_limit_mb=2560 \
  -print_final_stats=1 "$@" "$scratch" "$corpus"
