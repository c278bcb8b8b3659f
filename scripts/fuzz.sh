#!/usr/bin/env bash
# The long fuzz campaign beside CI: builds the libFuzzer targets with clang-14, AddressSanitizer and
# UBSan into build-fuzz/ and runs each for RUNS executions (default 10 million), one at a time,
# over a copy of its committed corpus. Prints one line per target (executions, coverage, features,
# corpus size, wall time) and keeps each log in fuzz-logs/. A crash stops that target; its input
# is kept in fuzz-logs/ (add it to tests/fuzz/corpus/<target>/ once fixed, as a regression input).
#   scripts/fuzz.sh [TARGET...]          all targets when none is named
#   RUNS=100000 NICE=19 scripts/fuzz.sh  fewer runs; run at a lower priority
#   MAX_SECONDS=2700 scripts/fuzz.sh     also stop each target after this long
#   MERGE=1 scripts/fuzz.sh TARGET       also merge inputs that add coverage into the corpus
#   WORKERS=16 scripts/fuzz.sh           split each target's RUNS over this many processes (seeds
#                                        1..N, one shared folder of new inputs); the line sums them
#   FUZZ_PREBUILT=1 FUZZ_BUILD_DIR=DIR   run the fuzzers already in DIR/tests/fuzz (with its
#                                        fuzz_targets.txt), e.g. on a machine without our compilers
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-10000000}
build=${FUZZ_BUILD_DIR:-build-fuzz}
logs=${FUZZ_LOG_DIR:-fuzz-logs}
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
workers=${WORKERS:-1}
if [ -z "${FUZZ_PREBUILT:-}" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja "${flags[@]}" -DTWINSPAN_FUZZ=ON \
    -DTWINSPAN_SANITIZE=address,undefined -DTWINSPAN_CUDA=OFF ${FUZZ_CMAKE_ARGS:-} >/dev/null
fi
list=$build/tests/fuzz/fuzz_targets.txt  # "<target> <dictionary>" per line, written by CMake
mapfile -t all < <(cut -d' ' -f1 "$list")
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
[ -n "${FUZZ_PREBUILT:-}" ] ||
  cmake --build "$build" -j "${JOBS:-$(nproc)}" --target "${targets[@]/%/_fuzzer}"
mkdir -p "$logs"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
for t in "${targets[@]}"; do
  dict=$(awk -v t="$t" '$1 == t { print $2 }' "$list")
  dict_args=()
  [ -z "$dict" ] || dict_args=(-dict="tests/fuzz/dict/$dict")
  start=$(date +%s)
  status=0
  pids=()
  for ((w = 1; w <= workers; w++)); do
    log=$logs/$t.log
    [ "$workers" -eq 1 ] || log=$logs/$t.$w.log
    FUZZ_ARTIFACT_DIR="$logs" FUZZ_NEW_INPUTS_DIR="$logs/$t-new" nice -n "${NICE:-0}" \
      tests/fuzz/run_fuzzer.sh "$build/tests/fuzz/${t}_fuzzer" "tests/fuzz/corpus/$t" \
      -runs=$(((runs + workers - 1) / workers)) ${MAX_SECONDS:+-max_total_time=$MAX_SECONDS} \
      -seed="$w" "${dict_args[@]}" >"$log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
  [ "$workers" -eq 1 ] || cat "$logs/$t".[0-9]*.log >"$logs/$t.log"
  if [ -n "${MERGE:-}" ]; then  # keep what the run learned: inputs that add coverage
    "$build/tests/fuzz/${t}_fuzzer" -merge=1 "${dict_args[@]}" "tests/fuzz/corpus/$t" \
      "$logs/$t-new" >>"$logs/$t.log" 2>&1 || true
  fi
  wall=$(( $(date +%s) - start ))
  # The last status line ("#N ... cov: C ft: F corp: U/S ...") and libFuzzer's final stats.
  last=$(tr '\r' '\n' <"$logs/$t.log" | grep -E '^#[0-9]+' | tail -1 |
    grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*' || true)
  # Summed over the workers' final stats (one of each per worker).
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.log" | awk '{n += $1} END {print n}')
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$logs/$t.log" | awk '{n += $1} END {print n}')
  echo "$t: status $status, ${execs:-?} executions (${rate:-?}/s) by $workers process(es)," \
    "${last:-no status line}, ${wall} s" | tee -a "$logs/summary.txt"
done
