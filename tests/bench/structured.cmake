# Structured output's mask cost per row (Google Benchmark), run by hand; figures go to docs/perf.md.
if(TARGET twinspan_structured)
  add_executable(structured_bench ${CMAKE_CURRENT_LIST_DIR}/structured_bench.cc)
  target_link_libraries(structured_bench PRIVATE twinspan_structured twinspan_tokenizer
    twinspan_cpu benchmark::benchmark)
  target_compile_definitions(structured_bench PRIVATE
    TWINSPAN_BENCH_TOKENIZER_DIR="${TWINSPAN_GOLDEN_DIR}/exl3_qwen3_tiny")
endif()
