# One verify round of four streams, batched against one forward per stream (run by hand;
# docs/perf.md).
if(TARGET twinspan_target)
  add_executable(target_batch_bench ${CMAKE_CURRENT_LIST_DIR}/target_batch_bench.cc)
  target_link_libraries(target_batch_bench PRIVATE twinspan_target benchmark::benchmark)
endif()
