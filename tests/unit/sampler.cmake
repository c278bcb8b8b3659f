twinspan_test(sampler_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/sampler_test.cc
  LIBS twinspan_sampler LABELS unit asan)
