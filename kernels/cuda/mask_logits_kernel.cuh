// Device code of MaskLogits: one block row per logits row, a thread per id, grid-stride over ids.
#ifndef TWINSPAN_KERNELS_CUDA_MASK_LOGITS_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_MASK_LOGITS_KERNEL_CUH_

#include <cstdint>

namespace twinspan::cuda::mask_logits_kernel {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    MaskLogitsKernel(float* logits, int64_t stride, int64_t vocab, const uint32_t* allowed) {
  const int64_t words = (vocab + 31) / 32;
  float* row = logits + static_cast<int64_t>(blockIdx.y) * stride;
  const uint32_t* mask = allowed + static_cast<int64_t>(blockIdx.y) * words;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < vocab;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    if (((mask[i / 32] >> (i % 32)) & 1u) == 0) row[i] = -INFINITY;
  }
}

}  // namespace twinspan::cuda::mask_logits_kernel

#endif  // TWINSPAN_KERNELS_CUDA_MASK_LOGITS_KERNEL_CUH_
