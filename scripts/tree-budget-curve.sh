#!/usr/bin/env bash
# tree-budget-curve.sh: tokens per round of the demo pair (models/demo) against the drafter's tree
# node budget (docs/perf.md, "Tree drafts"). For each budget it starts twinspan-serve (target and
# in-process drafter, one stream) on loopback, runs twinspan-bench over held-out code and prose
# prompts, greedy and sampled, and stops the server; then it prints one table row per budget, kind
# and mode: tokens per round (mean over prompts and pooled), drafts and accepted depth per round,
# and the median time per output token with the load average around the budget's run (a count such
# as tokens per round does not depend on load; the time does). Budget 0 is the selector walk's
# chain. Every proposal is verified (--draft-window all): the adaptive window a CPU target uses by
# default would cut the trees being measured. A budget whose results are complete in OUT is kept,
# so an interrupted curve resumes.
#   BUDGETS="0 1 4 8 15 31" TOKENS=128 CODE=12 PROSE=12 THREADS=2 OUT=/tmp/tree-curve \
#     scripts/tree-budget-curve.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
out=${OUT:-${TMPDIR:-/tmp}/tree-curve}
budgets=${BUDGETS:-0 1 4 8 15 31}
tokens=${TOKENS:-128}
threads=${THREADS:-2}
for bin in "$build/twinspan-serve" "$build/bin/twinspan-bench"; do
  if [ ! -x "$bin" ]; then
    echo "tree-budget-curve: $bin is missing (TARGETS=\"twinspan-serve twinspan-bench\" scripts/build.sh)" >&2
    exit 1
  fi
done
mkdir -p "$out"
pid=""
cleanup() {
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

prompts=$out/prompts.jsonl
python3 - "$prompts" "${CODE:-12}" "${PROSE:-12}" <<'PY'
import json, sys
path, n_code, n_prose = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
code = [l for l in open("models/demo/heldout/prompts.jsonl") if json.loads(l)["kind"] == "code"]
prose = open("tools/bench/prompts/demo_prose.jsonl").readlines()
with open(path, "w") as f:
    f.writelines(code[:n_code] + prose[:n_prose])
PY
cells=$((2 * $(wc -l <"$prompts")))  # one per prompt and mode

for budget in $budgets; do
  results=$out/budget-$budget.jsonl
  if [ -f "$results" ] && [ "$(wc -l <"$results")" -eq "$cells" ]; then
    echo "tree-budget-curve: budget $budget: keeping $results" >&2
    continue
  fi
  log=$out/serve-$budget.log
  "$build/twinspan-serve" --model models/demo/target --drafter-model models/demo/drafter \
    --head-variant two-span --draft-tree-nodes "$budget" --draft-window all --listen 127.0.0.1:0 \
    --metrics 127.0.0.1:0 --parallel 1 --context 2048 --threads "$threads" >"$log" 2>&1 &
  pid=$!
  port=""
  for _ in $(seq 1 600); do
    port=$(sed -n 's/.*listening grpc=\([0-9]*\).*/\1/p' "$log" | head -1)
    [ -n "$port" ] && break
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "tree-budget-curve: twinspan-serve exited; its log:" >&2
      cat "$log" >&2
      exit 1
    fi
    sleep 0.1
  done
  if [ -z "$port" ]; then
    echo "tree-budget-curve: twinspan-serve did not start in 60 s (log: $log)" >&2
    exit 1
  fi
  echo "tree-budget-curve: budget $budget: twinspan-serve on 127.0.0.1:$port" >&2
  cut -d' ' -f1 /proc/loadavg >"$out/load-$budget.txt"
  "$build/bin/twinspan-bench" --target "127.0.0.1:$port" --prompts "$prompts" \
    --modes greedy,sampled --levels 1 --tokens "$tokens" --reps 1 --warmup 1 \
    --require-drafter --jsonl "$results.part" >/dev/null
  cut -d' ' -f1 /proc/loadavg >>"$out/load-$budget.txt"
  mv "$results.part" "$results"
  cleanup
  pid=""
done

# shellcheck disable=SC2086  # one argument per budget
python3 - "$out" $budgets <<'PY'
import json, os, statistics, sys
out, budgets = sys.argv[1], sys.argv[2:]
print("| budget | kind | mode | tokens/round (mean over prompts) | pooled | drafts/round "
      "| accepted/round | degraded requests | ms per token (median) | load avg (start, end) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for budget in budgets:
    cells = [json.loads(l) for l in open(f"{out}/budget-{budget}.jsonl")]
    load_file = f"{out}/load-{budget}.txt"
    load = ", ".join(open(load_file).read().split()) if os.path.exists(load_file) else "n/a"
    for kind in ("code", "prose"):
        for mode in ("greedy", "sampled"):
            sel = [c for c in cells if c["kind"] == kind and c["mode"] == mode]
            if not sel:
                continue
            mean = sum(c["tokens_per_round"] for c in sel) / len(sel)
            rounds = sum(c["rounds"] for c in sel)
            tokens = sum(c["tokens_per_round"] * c["rounds"] for c in sel)
            ms = statistics.median(1000.0 / c["decode_tok_s"] for c in sel)
            print(f"| {budget} | {kind} | {mode} | {mean:.3f} | {tokens / rounds:.3f} | "
                  f"{sum(c['drafted'] for c in sel) / rounds:.2f} | "
                  f"{sum(c['accepted'] for c in sel) / rounds:.2f} | "
                  f"{sum(c['draft_degraded'] for c in sel)} | {ms:.1f} | {load} |")
PY
