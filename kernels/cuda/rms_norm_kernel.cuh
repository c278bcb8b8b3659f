// Device code of RMSNorm. Up to kWarpDimLimit values a row one warp normalizes it (lane l sums
// x[l], x[l + 32], ... in order, then the butterfly); beyond, a block of kBlockThreads does the
// same with thread stride 256 and sums its 8 warp totals with a fixed butterfly. Which path runs
// depends on dim only. The scale uses the CPU op's fp32 steps: ms = sum / dim,
// inv = 1 / sqrt(ms + eps), y = w * (x * inv), each correctly rounded.
#ifndef TWINSPAN_KERNELS_CUDA_RMS_NORM_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_RMS_NORM_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/reduce.cuh"

namespace twinspan::cuda::rms_norm_kernel {

constexpr int kWarpDimLimit = 1024;
constexpr int kBlockThreads = 256;
constexpr int kRowsPerWarpBlock = kBlockThreads / 32;

struct Params {
  const float* x = nullptr;
  int64_t x_stride = 0;
  int64_t rows = 0;
  int64_t dim = 0;
  const float* weight = nullptr;
  float eps = 0.0f;
  float* y = nullptr;
  int64_t y_stride = 0;
};

__device__ __forceinline__ float InvRms(float sum_squares, int64_t dim, float eps) {
  const float mean_square = __fdiv_rn(sum_squares, static_cast<float>(dim));
  return __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean_square, eps)));
}

// One warp per row.
__global__ void __launch_bounds__(kBlockThreads) WarpRowKernel(const Params p) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerWarpBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= p.rows) return;
  const float* x = p.x + row * p.x_stride;
  float* y = p.y + row * p.y_stride;
  float sum = 0.0f;
  for (int64_t i = lane; i < p.dim; i += 32) sum = __fmaf_rn(x[i], x[i], sum);
  const float inv = InvRms(WarpSum(sum), p.dim, p.eps);  // Every lane has read x before any writes.
  for (int64_t i = lane; i < p.dim; i += 32) y[i] = __fmul_rn(p.weight[i], __fmul_rn(x[i], inv));
}

// One block per row.
__global__ void __launch_bounds__(kBlockThreads) BlockRowKernel(const Params p) {
  __shared__ float warp_sums[kBlockThreads / 32];
  __shared__ float inv_s;
  const int64_t row = blockIdx.x;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const float* x = p.x + row * p.x_stride;
  float* y = p.y + row * p.y_stride;
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < p.dim; i += kBlockThreads) sum = __fmaf_rn(x[i], x[i], sum);
  sum = WarpSum(sum);
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    float s = lane < kBlockThreads / 32 ? warp_sums[lane] : 0.0f;
#pragma unroll
    for (int offset = kBlockThreads / 64; offset > 0; offset >>= 1) {
      s = __fadd_rn(s, __shfl_xor_sync(0xffffffffu, s, offset));
    }
    if (lane == 0) inv_s = InvRms(s, p.dim, p.eps);
  }
  __syncthreads();
  const float inv = inv_s;
  for (int64_t i = threadIdx.x; i < p.dim; i += kBlockThreads) {
    y[i] = __fmul_rn(p.weight[i], __fmul_rn(x[i], inv));
  }
}

}  // namespace twinspan::cuda::rms_norm_kernel

#endif  // TWINSPAN_KERNELS_CUDA_RMS_NORM_KERNEL_CUH_
