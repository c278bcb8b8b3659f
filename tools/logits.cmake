# twinspan-logits: a target forward's fp32 logits and hidden states for a prompt (tools/logits/).
add_library(twinspan_logits_tool STATIC ${CMAKE_CURRENT_LIST_DIR}/logits/dump_logits.cc)
target_link_libraries(twinspan_logits_tool PUBLIC twinspan_target twinspan_safetensors)
add_executable(twinspan-logits ${CMAKE_CURRENT_LIST_DIR}/logits/main.cc)
target_link_libraries(twinspan-logits PRIVATE twinspan_logits_tool CLI11::CLI11)
