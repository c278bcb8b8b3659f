# GPU tests of the drafter on the CUDA backend (services/drafter, the backend's drafter entries);
# run by scripts/gpu-check.sh, never by ctest.
if(TARGET twinspan_cuda AND TARGET twinspan_drafter AND TARGET twinspan_target)
  foreach(test drafter_backend drafter drafted_plain)
    add_executable(${test}_cuda_test ${CMAKE_CURRENT_LIST_DIR}/${test}_cuda_test.cc)
    target_link_libraries(${test}_cuda_test PRIVATE twinspan_exl3_fixture twinspan_cuda_testing twinspan_drafter
      twinspan_target twinspan_cpu_backend twinspan_safetensors twinspan_exl3 twinspan_testing
      twinspan_speculative_loop nlohmann_json::nlohmann_json)
    twinspan_test_optimize(${test}_cuda_test)
  endforeach()
endif()
# The round steps and byte counts of twinspan_round_bench on the CPU backend: runs under ctest.
if(TARGET twinspan_round_driver AND TARGET twinspan_synth)
  twinspan_test(round_driver_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/round_driver_test.cc
    LIBS twinspan_round_driver twinspan_synth
    LABELS unit)
endif()
