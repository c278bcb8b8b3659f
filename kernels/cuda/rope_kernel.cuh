// Device code of RoPE: one thread per (row, head, rotated pair), grid-stride.
#ifndef TWINSPAN_KERNELS_CUDA_ROPE_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_ROPE_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda::rope_kernel {

constexpr int kThreads = 256;

struct Params {
  float* x = nullptr;
  int64_t x_stride = 0;
  int64_t rows = 0;
  int64_t heads = 0;
  int64_t head_dim = 0;
  int64_t half = 0;  // rot_dim / 2
  const float* cos = nullptr;
  const float* sin = nullptr;
};

__global__ void __launch_bounds__(kThreads) RopeKernel(const Params p) {
  StartDependent();
  const int64_t total = p.rows * p.heads * p.half;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t i = t % p.half;
    const int64_t h = (t / p.half) % p.heads;
    const int64_t r = t / (p.half * p.heads);
    float* xh = p.x + r * p.x_stride + h * p.head_dim;
    const float c = p.cos[r * p.half + i], s = p.sin[r * p.half + i];
    const float a = xh[i], b = xh[i + p.half];
    xh[i] = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
    xh[i + p.half] = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
  }
}

}  // namespace twinspan::cuda::rope_kernel

#endif  // TWINSPAN_KERNELS_CUDA_ROPE_KERNEL_CUH_
