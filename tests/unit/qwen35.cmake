if(TARGET twinspan_cpu)
  twinspan_test(qwen35_ops_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/qwen35_ops_test.cc
    LIBS twinspan_cpu LABELS unit asan)
endif()
if(TARGET twinspan_target)
  twinspan_test(qwen35_model_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/qwen35_model_test.cc
    LIBS twinspan_target LABELS unit asan)
endif()
if(TARGET twinspan_target)
  twinspan_test(qwen35_gdn_block_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/qwen35_gdn_block_test.cc
    LIBS twinspan_target LABELS unit asan)
endif()
