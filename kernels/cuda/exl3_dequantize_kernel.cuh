// Device code of the EXL3 prompt path's decode: every tile of a trellis slab decoded once, by the
// linear kernel's own DecodeTileA, into the A fragments LinearKernel<Cb::kFragments, ...> reads
// (exl3_layout.h), so a prompt's 64-row launches multiply the very values a lone row would.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_DEQUANTIZE_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_EXL3_DEQUANTIZE_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/exl3_decode.cuh"
#include "kernels/cuda/exl3_layout.h"
#include "kernels/cuda/exl3_linear_kernel.cuh"

namespace twinspan::cuda::exl3_kernel {

constexpr int kDequantizeWarps = 8;  // Per block; one warp per half-strip.

// Half-strip i of `trellis` (device layout, K words a lane) becomes half-strip i of `fragments`
// (16 words a lane): both layouts order half-strips alike. The loads are the linear kernel's for
// 4-tile items, so each lane decodes exactly the words it would.
template <Cb CB, int K>
__global__ void __launch_bounds__(32 * kDequantizeWarps)
    DequantizeKernel(const uint32_t* trellis, uint32_t* fragments, int64_t half_strips) {
  AllowNextGrid();
  const int lane = threadIdx.x & 31;
  const int64_t hs = static_cast<int64_t>(blockIdx.x) * kDequantizeWarps + (threadIdx.x >> 5);
  if (hs >= half_strips) return;  // Whole warps: hs is the same for all lanes.
  constexpr int V = Exl3VectorWords(K);
  const uint32_t* src = trellis + hs * 32 * K + lane * V;
  uint32_t w[K];
  const uint64_t policy = EvictFirstPolicy();
#pragma unroll
  for (int v = 0; v < K / V; ++v) LoadVector<V>(src + v * 32 * V, w + v * V, policy);
  uint32_t a[4][4];
  DecodeTileA<CB, K, 0>(w, lane, a[0]);
  DecodeTileA<CB, K, 1>(w, lane, a[1]);
  DecodeTileA<CB, K, 2>(w, lane, a[2]);
  DecodeTileA<CB, K, 3>(w, lane, a[3]);
  // The previous grid (a linear on the last slab's fragments) must end before they are replaced.
  WaitForPriorGrids();
  uint4* dst = reinterpret_cast<uint4*>(fragments + hs * 32 * kExl3FragmentWords) + lane;
#pragma unroll
  for (int t = 0; t < 4; ++t) dst[t * 32] = make_uint4(a[t][0], a[t][1], a[t][2], a[t][3]);
}

}  // namespace twinspan::cuda::exl3_kernel

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_DEQUANTIZE_KERNEL_CUH_
