# Structured output: schema / grammar translation, PCRE2 prefix matching, the vocabulary walk.
if(TARGET twinspan_structured)
  twinspan_test(structured_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/structured/json_schema_regex_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/structured/gbnf_regex_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/structured/grammar_constraint_test.cc
    LIBS twinspan_structured LABELS unit asan structured)
endif()
