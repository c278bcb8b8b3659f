# twinspan-probe: gRPC health check and one Generate request, for images and clusters.
if(TARGET twinspan_health_proto AND TARGET twinspan_proto)
  add_executable(twinspan-probe ${CMAKE_CURRENT_LIST_DIR}/probe/main.cc)
  target_link_libraries(twinspan-probe PRIVATE twinspan_health_proto twinspan_proto
    absl::strings absl::status absl::statusor CLI11::CLI11 nlohmann_json::nlohmann_json)
  set_target_properties(twinspan-probe PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
endif()
