// Device code of the Q4 linear (q4_linear.cuh).
//
// Work split: a block of 8 warps owns 8 x C output columns (C = 1, 2 or 4 per warp) of one of the
// launch's weights (up to kMaxParts of one k, each a range of blocks) and runs over the rows R at a
// time (R = 1, 2, 4 or 8), keeping R x C fp32 accumulators per lane. The input is cut into chunks
// of 1024 features; the block copies the R rows of each chunk of x into one of two shared buffers
// (36 floats per 32, so the lanes' 16-byte reads hit distinct banks) and each lane loads, per
// column, one 16-byte word of codes (32 consecutive features of one group) and that group's scale
// and offset, all one chunk ahead of the chunk it multiplies.
//
// Reduction order (shape-only, so row-invariant): lane l of the warp that owns column j adds, in
// one fp32 accumulator by fmaf, x[r, f] * w[j, f] for f = c * 1024 + 32 l + i, chunks c ascending,
// then i = 0..31 ascending; the 32 lane sums are then added by an xor butterfly (16, 8, 4, 2, 1).
// R, C and the grid never change it. w[j, f] = fmaf(q, scale, offset): exact product, one rounding,
// the same value as the CPU's scale * q + offset; q comes from its nibble by a lop3 and an exact
// subtraction, not an int-to-float conversion.
//
// Limits: a lane's work per chunk is C 16-byte loads, 3 ops per weight to dequantize and R fmaf
// per weight, so from about 4 rows up the kernel is bound by the fp32 pipe, not by bandwidth (8
// rows: 8 fmaf per 0.53 bytes of weight); 64 rows re-read the weight from L2 per 8 rows.
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

inline constexpr int kMaxParts = 3;

// One weight of a launch and its outputs; blocks first_block .. the next part's first - 1 are its.
struct Part {
  const uint4* codes = nullptr;  // Row j starts at codes + j * k / 32.
  const __half2* scale_offset = nullptr;
  float* y = nullptr;
  int64_t y_stride = 0;
  int n = 0;
  int first_block = 0;
};

struct Params {
  const float* x = nullptr;
  int64_t x_stride = 0;
  int rows = 0;
  int k = 0;
  int parts = 0;
  Part part[kMaxParts];
};

// Word i of v (i a compile-time constant after unrolling, so no local memory).
__device__ __forceinline__ uint32_t Word(const uint4& v, int i) {
  return i == 0 ? v.x : (i == 1 ? v.y : (i == 2 ? v.z : v.w));
}

// Shared memory a block of R rows needs: two chunk buffers, one filled while the other is read.
constexpr int SmemBytes(int r) {
  return 2 * r * 32 * kLaneStride * static_cast<int>(sizeof(float));
}

// 16 bytes from global to shared memory without a register round trip; zeros when !fill.
__device__ __forceinline__ void CopyAsync16(float* dst, const float* src, bool fill) {
  const auto d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
               "r"(fill ? 16 : 0));
}
__device__ __forceinline__ void CommitCopies() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most one committed group (the newest) is still in flight.
__device__ __forceinline__ void WaitCopiesButNewest() {
  asm volatile("cp.async.wait_group 1;\n" ::: "memory");
}

// The lane's codes and (scale, offset) of chunk k0 for its C columns (zeros past the end).
template <int C>
__device__ __forceinline__ void LoadCodes(const Params& p, const Part& w, int col0, int lane,
                                          int k0, uint4 (&code)[C], __half2 (&so)[C]) {
  const bool active = k0 + lane * kLaneFeatures < p.k;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const int j = col0 + c;
    code[c] = make_uint4(0, 0, 0, 0);
    so[c] = __half2{};
    if (active && j < w.n) {
      code[c] = __ldg(w.codes + int64_t{j} * (p.k / kLaneFeatures) + k0 / kLaneFeatures + lane);
      so[c] = w.scale_offset[int64_t{j} * (p.k / kGroup) + (k0 + lane * kLaneFeatures) / kGroup];
    }
  }
}

// Starts copying rows r0 .. r0 + R - 1 of x's chunk k0 into xs (zeros past the rows and k).
template <int R>
__device__ __forceinline__ void StageX(const Params& p, int r0, int k0, float* xs) {
  const int chunk = min(kChunkFeatures, p.k - k0);
#pragma unroll
  for (int i = 0; i < R * (kChunkFeatures / 4) / kThreads; ++i) {
    const int f = threadIdx.x + i * kThreads;
    const int r = f / (kChunkFeatures / 4), q = f % (kChunkFeatures / 4);
    const bool fill = r0 + r < p.rows && q * 4 < chunk;
    const float* src = fill ? p.x + int64_t{r0 + r} * p.x_stride + k0 + q * 4 : p.x;
    CopyAsync16(xs + (r * 32 + q / 8) * kLaneStride + (q % 8) * 4, src, fill);
  }
}

