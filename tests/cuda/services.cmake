# GPU tests of the services (services/target/server, services/device): the target's verifier and
# sampler on the CUDA backend, and the whole split end to end as real processes. Built with the
# CUDA backend, never registered with ctest; scripts/gpu-check.sh runs them (bundling services_cuda_test
# also bundles the service binaries the end-to-end test starts).
if(TARGET twinspan_cuda AND TARGET twinspan_device AND TARGET twinspan_cuda_testing)
  add_executable(logits_sampler_cuda_test ${CMAKE_CURRENT_LIST_DIR}/logits_sampler_cuda_test.cc)
  target_link_libraries(logits_sampler_cuda_test PRIVATE twinspan_cuda_testing twinspan_device)
  twinspan_test_optimize(logits_sampler_cuda_test)
endif()
if(TARGET twinspan_cuda AND TARGET twinspan_target_server AND TARGET twinspan_cuda_testing)
  add_executable(target_verifier_cuda_test ${CMAKE_CURRENT_LIST_DIR}/target_verifier_cuda_test.cc)
  target_link_libraries(target_verifier_cuda_test PRIVATE twinspan_cuda_testing
    twinspan_target_server twinspan_drafter nlohmann_json::nlohmann_json)
  twinspan_test_optimize(target_verifier_cuda_test)
endif()
if(TARGET twinspan_cuda AND TARGET twinspan_proto AND TARGET twinspan-target AND
   TARGET twinspan-drafter AND TARGET twinspan-serve AND TARGET make-demo)
  add_executable(services_cuda_test ${CMAKE_CURRENT_LIST_DIR}/services_cuda_test.cc)
  target_link_libraries(services_cuda_test PRIVATE twinspan_proto twinspan_base
    twinspan_cuda_testing twinspan_service_process)
  twinspan_test_optimize(services_cuda_test)
  # The binaries it starts are built with it.
  add_dependencies(services_cuda_test twinspan-target twinspan-drafter twinspan-serve make-demo)
endif()
