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
# --device: the tile encoder it names. The CUDA one is compiled only with the CUDA backend; the
# _cpu_only library is the same layer as a build without CUDA sees it, for the test that such a
# build refuses cuda:N.
add_library(twinspan_quantize_encoder_cpu_only STATIC
  ${CMAKE_CURRENT_LIST_DIR}/quantize/open_encoder_cpu.cc)
target_link_libraries(twinspan_quantize_encoder_cpu_only PUBLIC twinspan_exl3_quantize)
if(TARGET twinspan_cuda)
  add_library(twinspan_quantize_encoder STATIC
    ${CMAKE_CURRENT_LIST_DIR}/quantize/open_encoder_cuda.cc)
  target_link_libraries(twinspan_quantize_encoder PUBLIC twinspan_exl3_quantize twinspan_cuda)
  target_link_libraries(twinspan_quantize_tool PUBLIC twinspan_quantize_encoder)
else()
  target_link_libraries(twinspan_quantize_tool PUBLIC twinspan_quantize_encoder_cpu_only)
endif()
add_executable(twinspan-quantize ${CMAKE_CURRENT_LIST_DIR}/quantize/main.cc)
target_link_libraries(twinspan-quantize PRIVATE twinspan_quantize_tool CLI11::CLI11)
add_executable(twinspan-quantize-compare ${CMAKE_CURRENT_LIST_DIR}/quantize/compare_main.cc)
target_link_libraries(twinspan-quantize-compare PRIVATE twinspan_quantize_tool CLI11::CLI11)
