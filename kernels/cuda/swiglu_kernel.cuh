// Device code of SwiGLU: one thread per element of the [rows, dim] strided view, grid-stride,
// with the CPU op's fp32 steps.
#ifndef TWINSPAN_KERNELS_CUDA_SWIGLU_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_SWIGLU_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda::swiglu_kernel {

constexpr int kThreads = 256;

struct SwiGluParams {
  const float* gate = nullptr;
  const float* up = nullptr;
  int64_t in_stride = 0;
  int64_t rows = 0;
  int64_t dim = 0;
  float* out = nullptr;
  int64_t out_stride = 0;
};

__global__ void __launch_bounds__(kThreads) SwiGluKernel(const SwiGluParams p) {
  StartDependent();
  const int64_t total = p.rows * p.dim;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t r = t / p.dim, i = t % p.dim;
    const float g = p.gate[r * p.in_stride + i], u = p.up[r * p.in_stride + i];
    p.out[r * p.out_stride + i] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), u);
  }
}

}  // namespace twinspan::cuda::swiglu_kernel

#endif  // TWINSPAN_KERNELS_CUDA_SWIGLU_KERNEL_CUH_
