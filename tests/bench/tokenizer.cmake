# Tokenizer throughput (Google Benchmark), run by hand; figures go to docs/perf.md.
add_executable(tokenizer_bench ${CMAKE_CURRENT_LIST_DIR}/tokenizer_bench.cc)
target_link_libraries(tokenizer_bench PRIVATE twinspan_tokenizer benchmark::benchmark)
target_compile_definitions(tokenizer_bench PRIVATE
  TWINSPAN_BENCH_TOKENIZER_DIR="${TWINSPAN_GOLDEN_DIR}/exl3_qwen3_tiny")
