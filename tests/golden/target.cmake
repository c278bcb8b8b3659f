twinspan_test(target_qwen3_golden_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/target_qwen3_golden_test.cc
  LIBS twinspan_target LABELS golden)
