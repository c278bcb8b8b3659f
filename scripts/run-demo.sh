#!/usr/bin/env bash
# The main job on the embedded demo model: install what is missing, build, start twinspan-drafter,
# twinspan-target and twinspan-router on loopback with the trained pair in models/demo, send one chat
# request through the router, print the reply with its tokens per round, and stop everything it
# started.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Only the three services: the tests and tools are not needed to answer a request.
TARGETS="twinspan-drafter twinspan-target twinspan-router" scripts/build.sh
build=${BUILD_DIR:-build}
work=$(mktemp -d "${TMPDIR:-/tmp}/twinspan-demo.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  echo "run-demo: stopped every process it started (their logs: $work)"
}
trap cleanup EXIT

models=models/demo
if [ ! -f $models/target/config.json ] || [ ! -f $models/drafter/config.json ]; then
  echo "run-demo: $models/target or $models/drafter is missing (the trained pair is part of the checkout)" >&2
  exit 1
fi
echo "run-demo: serving the trained demo pair in $models"

# Starts a service in the background and sets $port to the gRPC port it printed.
start() {
  local name=$1
  shift
  "$@" >"$work/$name.out" 2>"$work/$name.log" &
  pids+=($!)
  for _ in $(seq 1 600); do
    if grep -q "listening grpc=" "$work/$name.out" 2>/dev/null; then
      port=$(sed -n 's/.*listening grpc=\([0-9]*\).*/\1/p' "$work/$name.out" | head -1)
      echo "run-demo: $name listening on 127.0.0.1:$port"
      return 0
    fi
    if ! kill -0 "${pids[-1]}" 2>/dev/null; then
      echo "run-demo: $name exited; its log:" >&2
      cat "$work/$name.log" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "run-demo: $name did not start in 60 s" >&2
  return 1
}

start drafter "$build/twinspan-drafter" --model "$models/drafter" --target-model "$models/target" \
  --head-variant two-span --listen 127.0.0.1:0
drafter_port=$port
start target "$build/twinspan-target" --model "$models/target" --drafter "127.0.0.1:$drafter_port" \
  --listen 127.0.0.1:0 --parallel 4 --context 2048
target_port=$port
cat >"$work/router.json" <<JSON
{"pools": [{"variant": "two-span", "weight": 1, "workers": ["127.0.0.1:$target_port"]}],
 "health_interval_ms": 200}
JSON
start router "$build/twinspan-router" --config "$work/router.json" --listen 127.0.0.1:0
router_port=$port
# Wait until the target's drafter handshake is done, so the demo shows drafted rounds.
for _ in $(seq 1 100); do
  grep -q "ready (head" "$work/target.log" && break
  sleep 0.1
done
/usr/bin/python3 scripts/demo_client.py "127.0.0.1:$router_port" proto \
  "${DEMO_PROMPT:-Can you write \`is_prime(n)\` for me? Return True when n is prime.}" "${DEMO_MAX_TOKENS:-160}"
