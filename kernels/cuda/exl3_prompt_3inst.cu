// EXL3 prompt-path kernels for the 3inst codebook (K = 1..8).
#include "kernels/cuda/exl3_prompt_launch_impl.cuh"

namespace twinspan::cuda::exl3_kernel {
template cudaError_t LaunchPrompt<Cb::k3inst>(int, bool, int, int, int, const PromptParams&,
                                              cudaStream_t);
}  // namespace twinspan::cuda::exl3_kernel
