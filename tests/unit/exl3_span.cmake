# The CPU twin of the CUDA span head (kernels/cpu/exl3_span_linear).
twinspan_test(cpu_exl3_span_linear_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/cpu_exl3_span_linear_test.cc
  LIBS twinspan_exl3_fixture twinspan_exl3 twinspan_cpu
  LABELS unit asan)
