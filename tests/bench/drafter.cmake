# The demo drafter's step, full head against two-span (run by hand; docs/perf.md).
if(TARGET twinspan_drafter)
  add_executable(drafter_step_bench ${CMAKE_CURRENT_LIST_DIR}/drafter_step_bench.cc)
  target_link_libraries(drafter_step_bench PRIVATE twinspan_drafter benchmark::benchmark)
  target_compile_definitions(drafter_step_bench PRIVATE
    TWINSPAN_DEMO_DIR="${CMAKE_SOURCE_DIR}/models/demo")
endif()
