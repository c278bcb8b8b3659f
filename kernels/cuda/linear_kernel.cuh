// Device code of the dense linear. A warp computes kCols consecutive outputs for a tile of kRows
// rows; per 256-wide k step each lane loads 8 weights of each column (one 16-byte load for bf16 /
// f16, two for f32) and 8 inputs of each row, and accumulates with fma in k order. The tile height
// only decides which rows share a weight load: each row's sum is the same. Weight-bandwidth bound
// for decode; a 64-row window reads each weight from L2 8 times.
// Narrow weights (n below kSplitBelowColumns: the 27B's 48-output gates made 3 blocks of 4 warps,
// each walking all of k alone) take SplitKernel: a block of kSplitWarps warps owns kSplitCols
// columns, warp w takes the k steps w, w + kSplitWarps, ... as above, and the warps' sums are added
// in warp order. Which kernel runs depends on n only; how many columns or rows a block takes
// changes no column's sum.
#ifndef TWINSPAN_KERNELS_CUDA_LINEAR_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_LINEAR_KERNEL_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/pdl.cuh"
#include "kernels/cuda/reduce.cuh"

namespace twinspan::cuda::linear_kernel {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kCols = 4;   // Output columns per warp.
constexpr int kLaneK = 8;  // Consecutive k per lane per step.
constexpr int kStepK = 32 * kLaneK;
constexpr int kSplitBelowColumns = 1024;  // Below 64 blocks of the plain kernel.
constexpr int kSplitWarps = 8;
constexpr int kSplitThreads = 32 * kSplitWarps;
// Two columns a block: 24 blocks for the 48-output gates, so twice the SMs share their loads.
constexpr int kSplitCols = 2;

struct Params {
  const float* x = nullptr;
  int64_t x_stride = 0;
  int64_t rows = 0;
  const void* w = nullptr;
  int64_t n = 0;
  int64_t k = 0;
  int64_t pitch = 0;
  float* y = nullptr;
  int64_t y_stride = 0;
};

struct Bf16Weight {};
struct F16Weight {};
struct F32Weight {};

__device__ __forceinline__ void LoadWeights(Bf16Weight, const void* w, int64_t offset, float* out) {
  const uint4 raw = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(w) + offset);
  const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = __uint_as_float(words[i] << 16);
    out[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
  }
}

__device__ __forceinline__ void LoadWeights(F16Weight, const void* w, int64_t offset, float* out) {
  const uint4 raw = *reinterpret_cast<const uint4*>(static_cast<const __half*>(w) + offset);
  const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = __half2float(__ushort_as_half(static_cast<unsigned short>(words[i] & 0xffffu)));
    out[2 * i + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(words[i] >> 16)));
  }
}

__device__ __forceinline__ void LoadWeights(F32Weight, const void* w, int64_t offset, float* out) {
  const float4* src = reinterpret_cast<const float4*>(static_cast<const float*>(w) + offset);
  const float4 a = src[0], b = src[1];
  out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
  out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
}

// Eight inputs from k0; kVector: the row is 16-byte aligned and k is a multiple of 8.
template <bool kVector>
__device__ __forceinline__ void LoadInputs(const float* x, int64_t k0, int64_t k, float* out) {
  if constexpr (kVector) {
    const float4 a = *reinterpret_cast<const float4*>(x + k0);
    const float4 b = *reinterpret_cast<const float4*>(x + k0 + 4);
    out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
    out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
  } else {
#pragma unroll
    for (int i = 0; i < kLaneK; ++i) out[i] = k0 + i < k ? x[k0 + i] : 0.0f;  // Pad weights are 0.
  }
}

// acc[r][c] = this thread's fma chain over k = k_first, k_first + k_step, ... for rows r0.. and
// columns col0..; one definition for both kernels, so their per-thread sums are the same code.
template <typename Weight, int kRows, int kCols, bool kVector>
__device__ __forceinline__ void Accumulate(const Params& p, int64_t col0, int64_t r0,
                                           int64_t k_first, int64_t k_step,
                                           float (&acc)[kRows][kCols]) {
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
#pragma unroll
    for (int c = 0; c < kCols; ++c) acc[r][c] = 0.0f;
  }
  for (int64_t k0 = k_first; k0 < p.k; k0 += k_step) {
    float w[kCols][kLaneK];
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      if (col0 + c < p.n) {
        LoadWeights(Weight{}, p.w, (col0 + c) * p.pitch + k0, w[c]);
      } else {
#pragma unroll
        for (int i = 0; i < kLaneK; ++i) w[c][i] = 0.0f;
      }
    }
    // Rows past the end repeat the last row, so no branch keeps the loads from issuing together
    // (one dependent L2 load a row made the 16-row gates ~16 us); their sums are never stored.
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int64_t row = r0 + r < p.rows ? r0 + r : p.rows - 1;
      float xv[kLaneK];
      LoadInputs<kVector>(p.x + row * p.x_stride, k0, p.k, xv);
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
#pragma unroll
        for (int i = 0; i < kLaneK; ++i) acc[r][c] = __fmaf_rn(xv[i], w[c][i], acc[r][c]);
      }
    }
  }
}

template <typename Weight, int kRows, bool kVector>
__global__ void __launch_bounds__(kThreads) DenseLinearKernel(const Params p) {
  StartDependent();
  const int lane = threadIdx.x % 32;
  const int64_t col0 = (static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32) * kCols;
  if (col0 >= p.n) return;
  for (int64_t r0 = 0; r0 < p.rows; r0 += kRows) {
    float acc[kRows][kCols];
    Accumulate<Weight, kRows, kCols, kVector>(p, col0, r0, static_cast<int64_t>(lane) * kLaneK,
                                              kStepK, acc);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (r0 + r >= p.rows) break;
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const float sum = WarpSum(acc[r][c]);
        if (lane == 0 && col0 + c < p.n) p.y[(r0 + r) * p.y_stride + col0 + c] = sum;
      }
    }
  }
}

// One block per kSplitCols columns; its warps split k (see the file comment).
template <typename Weight, int kRows, bool kVector>
__global__ void __launch_bounds__(kSplitThreads) SplitKernel(const Params p) {
  StartDependent();
  constexpr int kCols = kSplitCols;
  __shared__ float partial[kSplitWarps][kRows][kCols];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kCols;
  for (int64_t r0 = 0; r0 < p.rows; r0 += kRows) {
    float acc[kRows][kCols];
    Accumulate<Weight, kRows, kCols, kVector>(
        p, col0, r0, static_cast<int64_t>(warp * 32 + lane) * kLaneK, kSplitWarps * kStepK, acc);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const float sum = WarpSum(acc[r][c]);
        if (lane == 0) partial[warp][r][c] = sum;
      }
    }
    __syncthreads();
    if (threadIdx.x < kRows * kCols) {
      const int r = threadIdx.x / kCols, c = threadIdx.x % kCols;
      if (r0 + r < p.rows && col0 + c < p.n) {
        float sum = partial[0][r][c];
#pragma unroll
        for (int v = 1; v < kSplitWarps; ++v) sum = __fadd_rn(sum, partial[v][r][c]);
        p.y[(r0 + r) * p.y_stride + col0 + c] = sum;
      }
    }
    __syncthreads();  // partial is rewritten by the next tile.
  }
}

}  // namespace twinspan::cuda::linear_kernel

#endif  // TWINSPAN_KERNELS_CUDA_LINEAR_KERNEL_CUH_
