# twinspan-quantize: HF qwen3 / qwen3_5 checkpoints to EXL3 (tools/quantize/), and
# twinspan-quantize-compare, our proxy error against exllamav3's on the golden linears.
add_library(twinspan_quantize_tool STATIC
  ${CMAKE_CURRENT_LIST_DIR}/quantize/calibration.cc
  ${CMAKE_CURRENT_LIST_DIR}/quantize/capture_backend.cc
  ${CMAKE_CURRENT_LIST_DIR}/quantize/exl3_writer.cc
  ${CMAKE_CURRENT_LIST_DIR}/quantize/golden_linears.cc
  ${CMAKE_CURRENT_LIST_DIR}/quantize/golden_logits.cc
  ${CMAKE_CURRENT_LIST_DIR}/quantize/model_plan.cc
  ${CMAKE_CURRENT_LIST_DIR}/quantize/progress.cc
  ${CMAKE_CURRENT_LIST_DIR}/quantize/quantize_model.cc
  ${CMAKE_CURRENT_LIST_DIR}/quantize/quantize_options.cc)
target_link_libraries(twinspan_quantize_tool PUBLIC twinspan_exl3_quantize twinspan_target
  twinspan_tokenizer twinspan_safetensors twinspan_files nlohmann_json::nlohmann_json)
add_executable(twinspan-quantize ${CMAKE_CURRENT_LIST_DIR}/quantize/main.cc)
target_link_libraries(twinspan-quantize PRIVATE twinspan_quantize_tool CLI11::CLI11)
add_executable(twinspan-quantize-compare ${CMAKE_CURRENT_LIST_DIR}/quantize/compare_main.cc)
target_link_libraries(twinspan-quantize-compare PRIVATE twinspan_quantize_tool CLI11::CLI11)
