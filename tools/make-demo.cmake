# make-demo: writes the small random demo target + drafter pair (tools/make-demo/main.cc).
add_executable(make-demo ${CMAKE_CURRENT_LIST_DIR}/make-demo/main.cc)
target_link_libraries(make-demo PRIVATE twinspan_safetensors twinspan_base CLI11::CLI11
  nlohmann_json::nlohmann_json)
set_target_properties(make-demo PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
