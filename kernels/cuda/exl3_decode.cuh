// Device decode of the EXL3 trellis: one lane's 8 positions of a tile, from its words in the
// device layout (exl3_layout.h), to the A fragment of mma.m16n8k16 for W^T (16 columns x 16 k).
// Lane t's positions 8t..8t+7 are tile elements (k = 2(t%4) + {0,1} + {0,8}, n = t/4 + {0,8})
// (exl3-format.md 2.4), which is exactly the A fragment of the transposed tile, so one mma per
// tile serves 8 input rows (the B operand) instead of two mmas per 16 rows.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_DECODE_CUH_
#define TWINSPAN_KERNELS_CUDA_EXL3_DECODE_CUH_

#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/exl3_lane_windows.h"

namespace twinspan::cuda::exl3_kernel {

// Matches the order of exl3::Codebook; the kernels are instantiated per codebook.
enum class Cb : int { k3inst = 0, kMcg = 1, kMul1 = 2 };

// Two fp16 codebook values of states s0, s1 packed as (lo = s0, hi = s1).
template <Cb CB>
__device__ __forceinline__ uint32_t Codebook2(uint32_t s0, uint32_t s1) {
  if constexpr (CB == Cb::kMul1) {
    // value = fp16(1024 + bytesum(s*M)) * 1/147.7 - 10.38: one rounding, as __hfma.
    const uint32_t x0 = s0 * 0x83DCD12Du, x1 = s1 * 0x83DCD12Du;
    const uint32_t h0 = __dp4a(x0, 0x01010101u, 0x6400u);
    const uint32_t h1 = __dp4a(x1, 0x01010101u, 0x6400u);
    const uint32_t h = __byte_perm(h0, h1, 0x5410);
    const __half2 kinv = __halves2half2(__ushort_as_half(0x1EEE), __ushort_as_half(0x1EEE));
    const __half2 kbias = __halves2half2(__ushort_as_half(0xC931), __ushort_as_half(0xC931));
    const __half2 v = __hfma2(*reinterpret_cast<const __half2*>(&h), kinv, kbias);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    uint32_t x0, x1;
    if constexpr (CB == Cb::k3inst) {
      x0 = s0 * 89226354u + 64248484u;
      x1 = s1 * 89226354u + 64248484u;
    } else {
      x0 = s0 * 0xCBAC1FEDu;
      x1 = s1 * 0xCBAC1FEDu;
    }
    // Keep sign and 12 mantissa bits, force the exponent into [0.125, 2): one lop3 each.
    x0 = (x0 & 0x8FFF8FFFu) ^ 0x3B603B60u;
    x1 = (x1 & 0x8FFF8FFFu) ^ 0x3B603B60u;
    const uint32_t lo = __byte_perm(x0, x1, 0x5410), hi = __byte_perm(x0, x1, 0x7632);
    const __half2 v =
        __hadd2(*reinterpret_cast<const __half2*>(&lo), *reinterpret_cast<const __half2*>(&hi));
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

// Decodes tile T (0..3) of the lane's half-strip words `w` into the A fragment `a` of W^T:
// a[0] = positions (0, 1), a[1] = (4, 5), a[2] = (2, 3), a[3] = (6, 7). All lanes must call it
// together (one or two shuffles fetch the predecessor's bits).
template <Cb CB, int K, int T>
__device__ __forceinline__ void DecodeTileA(const uint32_t (&w)[K], int lane, uint32_t a[4]) {
  const uint32_t send = exl3_bits::SendWord<K, T>(w);
  uint32_t prev = __shfl_sync(0xFFFFFFFFu, send, (lane + 31) & 31);
  if constexpr (K == 1)
    prev = exl3_bits::Prev1(prev, __shfl_sync(0xFFFFFFFFu, send, (lane + 30) & 31));
  uint32_t s[8];
  exl3_bits::WindowStates<K, T>(w, prev, s);
  a[0] = Codebook2<CB>(s[0], s[1]);
  a[1] = Codebook2<CB>(s[4], s[5]);
  a[2] = Codebook2<CB>(s[2], s[3]);
  a[3] = Codebook2<CB>(s[6], s[7]);
}

// c += A * B for one m16n8k16 tile: A = W^T fragment, B = 8 input rows of 16 k (fp16).
__device__ __forceinline__ void Mma16816(float c[4], const uint32_t a[4], uint32_t b0,
                                         uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace twinspan::cuda::exl3_kernel

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_DECODE_CUH_
