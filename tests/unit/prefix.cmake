# The prompt-prefix cache's block tree (services/prefix), shared by the target and the drafter.
if(TARGET twinspan_prefix)
  twinspan_test(prefix_tree_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/prefix_tree_test.cc
    LIBS twinspan_prefix LABELS unit asan)
endif()
