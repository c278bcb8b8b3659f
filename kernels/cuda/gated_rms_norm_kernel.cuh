// Device code of GatedRmsNorm: one warp per group of dim values (128 for Qwen3.5's 48 heads).
// Each lane reads and writes only the elements i = lane (mod 32), so y may alias x.
#ifndef TWINSPAN_KERNELS_CUDA_GATED_RMS_NORM_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_GATED_RMS_NORM_KERNEL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda::gated_rms_norm_kernel {

constexpr int kWarps = 8;  // Groups per block.

__global__ void __launch_bounds__(kWarps * 32)
    GatedRmsNormKernel(const float* x, const float* gate, int64_t groups, int dim,
                       const float* weight, float eps, float* y) {
  StartDependent();
  const int lane = threadIdx.x & 31;
  const int64_t group = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (group >= groups) return;  // Whole warps leave together: the shuffles below stay full.
  const float* xg = x + group * dim;
  float sum_sq = 0.0f;
  for (int i = lane; i < dim; i += 32) sum_sq = __fadd_rn(sum_sq, __fmul_rn(xg[i], xg[i]));
#pragma unroll
  for (int offset = 16; offset >= 1; offset >>= 1) {
    sum_sq = __fadd_rn(sum_sq, __shfl_xor_sync(0xffffffffu, sum_sq, offset));
  }
  const float inv_rms =
      __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(sum_sq, static_cast<float>(dim)), eps)));
  const float* zg = gate + group * dim;
  float* yg = y + group * dim;
  for (int i = lane; i < dim; i += 32) {
    const float z = zg[i];
    const float silu = __fdiv_rn(z, __fadd_rn(1.0f, expf(-z)));
    yg[i] = __fmul_rn(__fmul_rn(weight[i], __fmul_rn(xg[i], inv_rms)), silu);
  }
}

}  // namespace twinspan::cuda::gated_rms_norm_kernel

#endif  // TWINSPAN_KERNELS_CUDA_GATED_RMS_NORM_KERNEL_CUH_
