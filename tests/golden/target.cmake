twinspan_test(target_qwen3_golden_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/target_qwen3_golden_test.cc
  LIBS twinspan_target LABELS golden)
twinspan_test(target_logits_tool_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/target_logits_tool_test.cc
  LIBS twinspan_safetensors LABELS golden)
target_compile_definitions(target_logits_tool_test PRIVATE
  TWINSPAN_LOGITS_BINARY="$<TARGET_FILE:twinspan-logits>")
add_dependencies(target_logits_tool_test twinspan-logits)
twinspan_test(target_batch_golden_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/target_batch_golden_test.cc
  LIBS twinspan_target LABELS golden)
