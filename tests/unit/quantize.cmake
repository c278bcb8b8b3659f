# The EXL3 quantizer: the CPU trellis encoder, tile packing, the per-linear recipe.
twinspan_test(trellis_encode_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/quantize/trellis_encode_test.cc
  LIBS twinspan_cpu twinspan_exl3
  LABELS unit)
twinspan_test(tile_pack_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/quantize/tile_pack_test.cc
  LIBS twinspan_exl3
  LABELS unit asan)
twinspan_test(exl3_quantize_dense_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/quantize/dense_test.cc
  LIBS twinspan_exl3_quantize
  LABELS unit asan)
twinspan_test(exl3_quantize_linear_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/quantize/quantize_linear_test.cc
  LIBS twinspan_exl3_fixture twinspan_exl3_quantize twinspan_safetensors
  LABELS unit)
twinspan_test(quantize_tool_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/quantize/quantize_tool_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/quantize/tiny_hf_checkpoint.cc
  LIBS twinspan_quantize_tool
  LABELS unit)
# --device as a build without CUDA opens it, whatever this build has.
twinspan_test(quantize_open_encoder_cpu_only_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/quantize/open_encoder_test.cc
  LIBS twinspan_quantize_encoder_cpu_only
  LABELS unit asan)
