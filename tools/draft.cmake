# twinspan-draft: one drafted block for a prompt, written as safetensors (tools/draft/).
if(TARGET twinspan_drafter)
  add_library(twinspan_draft_tool STATIC ${CMAKE_CURRENT_LIST_DIR}/draft/draft_block.cc)
  target_link_libraries(twinspan_draft_tool PUBLIC twinspan_drafter twinspan_target
    twinspan_safetensors spdlog::spdlog)
  add_executable(twinspan-draft ${CMAKE_CURRENT_LIST_DIR}/draft/main.cc)
  target_link_libraries(twinspan-draft PRIVATE twinspan_draft_tool twinspan_logits_tool CLI11::CLI11)
endif()
