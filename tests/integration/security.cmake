# Transport security end to end: mutual TLS between the three services, bearer tokens, wrong
# certificates refused, rotation under running processes (CA made by the test).
if(TARGET twinspan-router AND TARGET twinspan-target AND TARGET twinspan-drafter AND
   TARGET twinspan-serve AND TARGET make-demo)
  twinspan_test(security_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/security_test.cc
    LIBS twinspan_proto twinspan_service_process twinspan_test_ca nlohmann_json::nlohmann_json
      gRPC::grpc++
    LABELS integration services security TIMEOUT 300)
  add_dependencies(security_test twinspan-router twinspan-target twinspan-drafter twinspan-serve
    make-demo)
endif()
