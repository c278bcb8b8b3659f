// Device code of MulSigmoid: one thread per element of the [rows, dim] strided view,
// grid-stride, with the CPU forward's fp32 steps.
#ifndef TWINSPAN_KERNELS_CUDA_MUL_SIGMOID_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_MUL_SIGMOID_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda::mul_sigmoid_kernel {

constexpr int kThreads = 256;

// 1 / (1 + exp(-g)) as the CPU ops write it.
__device__ __forceinline__ float Sigmoid(float g) {
  return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-g)));
}

struct MulSigmoidParams {
  float* x = nullptr;
  int64_t x_stride = 0;
  const float* gate = nullptr;
  int64_t gate_stride = 0;
  int64_t rows = 0;
  int64_t dim = 0;
};

__global__ void __launch_bounds__(kThreads) MulSigmoidKernel(const MulSigmoidParams p) {
  StartDependent();
  const int64_t total = p.rows * p.dim;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t r = t / p.dim, i = t % p.dim;
    float* x = p.x + r * p.x_stride + i;
    *x = __fmul_rn(*x, Sigmoid(p.gate[r * p.gate_stride + i]));
  }
}

}  // namespace twinspan::cuda::mul_sigmoid_kernel

#endif  // TWINSPAN_KERNELS_CUDA_MUL_SIGMOID_KERNEL_CUH_
