# The tokenizer's outside inputs: a tokenizer.json, any text to encode (demo tokenizer), and chat
# templates with any messages or any template source.
if(TARGET twinspan_tokenizer)
  set(TWINSPAN_FUZZ_TOKENIZER_DEFINE
    TWINSPAN_FUZZ_TOKENIZER_DIR="${TWINSPAN_FUZZ_DIR}/data/demo_tokenizer")
  twinspan_fuzz_target(tokenizer_json LIBS twinspan_tokenizer DICT json.dict)
  twinspan_fuzz_target(tokenizer_encode LIBS twinspan_tokenizer
    DEFINES ${TWINSPAN_FUZZ_TOKENIZER_DEFINE})
  twinspan_fuzz_target(chat_template LIBS twinspan_tokenizer DICT jinja.dict
    DEFINES ${TWINSPAN_FUZZ_TOKENIZER_DEFINE}
      TWINSPAN_FUZZ_RICH_TEMPLATE="${CMAKE_SOURCE_DIR}/tests/tokenizer/qwen3_5_style_template.jinja")
endif()
