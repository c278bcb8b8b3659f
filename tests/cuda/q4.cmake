# GPU test of the Q4 linear (kernels/cuda/q4_linear) against cpu::Q4Linear; run by
# scripts/gpu-check.sh, never by ctest.
if(TARGET twinspan_cuda AND TARGET twinspan_cpu)
  add_executable(q4_linear_cuda_test ${CMAKE_CURRENT_LIST_DIR}/q4_linear_cuda_test.cc)
  target_link_libraries(q4_linear_cuda_test PRIVATE twinspan_cuda twinspan_cpu GTest::gtest_main)
  twinspan_test_optimize(q4_linear_cuda_test)
endif()
