# twinspan_round_bench: one 27B-shaped round (target verify + drafter block) on the CUDA backend
# (tools/gpu/round_bench.cc), and the backend-neutral round steps and byte counts it times, which
# ctest checks on the CPU (tests/cuda/round_driver_test.cc).
if(TARGET twinspan_target AND TARGET twinspan_drafter)
  add_library(twinspan_round_driver STATIC ${CMAKE_CURRENT_LIST_DIR}/gpu/round_driver.cc
    ${CMAKE_CURRENT_LIST_DIR}/gpu/round_bytes.cc)
  target_link_libraries(twinspan_round_driver PUBLIC twinspan_target twinspan_drafter
    twinspan_safetensors nlohmann_json::nlohmann_json)
endif()
if(TARGET twinspan_gpu_synthetic AND TARGET twinspan_round_driver)
  add_executable(twinspan_round_bench ${CMAKE_CURRENT_LIST_DIR}/gpu/round_bench.cc
    ${CMAKE_CURRENT_LIST_DIR}/gpu/round_timer.cc
    ${CMAKE_CURRENT_LIST_DIR}/gpu/profiling_backend.cc)
  target_link_libraries(twinspan_round_bench PRIVATE twinspan_round_driver twinspan_cuda
    twinspan_gpu_synthetic twinspan_hash CLI11::CLI11)
endif()
