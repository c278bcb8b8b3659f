# services/device: --device parsing, the backend it opens, and the host LogitsSampler; the same
# tests again over the layer a build without CUDA has.
if(TARGET twinspan_device)
  twinspan_test(device_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/device_test.cc
    LIBS twinspan_device LABELS unit asan)
  twinspan_test(device_cpu_only_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/device_test.cc
    LIBS twinspan_device_cpu_only LABELS unit asan)
endif()
