# twinspan-perplexity: a target's perplexity on a text file (tools/perplexity/), for the
# quantizer's quality table.
add_library(twinspan_perplexity_tool STATIC ${CMAKE_CURRENT_LIST_DIR}/perplexity/perplexity.cc)
target_link_libraries(twinspan_perplexity_tool PUBLIC twinspan_target)
add_executable(twinspan-perplexity ${CMAKE_CURRENT_LIST_DIR}/perplexity/main.cc)
target_link_libraries(twinspan-perplexity PRIVATE twinspan_perplexity_tool twinspan_tokenizer
  twinspan_cpu_backend CLI11::CLI11)
