# The demo pair's round steps on the CPU: target forwards of 1..16 rows and the drafter's block
# (run by hand; docs/perf.md).
if(TARGET twinspan_target AND TARGET twinspan_drafter)
  add_executable(demo_round_bench ${CMAKE_CURRENT_LIST_DIR}/demo_round_bench.cc)
  target_link_libraries(demo_round_bench PRIVATE twinspan_target twinspan_drafter
    benchmark::benchmark)
  target_compile_definitions(demo_round_bench PRIVATE
    TWINSPAN_DEMO_DIR="${CMAKE_SOURCE_DIR}/models/demo")
endif()
