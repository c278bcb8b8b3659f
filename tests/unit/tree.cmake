# Tree drafts: the tree ops against their chain twins, the target's tree verify and path commit.
twinspan_test(tree_ops_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/tree_ops_test.cc
  LIBS twinspan_cpu LABELS unit asan)
twinspan_test(target_tree_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/target_tree_test.cc
  LIBS twinspan_target nlohmann_json::nlohmann_json LABELS unit asan)
