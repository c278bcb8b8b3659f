if(TARGET twinspan_target)
  twinspan_test(qwen35_hf_golden_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/qwen35_hf_test.cc
    LIBS twinspan_target LABELS golden)
  twinspan_test(qwen35_loader_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/qwen35_loader_test.cc
    LIBS twinspan_target LABELS golden)
endif()
if(TARGET twinspan_target)
  twinspan_test(qwen35_exl3_golden_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/qwen35_exl3_test.cc
    LIBS twinspan_target LABELS golden)
endif()
