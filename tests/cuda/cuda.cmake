# GPU tests: built whenever the CUDA backend is, never registered with ctest (CI has no GPU);
# scripts/gpu-check.sh runs them on a GPU machine.
if(TARGET twinspan_cuda AND TARGET twinspan_exl3)
  add_executable(exl3_linear_cuda_test ${CMAKE_CURRENT_LIST_DIR}/exl3_linear_cuda_test.cc)
  target_link_libraries(exl3_linear_cuda_test PRIVATE twinspan_exl3_fixture twinspan_cuda twinspan_safetensors
    twinspan_exl3 twinspan_cpu twinspan_testing GTest::gtest_main)
  twinspan_test_optimize(exl3_linear_cuda_test)
  # The layout and lane-state logic of those kernels, simulated on the CPU: runs under ctest.
  twinspan_test(exl3_layout_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/exl3_layout_test.cc
    LIBS twinspan_cuda twinspan_exl3
    LABELS unit)
  # TWINSPAN_CUDA_PDL's parse: plain C++, runs under ctest.
  twinspan_test(pdl_scope_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/pdl_scope_test.cc
    LIBS twinspan_cuda
    LABELS unit)
endif()
