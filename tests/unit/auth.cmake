# Bearer-token authentication (common/auth) and the TLS file checks of the services' ports.
twinspan_test(auth_bearer_token_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/auth_bearer_token_test.cc
  LIBS twinspan_auth LABELS unit security asan)
if(TARGET twinspan_security)
  twinspan_test(security_tls_files_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/security_tls_files_test.cc
    LIBS twinspan_security twinspan_test_ca LABELS unit security)
endif()
