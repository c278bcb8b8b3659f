# The Backend interface's CPU implementation (kernels/cpu/cpu_backend) and the CPU ops it added.
twinspan_test(cpu_backend_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/cpu_backend_test.cc
  LIBS twinspan_exl3_fixture twinspan_cpu_backend twinspan_exl3 twinspan_safetensors LABELS unit asan)
twinspan_test(cpu_elementwise_ops_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/cpu_elementwise_ops_test.cc
  LIBS twinspan_cpu LABELS unit asan)
# cpu::ThreadPool: each index once, sleeping and spinning workers, concurrent callers.
twinspan_test(cpu_thread_pool_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/cpu_thread_pool_test.cc
  LIBS twinspan_cpu LABELS unit asan)
