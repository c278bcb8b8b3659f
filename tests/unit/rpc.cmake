# The absl::Status <-> grpc::Status mapping of the services (services/rpc).
if(TARGET twinspan_rpc)
  twinspan_test(rpc_status_mapping_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/rpc_status_mapping_test.cc
    LIBS twinspan_rpc LABELS unit)
endif()
