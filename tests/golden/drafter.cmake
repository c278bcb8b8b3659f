# Drafter golden tests against z-lab/dflash reference outputs (golden/README.md sections 7 and 8).
if(TARGET twinspan_drafter)
  twinspan_test(drafter_golden_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/drafter/dflash2_forward_golden_test.cc
            ${CMAKE_CURRENT_LIST_DIR}/drafter/dflash_propose_golden_test.cc
            ${CMAKE_CURRENT_LIST_DIR}/drafter/drafted_equals_plain_test.cc
            ${CMAKE_CURRENT_LIST_DIR}/drafter/draft_session_golden_test.cc
            ${CMAKE_CURRENT_LIST_DIR}/drafter/exl3_target_head_golden_test.cc
            ${CMAKE_CURRENT_LIST_DIR}/drafter/draft_tree_golden_test.cc
    LIBS twinspan_drafter twinspan_speculative_loop twinspan_safetensors
    LABELS golden)
endif()
if(TARGET twinspan-draft)
  twinspan_test(drafter_tool_golden_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/drafter/draft_tool_golden_test.cc
    LIBS twinspan_safetensors absl::strings
    LABELS golden)
  target_compile_definitions(drafter_tool_golden_test PRIVATE
    TWINSPAN_DRAFT_BINARY="$<TARGET_FILE:twinspan-draft>")
  add_dependencies(drafter_tool_golden_test twinspan-draft)
endif()
