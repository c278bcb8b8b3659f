# The CPU EXL3 linear at the demo target's shapes and a whole random EXL3 demo-shaped target
# forward (run by hand; docs/perf.md).
if(TARGET twinspan_target)
  add_executable(exl3_linear_bench ${CMAKE_CURRENT_LIST_DIR}/exl3_linear_bench.cc)
  target_link_libraries(exl3_linear_bench PRIVATE twinspan_exl3_fixture twinspan_target twinspan_exl3 twinspan_cpu
    twinspan_safetensors benchmark::benchmark GTest::gtest)
endif()
