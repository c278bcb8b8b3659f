twinspan_test(target_kernels_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/target_kernels_test.cc
  LIBS twinspan_cpu LABELS unit asan)
twinspan_test(target_qwen3_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/target_qwen3_test.cc
  LIBS twinspan_target LABELS unit asan)
twinspan_test(target_sampled_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/target_sampled_test.cc
  LIBS twinspan_target twinspan_sampler LABELS unit asan)
twinspan_test(target_config_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/target_config_test.cc
  LIBS twinspan_target LABELS unit asan)
twinspan_test(target_sequence_state_test SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/target_sequence_state_test.cc LIBS twinspan_target LABELS unit asan)
twinspan_test(target_batch_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/target_batch_test.cc
  LIBS twinspan_exl3_fixture twinspan_target twinspan_exl3 LABELS unit asan)
if(TARGET twinspan_target_server)
  twinspan_test(target_verifier_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/target_verifier_test.cc
    LIBS twinspan_target_server twinspan_engine twinspan_drafter nlohmann_json::nlohmann_json
    LABELS unit)
endif()
twinspan_test(target_prefill_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/target_prefill_test.cc
  LIBS twinspan_target twinspan_cpu_backend LABELS unit asan)
twinspan_test(target_prefix_cache_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/target_prefix_cache_test.cc
  LIBS twinspan_target twinspan_cpu_backend nlohmann_json::nlohmann_json LABELS unit asan)
