# Drafter ops and model: unit tests (no golden data).
twinspan_test(drafter_ops_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/drafter/topk_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/drafter/dynamic_conv_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/drafter/candidate_selector_test.cc
  LIBS twinspan_cpu
  LABELS unit asan)
