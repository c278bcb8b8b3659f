# The quantizer's CUDA tile encoder against the CPU one (kernels/cuda/trellis_encode).
if(TARGET twinspan_cuda)
  add_executable(trellis_encode_cuda_test ${CMAKE_CURRENT_LIST_DIR}/trellis_encode_cuda_test.cc)
  target_link_libraries(trellis_encode_cuda_test PRIVATE twinspan_cuda_testing twinspan_cpu)
  twinspan_test_optimize(trellis_encode_cuda_test)
  # The quantizer's TileEncoder on the GPU, and QuantizeLinear through it, against the CPU's.
  add_executable(cuda_tile_encoder_cuda_test
    ${CMAKE_CURRENT_LIST_DIR}/cuda_tile_encoder_cuda_test.cc)
  target_link_libraries(cuda_tile_encoder_cuda_test PRIVATE twinspan_cuda_testing
    twinspan_exl3_quantize)
  twinspan_test_optimize(cuda_tile_encoder_cuda_test)
endif()
