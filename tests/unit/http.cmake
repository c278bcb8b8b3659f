# The OpenAI-compatible HTTP API's request parser and response shapes (untrusted input: asan).
if(TARGET twinspan_http)
  twinspan_test(http_openai_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/http_openai_test.cc
    LIBS twinspan_http nlohmann_json::nlohmann_json LABELS unit asan http)
endif()
# The HTTP server itself over loopback sockets: limits, timeouts, streams, keep-alive.
if(TARGET twinspan_http)
  twinspan_test(http_server_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/http_server_test.cc
    LIBS twinspan_http LABELS unit http)
endif()
