# Split-versus-in-process per-round overhead of the drafter plane (run by hand; docs/perf.md).
if(TARGET twinspan_grpc_draft_channel AND TARGET twinspan_drafter_service AND
   TARGET twinspan_toy_models)
  add_executable(services_split_bench ${CMAKE_CURRENT_LIST_DIR}/services_split_bench.cc)
  target_link_libraries(services_split_bench PRIVATE twinspan_grpc_draft_channel
    twinspan_drafter_service twinspan_toy_models benchmark::benchmark)
endif()
