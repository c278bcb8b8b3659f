# The public request parser (Generate and Tokenize) over the demo tokenizer and chat template. The
# parser's sources (and the engine request's checks it calls) are compiled in: their libraries
# (the target server, the engine) are heavy to link.
if(TARGET twinspan_proto AND TARGET twinspan_tokenizer AND TARGET twinspan_sampler)
  twinspan_fuzz_target(serving_request
    SOURCES ${CMAKE_SOURCE_DIR}/services/target/server/request_parser.cc
      ${CMAKE_SOURCE_DIR}/services/target/server/tokenizer_codec.cc
      ${CMAKE_SOURCE_DIR}/services/target/engine/engine_request.cc
    LIBS twinspan_proto twinspan_tokenizer twinspan_sampler twinspan_base absl::time
      absl::synchronization
    DEFINES TWINSPAN_FUZZ_TOKENIZER_DIR="${TWINSPAN_FUZZ_DIR}/data/demo_tokenizer")
endif()
