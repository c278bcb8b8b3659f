# GPU tools: the benchmark of the CUDA backend (tools/gpu/). Built with the CUDA backend only.
if(TARGET twinspan_cuda AND TARGET twinspan_exl3)
  add_library(twinspan_gpu_synthetic STATIC ${CMAKE_CURRENT_LIST_DIR}/gpu/synthetic.cu)
  target_link_libraries(twinspan_gpu_synthetic PUBLIC CUDA::cudart_static)
  twinspan_cuda_target(twinspan_gpu_synthetic)
  add_executable(twinspan_gpu_bench ${CMAKE_CURRENT_LIST_DIR}/gpu/gpu_bench.cc
    ${CMAKE_CURRENT_LIST_DIR}/gpu/decode_bound.cu)
  twinspan_cuda_target(twinspan_gpu_bench)
  target_link_libraries(twinspan_gpu_bench PRIVATE twinspan_cuda twinspan_exl3 twinspan_gpu_synthetic
    CLI11::CLI11 nlohmann_json::nlohmann_json)
endif()

# Whether wgmma gives the mma.m16n8k16 chain's bits (tools/gpu/wgmma_bits.cu): sm_90a only.
if(TARGET twinspan_cuda AND CMAKE_CUDA_ARCHITECTURES MATCHES "(^|;)90")
  add_executable(twinspan_wgmma_bits ${CMAKE_CURRENT_LIST_DIR}/gpu/wgmma_bits.cu)
  set_target_properties(twinspan_wgmma_bits PROPERTIES CUDA_ARCHITECTURES OFF)
  twinspan_cuda_target(twinspan_wgmma_bits)  # It includes the kernel's header.
  target_compile_options(twinspan_wgmma_bits PRIVATE
    "--generate-code=arch=compute_90a,code=sm_90a")
endif()
