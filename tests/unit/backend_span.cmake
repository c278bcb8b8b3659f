# The span-head ops of backend.h (SpanLinear, UploadSpanHead, SpanIds) on the CPU backend.
twinspan_test(cpu_backend_span_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/cpu_backend_span_test.cc
  LIBS twinspan_exl3_fixture twinspan_cpu_backend twinspan_exl3 twinspan_safetensors LABELS unit asan)
