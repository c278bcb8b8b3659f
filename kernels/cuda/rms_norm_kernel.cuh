// Device code of RMSNorm. Up to kWarpDimLimit values a row one warp normalizes it (lane l sums
// x[l], x[l + 32], ... in order, then the butterfly); beyond, a block of kBlockThreads does the
// same with thread stride 256 and sums its 8 warp totals with a fixed butterfly. Which path runs
// depends on dim only. The scale uses the CPU op's fp32 steps: ms = sum / dim,
// inv = 1 / sqrt(ms + eps), y = w * (x * inv), each correctly rounded. Up to kMaxCachedDim values
// a row, each thread keeps its values in registers and issues all its loads before the first use
// (a loop that waited for each load in turn took 11 us for the 27B's 5,120); the same sums in the
// same order, so the same bits. With `add`, each thread first forms x + add (one correctly rounded
// fadd, as the Add op), writes it to `sum` and normalizes that: the residual add fused with the
// norm that follows it, the bits of Add then RMSNorm.
#ifndef TWINSPAN_KERNELS_CUDA_RMS_NORM_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_RMS_NORM_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/reduce.cuh"

namespace twinspan::cuda::rms_norm_kernel {

constexpr int kWarpDimLimit = 1024;
constexpr int kBlockThreads = 256;
constexpr int kRowsPerWarpBlock = kBlockThreads / 32;
constexpr int kMaxCachedDim = 32 * kBlockThreads;

struct Params {
  const float* x = nullptr;
  int64_t x_stride = 0;
  int64_t rows = 0;
  int64_t dim = 0;
  const float* weight = nullptr;
  float eps = 0.0f;
  float* y = nullptr;
  int64_t y_stride = 0;
  const float* add = nullptr;  // Optional, row stride x_stride: normalize x + add ...
  float* sum = nullptr;        // ... after writing it here (row stride x_stride; may be x).
};

// v[j] = x[o_j] (+ add[o_j], written to sum) for the kPer offsets o_j = first + stride j below
// dim; the other v[j] are 0. All loads are issued before the first use.
template <int kPer>
__device__ __forceinline__ void LoadRow(const Params& p, int64_t row, int first, int stride,
                                        float (&v)[kPer]) {
  const float* x = p.x + row * p.x_stride;
#pragma unroll
  for (int j = 0; j < kPer; ++j) v[j] = first + stride * j < p.dim ? x[first + stride * j] : 0.0f;
  if (p.add == nullptr) return;
  const float* add = p.add + row * p.x_stride;
  float* sum = p.sum + row * p.x_stride;
  float a[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) a[j] = first + stride * j < p.dim ? add[first + stride * j] : 0.0f;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    if (first + stride * j < p.dim) {
      v[j] = __fadd_rn(v[j], a[j]);
      sum[first + stride * j] = v[j];
    }
  }
}

__device__ __forceinline__ float InvRms(float sum_squares, int64_t dim, float eps) {
  const float mean_square = __fdiv_rn(sum_squares, static_cast<float>(dim));
  return __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean_square, eps)));
}

// The inverse RMS of a block's row from each thread's partial sum: the warp butterflies, then a
// fixed butterfly over the 8 warp totals (warp 0), broadcast through shared memory.
__device__ __forceinline__ float BlockInvRms(float sum, const Params& p) {
  __shared__ float warp_sums[kBlockThreads / 32];
  __shared__ float inv_s;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
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
  return inv_s;
}

// One warp per row, dim <= 32 * kPer: each lane's values stay in registers between the two
// passes, and all its loads are issued before the first use.
template <int kPer>
__global__ void __launch_bounds__(kBlockThreads) WarpRowKernel(const Params p) {
  StartDependent();
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerWarpBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= p.rows) return;
  float* y = p.y + row * p.y_stride;
  float v[kPer], w[kPer];
  LoadRow<kPer>(p, row, lane, 32, v);
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    if (lane + 32 * j < p.dim) sum = __fmaf_rn(v[j], v[j], sum);
  }
  const float inv = InvRms(WarpSum(sum), p.dim, p.eps);  // Every lane has read x before any writes.
#pragma unroll
  for (int j = 0; j < kPer; ++j) w[j] = lane + 32 * j < p.dim ? p.weight[lane + 32 * j] : 0.0f;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    if (lane + 32 * j < p.dim) y[lane + 32 * j] = __fmul_rn(w[j], __fmul_rn(v[j], inv));
  }
}

// One block per row, dim <= 256 * kPer: as WarpRowKernel, with thread stride 256.
template <int kPer>
__global__ void __launch_bounds__(kBlockThreads) CachedBlockRowKernel(const Params p) {
  StartDependent();
  const int64_t row = blockIdx.x;
  const int t = threadIdx.x;
  float* y = p.y + row * p.y_stride;
  float v[kPer], w[kPer];
  LoadRow<kPer>(p, row, t, kBlockThreads, v);
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    if (t + kBlockThreads * j < p.dim) sum = __fmaf_rn(v[j], v[j], sum);
  }
  const float inv = BlockInvRms(sum, p);
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    w[j] = t + kBlockThreads * j < p.dim ? p.weight[t + kBlockThreads * j] : 0.0f;
  }
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    if (t + kBlockThreads * j < p.dim)
      y[t + kBlockThreads * j] = __fmul_rn(w[j], __fmul_rn(v[j], inv));
  }
}

// One block per row, any dim.
__global__ void __launch_bounds__(kBlockThreads) BlockRowKernel(const Params p) {
  StartDependent();
  const int64_t row = blockIdx.x;
  const float* x = p.x + row * p.x_stride;
  float* y = p.y + row * p.y_stride;
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < p.dim; i += kBlockThreads) {
    float v = x[i];
    if (p.add != nullptr) {
      v = __fadd_rn(v, p.add[row * p.x_stride + i]);
      p.sum[row * p.x_stride + i] = v;
    }
    sum = __fmaf_rn(v, v, sum);
  }
  const float inv = BlockInvRms(sum, p);
  // The second pass reads back what this thread wrote to sum (x itself when sum is x).
  const float* normed = p.add != nullptr ? p.sum + row * p.x_stride : x;
  for (int64_t i = threadIdx.x; i < p.dim; i += kBlockThreads) {
    y[i] = __fmul_rn(p.weight[i], __fmul_rn(normed[i], inv));
  }
}

}  // namespace twinspan::cuda::rms_norm_kernel

#endif  // TWINSPAN_KERNELS_CUDA_RMS_NORM_KERNEL_CUH_
