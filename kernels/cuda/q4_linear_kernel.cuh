// Device code of the Q4 linear (q4_linear.cuh).
//
// Work split: a block of 8 warps owns 8 x C output columns (C = 1, 2 or 4 per warp) and runs over
// the rows R at a time (R = 1, 2, 4 or 8), keeping R x C fp32 accumulators per lane. The input is
// cut into chunks of 1024 features; per chunk the block stages the R rows of x in shared memory (36
// floats per 32, so the lanes' 16-byte reads hit distinct banks) and each lane reads, per column,
// one 16-byte word of codes: 32 consecutive features of one group, with that group's scale and
// offset.
//
// Reduction order (shape-only, so row-invariant): lane l of the warp that owns column j adds, in
// one fp32 accumulator by fmaf, x[r, f] * w[j, f] for f = c * 1024 + 32 l + i, chunks c ascending,
// then i = 0..31 ascending; the 32 lane sums are then added by an xor butterfly (16, 8, 4, 2, 1).
// R, C and the grid never change it. w[j, f] = fmaf(q, scale, offset): exact product, one rounding,
// the same value as the CPU's scale * q + offset.
//
// Bytes over bandwidth (an estimate from instruction counts, not measured): the weight streams once
// per 8 rows at 0.53 bytes a weight, plus x and y. A lane's work per chunk is C 16-byte loads,
// 64 C dequantizing ops and 32 R C fmaf, so on an H200 (about 16.5 bytes per SM clock at 4.3 TB/s,
// 128 fp32 lanes per SM) the kernel should sit at the bandwidth floor up to about 2 rows, near
// 1.3x the floor at 4 rows and about 2.4x at 8 rows (compute-bound); 64 rows re-read the weight
// from L2 per 8 rows and cost about 8 times the 8-row time.
#ifndef TWINSPAN_KERNELS_CUDA_Q4_LINEAR_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_Q4_LINEAR_KERNEL_CUH_

#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda::q4_kernel {

inline constexpr int kWarps = 8;
inline constexpr int kThreads = 32 * kWarps;
inline constexpr int kLaneFeatures = 32;                   // One 16-byte word of codes.
inline constexpr int kChunkFeatures = 32 * kLaneFeatures;  // A warp's features per step.
inline constexpr int kLaneStride = kLaneFeatures + 4;      // Floats per lane segment in smem.
inline constexpr int kGroup = 128;

struct Params {
  const float* x = nullptr;
  int64_t x_stride = 0;
  const uint4* codes = nullptr;  // Row j starts at codes + j * k / 32.
  const __half2* scale_offset = nullptr;
  float* y = nullptr;
  int64_t y_stride = 0;
  int rows = 0;
  int n = 0;
  int k = 0;
};

// Word i of v (i a compile-time constant after unrolling, so no local memory).
__device__ __forceinline__ uint32_t Word(const uint4& v, int i) {
  return i == 0 ? v.x : (i == 1 ? v.y : (i == 2 ? v.z : v.w));
}

// Shared memory a block of R rows needs.
constexpr int SmemBytes(int r) { return r * 32 * kLaneStride * static_cast<int>(sizeof(float)); }

template <int R, int C>
__global__ void __launch_bounds__(kThreads) Q4LinearKernel(Params p) {
  StartDependent();
  extern __shared__ float4 smem[];
  float* xs = reinterpret_cast<float*>(smem);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int col0 = (blockIdx.x * kWarps + warp) * C;
  const int64_t words_per_row = p.k / kLaneFeatures;
  const int64_t groups_per_row = p.k / kGroup;
  for (int r0 = blockIdx.y * R; r0 < p.rows; r0 += gridDim.y * R) {
    float acc[R][C];
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int c = 0; c < C; ++c) acc[r][c] = 0.0f;
    }
    for (int k0 = 0; k0 < p.k; k0 += kChunkFeatures) {
      const int chunk = min(kChunkFeatures, p.k - k0);
      const bool active = lane * kLaneFeatures < chunk;
      // Issue this chunk's weight loads before staging x, so both are in flight together.
      uint4 code[C];
      float2 so[C];
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const int j = col0 + c;
        code[c] = make_uint4(0, 0, 0, 0);
        so[c] = make_float2(0.0f, 0.0f);
        if (active && j < p.n) {
          code[c] = __ldg(p.codes + j * words_per_row + k0 / kLaneFeatures + lane);
          so[c] = __half22float2(
              p.scale_offset[j * groups_per_row + (k0 + lane * kLaneFeatures) / kGroup]);
        }
      }
      __syncthreads();  // The previous chunk's readers are done with xs.
      for (int f = threadIdx.x; f < R * (kChunkFeatures / 4); f += kThreads) {
        const int r = f / (kChunkFeatures / 4), q = f % (kChunkFeatures / 4);
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (r0 + r < p.rows && q * 4 < chunk) {
          v = *reinterpret_cast<const float4*>(p.x + (r0 + r) * p.x_stride + k0 + q * 4);
        }
        reinterpret_cast<float4*>(xs + (r * 32 + q / 8) * kLaneStride)[q % 8] = v;
      }
      __syncthreads();
      if (!active) continue;
#pragma unroll
      for (int i4 = 0; i4 < kLaneFeatures / 4; ++i4) {
        float w[C][4];
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const uint32_t word = Word(code[c], i4 / 2) >> (16 * (i4 % 2));
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            w[c][e] = fmaf(static_cast<float>((word >> (4 * e)) & 0xf), so[c].x, so[c].y);
          }
        }
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const float4 xv = reinterpret_cast<const float4*>(xs + (r * 32 + lane) * kLaneStride)[i4];
#pragma unroll
          for (int c = 0; c < C; ++c) {
            acc[r][c] = fmaf(xv.x, w[c][0], acc[r][c]);
            acc[r][c] = fmaf(xv.y, w[c][1], acc[r][c]);
            acc[r][c] = fmaf(xv.z, w[c][2], acc[r][c]);
            acc[r][c] = fmaf(xv.w, w[c][3], acc[r][c]);
          }
        }
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int c = 0; c < C; ++c) {
        float v = acc[r][c];
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2) {
          v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, offset));
        }
        const int j = col0 + c;
        if (lane == 0 && r0 + r < p.rows && j < p.n) p.y[(r0 + r) * p.y_stride + j] = v;
      }
    }
  }
}

}  // namespace twinspan::cuda::q4_kernel

#endif  // TWINSPAN_KERNELS_CUDA_Q4_LINEAR_KERNEL_CUH_
