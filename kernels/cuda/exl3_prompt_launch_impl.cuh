// Body of LaunchPrompt<CB>, included once per codebook by exl3_prompt_<codebook>.cu.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_PROMPT_LAUNCH_IMPL_CUH_
#define TWINSPAN_KERNELS_CUDA_EXL3_PROMPT_LAUNCH_IMPL_CUH_

#include "kernels/cuda/exl3_linear_launch_impl.cuh"
#include "kernels/cuda/exl3_prompt_kernel.cuh"
#include "kernels/cuda/exl3_prompt_launch.cuh"
#include "kernels/cuda/exl3_prompt_wgmma_kernel.cuh"

namespace twinspan::cuda::exl3_kernel {

template <Cb CB, int K>
cudaError_t LaunchPromptK(bool wgmma, int blocks, int smem_bytes, int device,
                          const PromptParams& params, cudaStream_t stream) {
  if (wgmma)
    return LaunchGrid<&PromptWgmmaKernel<CB, K>>(blocks, 32 * kWgmmaWarps, smem_bytes, device,
                                                 false, stream, params);
  return LaunchGrid<&PromptKernel<CB, K>>(blocks, 32 * kPromptWarps, smem_bytes, device, false,
                                          stream, params);
}

template <Cb CB>
cudaError_t LaunchPrompt(int bits, bool wgmma, int blocks, int smem_bytes, int device,
                         const PromptParams& params, cudaStream_t stream) {
  switch (bits) {
    case 1:
      return LaunchPromptK<CB, 1>(wgmma, blocks, smem_bytes, device, params, stream);
    case 2:
      return LaunchPromptK<CB, 2>(wgmma, blocks, smem_bytes, device, params, stream);
    case 3:
      return LaunchPromptK<CB, 3>(wgmma, blocks, smem_bytes, device, params, stream);
    case 4:
      return LaunchPromptK<CB, 4>(wgmma, blocks, smem_bytes, device, params, stream);
    case 5:
      return LaunchPromptK<CB, 5>(wgmma, blocks, smem_bytes, device, params, stream);
    case 6:
      return LaunchPromptK<CB, 6>(wgmma, blocks, smem_bytes, device, params, stream);
    case 7:
      return LaunchPromptK<CB, 7>(wgmma, blocks, smem_bytes, device, params, stream);
    case 8:
      return LaunchPromptK<CB, 8>(wgmma, blocks, smem_bytes, device, params, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace twinspan::cuda::exl3_kernel

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_PROMPT_LAUNCH_IMPL_CUH_
