twinspan_test(perplexity_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/perplexity_test.cc
  LIBS twinspan_perplexity_tool LABELS unit)
