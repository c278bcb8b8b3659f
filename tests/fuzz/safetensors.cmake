# The safetensors header parser under libFuzzer (clang only) and a plain replay of the committed
# seed corpus that every compiler runs under ctest (and under ASan + UBSan in the asan pass).
set(TWINSPAN_ST_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
add_executable(safetensors_header_replay ${TWINSPAN_ST_FUZZ_DIR}/safetensors_header_fuzz.cc
  ${TWINSPAN_ST_FUZZ_DIR}/replay_main.cc)
target_link_libraries(safetensors_header_replay PRIVATE twinspan_safetensors)
add_test(NAME safetensors_header_replay
  COMMAND safetensors_header_replay ${TWINSPAN_ST_FUZZ_DIR}/corpus/safetensors_header)
set_tests_properties(safetensors_header_replay PROPERTIES LABELS "unit;asan;fuzz" TIMEOUT 120)

if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  # The parser's sources are compiled into the fuzzer so libFuzzer gets their coverage.
  add_executable(safetensors_header_fuzzer ${TWINSPAN_ST_FUZZ_DIR}/safetensors_header_fuzz.cc
    ${CMAKE_SOURCE_DIR}/common/safetensors/header_parser.cc
    ${CMAKE_SOURCE_DIR}/common/safetensors/dtype.cc
    ${CMAKE_SOURCE_DIR}/common/safetensors/tensor_view.cc)
  target_compile_options(safetensors_header_fuzzer PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(safetensors_header_fuzzer PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(safetensors_header_fuzzer PRIVATE twinspan_base
    nlohmann_json::nlohmann_json)
endif()
