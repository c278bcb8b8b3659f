# Services: the lane engine's exactness contract in one process, then real processes on loopback.
if(NOT TARGET twinspan_engine)
  return()
endif()
add_library(twinspan_toy_models STATIC ${CMAKE_CURRENT_LIST_DIR}/toy_models.cc)
target_link_libraries(twinspan_toy_models PUBLIC twinspan_engine)

twinspan_test(engine_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/engine_test.cc
  LIBS twinspan_engine twinspan_toy_models LABELS integration services)

if(TARGET twinspan_rpc)
  twinspan_test(draft_plane_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/draft_plane_test.cc
    LIBS twinspan_rpc twinspan_toy_models LABELS integration services)
endif()
