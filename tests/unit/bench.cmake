# twinspan-bench's own logic (Python unittest): cells, statistics, exactness bookkeeping, outputs,
# --compare, and the gRPC client against an in-process test double of the public Serving API.
add_test(NAME bench_py_test
  COMMAND /usr/bin/python3 -m unittest discover -v -s tests -t .
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/tools/bench)
set_tests_properties(bench_py_test PROPERTIES TIMEOUT 300 LABELS "unit;python"
  ENVIRONMENT "TWINSPAN_BENCH_STUBS=${CMAKE_BINARY_DIR}/bench-stubs-test;TWINSPAN_PROTO_DIR=${CMAKE_SOURCE_DIR}/proto")
