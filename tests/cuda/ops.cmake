# GPU tests of the CUDA ops and backend (kernels/cuda): built whenever the CUDA backend is, never
# registered with ctest (CI has no GPU); scripts/gpu-check.sh runs every *_cuda_test.
if(TARGET twinspan_cuda)
  add_library(twinspan_cuda_testing STATIC ${CMAKE_CURRENT_LIST_DIR}/cuda_test_util.cc
    ${CMAKE_CURRENT_LIST_DIR}/cuda_test_main.cc)
  target_link_libraries(twinspan_cuda_testing PUBLIC twinspan_cuda GTest::gtest)
  foreach(test embedding_norm elementwise attention linear topk_sample cuda_backend)
    add_executable(${test}_cuda_test ${CMAKE_CURRENT_LIST_DIR}/${test}_cuda_test.cc)
    target_link_libraries(${test}_cuda_test PRIVATE twinspan_cuda_testing twinspan_cpu
      twinspan_sampler)
    twinspan_test_optimize(${test}_cuda_test)
  endforeach()
  target_link_libraries(cuda_backend_cuda_test PRIVATE twinspan_exl3_fixture twinspan_cpu_backend twinspan_safetensors
    twinspan_exl3)
endif()

# The target families on the CUDA backend against golden data, and the prefix cache's resumed ==
# fresh there (needs the target library).
if(TARGET twinspan_cuda AND TARGET twinspan_target)
  foreach(test target target_exl3 prefix_cache)
    add_executable(${test}_cuda_test ${CMAKE_CURRENT_LIST_DIR}/${test}_cuda_test.cc)
    target_link_libraries(${test}_cuda_test PRIVATE twinspan_cuda_testing twinspan_target
      twinspan_cpu_backend twinspan_testing)
    twinspan_test_optimize(${test}_cuda_test)
  endforeach()
endif()
