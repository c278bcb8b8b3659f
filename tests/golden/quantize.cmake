# The EXL3 quantizer against exllamav3's on the golden linears (shared/golden/exl3_linear).
if(TARGET twinspan_quantize_tool)
  twinspan_test(quantize_golden_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/quantize_golden_test.cc
    LIBS twinspan_quantize_tool LABELS golden)
endif()
