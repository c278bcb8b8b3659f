# GPU tests of the Gated DeltaNet and drafter ops (kernels/cuda/{causal_conv1d,gated_delta_net*,
# gated_rms_norm,dynamic_conv,candidate_selector}): built with the CUDA backend, never registered
# with ctest (CI has no GPU); scripts/gpu-check.sh runs every *_cuda_test.
if(TARGET twinspan_cuda AND TARGET twinspan_cpu)
  # gdn_testing.cc also holds main(): each binary prints one summary line last.
  add_library(twinspan_gdn_cuda_testing STATIC ${CMAKE_CURRENT_LIST_DIR}/gdn_testing.cc)
  target_link_libraries(twinspan_gdn_cuda_testing PUBLIC twinspan_cuda twinspan_cpu GTest::gtest)
  foreach(op causal_conv1d gated_delta_net gated_delta_net_chunked gated_rms_norm dynamic_conv
      candidate_selector)
    add_executable(${op}_cuda_test ${CMAKE_CURRENT_LIST_DIR}/${op}_cuda_test.cc)
    target_link_libraries(${op}_cuda_test PRIVATE twinspan_gdn_cuda_testing)
    twinspan_test_optimize(${op}_cuda_test)
  endforeach()
endif()

# The tree ops through the CUDA backend against their chain twins and the CPU backend.
if(TARGET twinspan_cuda AND TARGET twinspan_cpu_backend)
  add_executable(tree_ops_cuda_test ${CMAKE_CURRENT_LIST_DIR}/tree_ops_cuda_test.cc)
  target_link_libraries(tree_ops_cuda_test PRIVATE twinspan_gdn_cuda_testing twinspan_cpu_backend)
  twinspan_test_optimize(tree_ops_cuda_test)
endif()
