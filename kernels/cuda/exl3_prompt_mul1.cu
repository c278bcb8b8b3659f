// EXL3 prompt-path kernels for the mul1 codebook (K = 1..8).
#include "kernels/cuda/exl3_prompt_launch_impl.cuh"

namespace twinspan::cuda::exl3_kernel {
template cudaError_t LaunchPrompt<Cb::kMul1>(int, bool, int, int, int, const PromptParams&,
                                             cudaStream_t);
}  // namespace twinspan::cuda::exl3_kernel
