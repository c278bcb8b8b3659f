// Device code of Add: one thread per element, grid-stride.
#ifndef TWINSPAN_KERNELS_CUDA_ADD_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_ADD_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda::add_kernel {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    AddKernel(const float* a, const float* b, int64_t n, float* out) {
  StartDependent();
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * kThreads) {
    out[t] = __fadd_rn(a[t], b[t]);
  }
}

}  // namespace twinspan::cuda::add_kernel

#endif  // TWINSPAN_KERNELS_CUDA_ADD_KERNEL_CUH_
