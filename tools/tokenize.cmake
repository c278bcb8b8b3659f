# twinspan-tokenize: encode text, decode ids, or render a chat with a model's tokenizer.
add_executable(twinspan-tokenize ${CMAKE_CURRENT_LIST_DIR}/tokenize/main.cc)
target_link_libraries(twinspan-tokenize PRIVATE twinspan_tokenizer CLI11::CLI11)
