twinspan_test(status_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/status_test.cc LIBS twinspan_base
  LABELS unit asan)
