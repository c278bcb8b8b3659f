# The public request parser (Generate and Tokenize) under libFuzzer (clang only), and a plain replay
# of the committed seed corpus under ctest (and under ASan + UBSan in the asan pass).
if(TARGET twinspan_proto AND TARGET twinspan_tokenizer AND TARGET twinspan_sampler)
  set(TWINSPAN_REQ_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
  set(TWINSPAN_REQ_PARSER_SOURCES ${CMAKE_SOURCE_DIR}/services/target/server/request_parser.cc
    ${CMAKE_SOURCE_DIR}/services/target/server/tokenizer_codec.cc)
  set(TWINSPAN_REQ_FUZZ_LIBS twinspan_proto twinspan_tokenizer twinspan_sampler twinspan_base
    absl::time absl::synchronization)
  add_executable(serving_request_replay ${TWINSPAN_REQ_FUZZ_DIR}/serving_request_fuzz.cc
    ${TWINSPAN_REQ_FUZZ_DIR}/replay_main.cc ${TWINSPAN_REQ_PARSER_SOURCES})
  target_compile_definitions(serving_request_replay PRIVATE
    TWINSPAN_FUZZ_TOKENIZER_DIR="${TWINSPAN_REQ_FUZZ_DIR}/data/demo_tokenizer")
  target_link_libraries(serving_request_replay PRIVATE ${TWINSPAN_REQ_FUZZ_LIBS})
  add_test(NAME serving_request_replay
    COMMAND serving_request_replay ${TWINSPAN_REQ_FUZZ_DIR}/corpus/serving_request)
  set_tests_properties(serving_request_replay PROPERTIES LABELS "unit;asan;fuzz" TIMEOUT 120)

  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    # The parser's sources are compiled into the fuzzer so libFuzzer gets their coverage.
    add_executable(serving_request_fuzzer ${TWINSPAN_REQ_FUZZ_DIR}/serving_request_fuzz.cc
      ${TWINSPAN_REQ_PARSER_SOURCES})
    target_compile_definitions(serving_request_fuzzer PRIVATE
      TWINSPAN_FUZZ_TOKENIZER_DIR="${TWINSPAN_REQ_FUZZ_DIR}/data/demo_tokenizer")
    target_compile_options(serving_request_fuzzer PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(serving_request_fuzzer PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(serving_request_fuzzer PRIVATE ${TWINSPAN_REQ_FUZZ_LIBS})
  endif()
endif()
