# EXL3 against exllamav3's own output (shared/golden/exl3_*; see its README for keys/tolerances).
twinspan_test(exl3_decode_golden_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/exl3_decode_golden_test.cc
  LIBS twinspan_exl3
  LABELS golden)
twinspan_test(exl3_linear_golden_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/exl3_linear_golden_test.cc
  LIBS twinspan_cpu twinspan_exl3
  LABELS golden)
twinspan_test(exl3_checkpoint_golden_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/exl3_checkpoint_golden_test.cc
  LIBS twinspan_exl3_tools twinspan_config
  LABELS golden)
# The command line on real checkpoints: must exit 0 and list the head; a missing one exits 1 and
# names the path.
foreach(model exl3_qwen3_tiny exl3_qwen3_5_tiny)
  add_test(NAME exl3_tool_inspect_${model}
    COMMAND ${TWINSPAN_RUN_CHECK} --exit 0 --match "^lm_head +[0-9]+ x [0-9]+ +6 mul1"
            -- $<TARGET_FILE:twinspan-exl3> inspect {golden}/${model})
  set_tests_properties(exl3_tool_inspect_${model} PROPERTIES LABELS golden)
endforeach()
add_test(NAME exl3_tool_rejects_missing
  COMMAND ${TWINSPAN_RUN_CHECK} --exit 1
          --match "^twinspan-exl3: .*/no-such-checkpoint: no such file or directory$"
          -- $<TARGET_FILE:twinspan-exl3> inspect ${CMAKE_CURRENT_BINARY_DIR}/no-such-checkpoint)
set_tests_properties(exl3_tool_rejects_missing PROPERTIES LABELS golden)
if(TARGET twinspan_target)
  twinspan_test(exl3_dequant_model_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/exl3_dequant_model_test.cc
    LIBS twinspan_exl3_tools twinspan_target nlohmann_json::nlohmann_json
    LABELS golden)
endif()
