# twinspan-bench (Python, Debian's python3-grpcio): a wrapper in <build>/bin that runs the sources in
# tools/bench and keeps its generated gRPC stubs in the build folder.
set(TWINSPAN_BENCH_HOME ${CMAKE_CURRENT_LIST_DIR}/bench)
set(TWINSPAN_BENCH_PROTO_DIR ${CMAKE_SOURCE_DIR}/proto)
set(TWINSPAN_BENCH_STUBS_DIR ${CMAKE_BINARY_DIR}/bench-stubs)
configure_file(${TWINSPAN_BENCH_HOME}/twinspan-bench.in ${CMAKE_BINARY_DIR}/bin/twinspan-bench
  @ONLY FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
  WORLD_READ WORLD_EXECUTE)
