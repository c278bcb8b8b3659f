# twinspan_prefix_bench: time to first token of a long prompt resumed from the target's prefix
# cache against fresh prompts, through the serving stack (no gRPC), on any --device
# (tools/prefix/prefix_ttft_bench.cc; docs/perf.md). Run by hand and by scripts/gpu-check.sh.
if(TARGET twinspan_target_server)
  add_executable(twinspan_prefix_bench ${CMAKE_CURRENT_LIST_DIR}/prefix/prefix_ttft_bench.cc)
  target_link_libraries(twinspan_prefix_bench PRIVATE twinspan_target_server CLI11::CLI11)
endif()
