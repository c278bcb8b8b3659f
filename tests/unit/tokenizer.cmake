twinspan_test(tokenizer_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/tokenizer_test.cc
  LIBS twinspan_tokenizer LABELS unit tokenizer asan)
twinspan_test(tokenizer_utf8_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/tokenizer_utf8_test.cc
  LIBS twinspan_tokenizer LABELS unit tokenizer asan)
twinspan_test(tokenizer_jinja_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/tokenizer_jinja_test.cc
  LIBS twinspan_tokenizer LABELS unit tokenizer asan)
target_compile_definitions(tokenizer_jinja_test PRIVATE
  TWINSPAN_JINJA_CASES="${CMAKE_CURRENT_LIST_DIR}/tokenizer_jinja_cases.json")
twinspan_test(tokenizer_sha256_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/tokenizer_sha256_test.cc
  LIBS twinspan_hash LABELS unit tokenizer asan)
