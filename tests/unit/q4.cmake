# The affine 4-bit linear (kernels/cpu/q4_linear): format, quantization bound, parity with Linear.
twinspan_test(q4_linear_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/q4_linear_test.cc
  LIBS twinspan_cpu
  LABELS unit asan)