// q * 2^(8e) as an exact float, for the nibble q at bits 8e .. 8e + 3 of h (e = 0 or 1): the masked
// bits under the exponent of 2^23, less 2^23, so no int-to-float conversion is needed.
template <int E>
__device__ __forceinline__ float NibbleScaled(uint32_t h) {
  uint32_t bits;  // One lop3 (h & mask | 2^23's bits); written out, nvcc splits it in two.
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;"
      : "=r"(bits)
      : "r"(h), "n"(0xFu << (8 * E)), "r"(0x4B000000u));
  return __fsub_rn(__uint_as_float(bits), 8388608.0f);
}

// Blocks an SM holds: two, but 8 rows x 4 columns needs more than half the registers (held to
// half, it spilled and ran 18% slower on the H200; docs/perf.md).
template <int R, int C>
constexpr int MinBlocks() {
  return R == 8 && C == 4 ? 1 : 2;
}

template <int R, int C>
__global__ void __launch_bounds__(kThreads, MinBlocks<R, C>()) Q4LinearKernel(Params p) {
  StartDependent();
  extern __shared__ float4 smem[];
  float* const xs_base = reinterpret_cast<float*>(smem);
  constexpr int kBufferFloats = R * 32 * kLaneStride;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // This block's weight, copied out of the parameters by constant indices (so no local memory).
  Part weight = p.part[0];
#pragma unroll
  for (int i = 1; i < kMaxParts; ++i) {
    if (i < p.parts && static_cast<int>(blockIdx.x) >= p.part[i].first_block) weight = p.part[i];
  }
  const int col0 = ((static_cast<int>(blockIdx.x) - weight.first_block) * kWarps + warp) * C;
  for (int r0 = blockIdx.y * R; r0 < p.rows; r0 += gridDim.y * R) {
    float acc[R][C];
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int c = 0; c < C; ++c) acc[r][c] = 0.0f;
    }
    // Chunk k0's codes sit in registers and its x in a buffer while chunk k0 + 1024's are loaded.
    uint4 code[C];
    __half2 so[C];
    LoadCodes<C>(p, weight, col0, lane, 0, code, so);
    StageX<R>(p, r0, 0, xs_base);
    CommitCopies();
    for (int k0 = 0, b = 0; k0 < p.k; k0 += kChunkFeatures, b ^= 1) {
      uint4 next_code[C];
      __half2 next_so[C];
      LoadCodes<C>(p, weight, col0, lane, k0 + kChunkFeatures, next_code,
                   next_so);  // Zeros past k.
      if (k0 + kChunkFeatures < p.k)
        StageX<R>(p, r0, k0 + kChunkFeatures, xs_base + (b ^ 1) * kBufferFloats);
      CommitCopies();  // Possibly empty, so the wait below always leaves exactly the newest.
      WaitCopiesButNewest();
      __syncthreads();  // Every thread's copies of this chunk have landed.
      const float* xs = xs_base + b * kBufferFloats;
      if (k0 + lane * kLaneFeatures < p.k) {
        float scale[C][2], offset[C];  // scale and scale * 2^-8, for nibbles at bits 0 and 8.
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const float2 f = __half22float2(so[c]);
          scale[c][0] = f.x;
          scale[c][1] = f.x * (1.0f / 256.0f);
          offset[c] = f.y;
        }
#pragma unroll
        for (int i4 = 0; i4 < kLaneFeatures / 4; ++i4) {
          float w[C][4];
#pragma unroll
          for (int c = 0; c < C; ++c) {
            const uint32_t h = Word(code[c], i4 / 2) >> (16 * (i4 % 2)), h4 = h >> 4;
            // q * 2^(8e) times scale * 2^(-8e) is exactly q * scale: the CPU's value, one rounding.
            w[c][0] = fmaf(NibbleScaled<0>(h), scale[c][0], offset[c]);
            w[c][1] = fmaf(NibbleScaled<0>(h4), scale[c][0], offset[c]);
            w[c][2] = fmaf(NibbleScaled<1>(h), scale[c][1], offset[c]);
            w[c][3] = fmaf(NibbleScaled<1>(h4), scale[c][1], offset[c]);
          }
#pragma unroll
          for (int r = 0; r < R; ++r) {
            const float4 xv =
                reinterpret_cast<const float4*>(xs + (r * 32 + lane) * kLaneStride)[i4];
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
      __syncthreads();  // This buffer's readers are done before the next chunk refills it.
#pragma unroll
      for (int c = 0; c < C; ++c) {
        code[c] = next_code[c];
        so[c] = next_so[c];
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
        if (lane == 0 && r0 + r < p.rows && j < weight.n)
          weight.y[(r0 + r) * weight.y_stride + j] = v;
      }
    }
  }
}

}  // namespace twinspan::cuda::q4_kernel

#endif  // TWINSPAN_KERNELS_CUDA_Q4_LINEAR_KERNEL_CUH_
