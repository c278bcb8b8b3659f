# twinspan-synth: synthetic checkpoints at the real shapes (tools/synth/). The library is shared
# with its tests.
if(TARGET twinspan_exl3 AND TARGET twinspan_cpu)
  add_library(twinspan_synth STATIC
    ${CMAKE_CURRENT_LIST_DIR}/synth/dflash2_preset.cc
    ${CMAKE_CURRENT_LIST_DIR}/synth/fill.cc
    ${CMAKE_CURRENT_LIST_DIR}/synth/presets.cc
    ${CMAKE_CURRENT_LIST_DIR}/synth/qwen35_preset.cc
    ${CMAKE_CURRENT_LIST_DIR}/synth/shard_writer.cc)
  target_link_libraries(twinspan_synth PUBLIC twinspan_exl3 twinspan_cpu twinspan_safetensors
    nlohmann_json::nlohmann_json Threads::Threads)
  add_executable(twinspan-synth ${CMAKE_CURRENT_LIST_DIR}/synth/main.cc)
  target_link_libraries(twinspan-synth PRIVATE twinspan_synth CLI11::CLI11)
  set_target_properties(twinspan-synth PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tools)
endif()
