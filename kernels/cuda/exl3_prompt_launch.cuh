// Launchers of the EXL3 prompt path's kernel, one per codebook, each in its own translation unit
// (exl3_prompt_<codebook>.cu) so nvcc builds the 3 x 8 (codebook, K) instantiations in parallel.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_PROMPT_LAUNCH_CUH_
#define TWINSPAN_KERNELS_CUDA_EXL3_PROMPT_LAUNCH_CUH_

#include <cuda_runtime.h>

#include "kernels/cuda/exl3_prompt_kernel.cuh"

namespace twinspan::cuda::exl3_kernel {

// Launches PromptKernel<CB, bits> (or PromptWgmmaKernel where `wgmma`) on `blocks` blocks with
// `smem_bytes` of dynamic shared memory, allowed to start while the stream's previous kernel
// finishes. REQUIRES: 1 <= bits <= 8, `part` filled by the caller (exl3_prompt.cu). Returns the
// launch error.
template <Cb CB>
cudaError_t LaunchPrompt(int bits, bool wgmma, int blocks, int smem_bytes, int device,
                         const PromptParams& params, cudaStream_t stream);

extern template cudaError_t LaunchPrompt<Cb::k3inst>(int, bool, int, int, int, const PromptParams&,
                                                     cudaStream_t);
extern template cudaError_t LaunchPrompt<Cb::kMcg>(int, bool, int, int, int, const PromptParams&,
                                                   cudaStream_t);
extern template cudaError_t LaunchPrompt<Cb::kMul1>(int, bool, int, int, int, const PromptParams&,
                                                    cudaStream_t);

}  // namespace twinspan::cuda::exl3_kernel

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_PROMPT_LAUNCH_CUH_
