// Body of LaunchPrompt<CB>, included once per codebook by exl3_prompt_<codebook>.cu.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_PROMPT_LAUNCH_IMPL_CUH_
#define TWINSPAN_KERNELS_CUDA_EXL3_PROMPT_LAUNCH_IMPL_CUH_

#include "kernels/cuda/exl3_linear_launch_impl.cuh"
#include "kernels/cuda/exl3_prompt_kernel.cuh"
#include "kernels/cuda/exl3_prompt_launch.cuh"

namespace twinspan::cuda::exl3_kernel {

template <Cb CB, int K>
cudaError_t LaunchPromptK(int blocks, int smem_bytes, int device, const PromptParams& params,
                          cudaStream_t stream) {
  return LaunchGrid<&PromptKernel<CB, K>>(blocks, 32 * kPromptWarps, smem_bytes, device, false,
                                          stream, params);
}

template <Cb CB>
cudaError_t LaunchPrompt(int bits, int blocks, int smem_bytes, int device,
                         const PromptParams& params, cudaStream_t stream) {
  switch (bits) {
    case 1:
      return LaunchPromptK<CB, 1>(blocks, smem_bytes, device, params, stream);
    case 2:
      return LaunchPromptK<CB, 2>(blocks, smem_bytes, device, params, stream);
    case 3:
      return LaunchPromptK<CB, 3>(blocks, smem_bytes, device, params, stream);
    case 4:
      return LaunchPromptK<CB, 4>(blocks, smem_bytes, device, params, stream);
    case 5:
      return LaunchPromptK<CB, 5>(blocks, smem_bytes, device, params, stream);
    case 6:
      return LaunchPromptK<CB, 6>(blocks, smem_bytes, device, params, stream);
    case 7:
      return LaunchPromptK<CB, 7>(blocks, smem_bytes, device, params, stream);
    case 8:
      return LaunchPromptK<CB, 8>(blocks, smem_bytes, device, params, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace twinspan::cuda::exl3_kernel

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_PROMPT_LAUNCH_IMPL_CUH_
