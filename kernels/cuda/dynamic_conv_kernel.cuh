// Device code of DynamicConv: one thread per output (row, channel), grid-stride. Each output
// repeats the CPU op's steps in order: out = 0, then per tap o <= t: out += base * x, then
// out += dynamic * x, every product and add rounded on its own.
#ifndef TWINSPAN_KERNELS_CUDA_DYNAMIC_CONV_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_DYNAMIC_CONV_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/dynamic_conv_launch.h"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda::dynamic_conv_kernel {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) DynamicConvKernel(Args a) {
  StartDependent();
  const int64_t n = a.rows * a.channels, groups = a.channels / a.group_size;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; idx < n;
       idx += stride) {
    const int64_t t = idx / a.channels, c = idx % a.channels;
    const float* d_row = a.dynamic + t * a.dynamic_row_stride;
    float acc = 0.0f;
    for (int64_t o = 0; o < a.taps && o <= t; ++o) {
      const float xv = a.x[(t - o) * a.channels + c];
      acc = __fadd_rn(acc, __fmul_rn(a.base[o * a.channels + c], xv));
      acc = __fadd_rn(acc, __fmul_rn(d_row[o * groups + c / a.group_size], xv));
    }
    a.out[idx] = acc;
  }
}

}  // namespace twinspan::cuda::dynamic_conv_kernel

#endif  // TWINSPAN_KERNELS_CUDA_DYNAMIC_CONV_KERNEL_CUH_
