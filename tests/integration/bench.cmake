# twinspan-bench against the real services on loopback: the demo pair written by make-demo, drafter +
# target + router on free ports, one small cell through the router with every exactness check.
if(TARGET twinspan-target AND TARGET twinspan-drafter AND TARGET twinspan-router AND TARGET make-demo)
  set(bench_router_json
    "{\"pools\": [{\"variant\": \"two-span\", \"weight\": 1, \"workers\": [\"{target}\"]}], \"health_interval_ms\": 200}")
  add_test(NAME bench_integration_test
    COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/bench/services_check.py
      --run "$<TARGET_FILE:make-demo> --out {work}/models"
      --service "drafter=$<TARGET_FILE:twinspan-drafter> --model {work}/models/drafter --target-model {work}/models/target --head-variant two-span --listen 127.0.0.1:0"
      --service "target=$<TARGET_FILE:twinspan-target> --model {work}/models/target --drafter {drafter} --listen 127.0.0.1:0 --parallel 4 --context 2048"
      --write "router.json=${bench_router_json}"
      --service "router=$<TARGET_FILE:twinspan-router> --config {work}/router.json --listen 127.0.0.1:0"
      --bench ${CMAKE_BINARY_DIR}/bin/twinspan-bench
      --bench-args "--cells code --modes greedy,sampled --levels 1,2 --tokens 16 --reps 2 --warmup 1 --alone --serial --require-drafter --connect-timeout 60")
  set_tests_properties(bench_integration_test PROPERTIES TIMEOUT 900 LABELS "integration;services;python"
    ENVIRONMENT "TWINSPAN_BENCH_STUBS=${CMAKE_BINARY_DIR}/bench-stubs")
endif()

# The committed trained pair (models/demo): drafting must pay, above a floor set from the measured
# tokens per round (docs/demo-model.md), and stay exact (alone, serial, repeat).
if(TARGET twinspan-target AND TARGET twinspan-drafter AND TARGET twinspan-router)
  set(demo ${CMAKE_SOURCE_DIR}/models/demo)
  add_test(NAME bench_demo_pair_test
    COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/bench/services_check.py
      --service "drafter=$<TARGET_FILE:twinspan-drafter> --model ${demo}/drafter --target-model ${demo}/target --head-variant two-span --listen 127.0.0.1:0"
      --service "target=$<TARGET_FILE:twinspan-target> --model ${demo}/target --drafter {drafter} --listen 127.0.0.1:0 --parallel 4 --context 2048"
      --write "router.json=${bench_router_json}"
      --service "router=$<TARGET_FILE:twinspan-router> --config {work}/router.json --listen 127.0.0.1:0"
      --bench ${CMAKE_BINARY_DIR}/bin/twinspan-bench
      --bench-args "--prompts ${CMAKE_CURRENT_LIST_DIR}/demo_prompts.jsonl --modes greedy,sampled --levels 1,2 --tokens 64 --reps 2 --warmup 1 --alone --serial --require-drafter --connect-timeout 60"
      --min-tokens-per-round greedy=2.4 --min-tokens-per-round sampled=2.8)
  set_tests_properties(bench_demo_pair_test PROPERTIES TIMEOUT 900 LABELS "integration;services;python"
    ENVIRONMENT "TWINSPAN_BENCH_STUBS=${CMAKE_BINARY_DIR}/bench-stubs")
endif()
