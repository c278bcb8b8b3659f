// Warp reductions with a fixed butterfly: every lane ends with the same bits (fp32 addition is
// commutative), and the order depends on nothing but the lane count, so ops built on them are
// row-invariant.
#ifndef TWINSPAN_KERNELS_CUDA_REDUCE_CUH_
#define TWINSPAN_KERNELS_CUDA_REDUCE_CUH_

#include <cuda_runtime.h>

namespace twinspan::cuda {

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  return v;
}

// One level of WarpSumScatter32: the lanes whose bit kWidth is set keep x[kWidth, 2 kWidth), the
// others x[0, kWidth), each adding its partner's value to its own, into x[0, kWidth).
template <int kWidth>
__device__ __forceinline__ void WarpSumScatterLevel(float (&x)[32], bool upper) {
#pragma unroll
  for (int i = 0; i < kWidth; ++i) {
    const float keep = upper ? x[i + kWidth] : x[i];
    const float send = upper ? x[i] : x[i + kWidth];
    x[i] = __fadd_rn(keep, __shfl_xor_sync(0xffffffffu, send, kWidth));
  }
}

// WarpSum of 32 values at once: lane l returns the sum over lanes of x[l], with WarpSum's bits (at
// each level a lane adds its partner's value to its own for the half it keeps, the pairs WarpSum
// adds), in 31 shuffles instead of 160. x is clobbered.
__device__ __forceinline__ float WarpSumScatter32(float (&x)[32]) {
  const int lane = threadIdx.x % 32;
  WarpSumScatterLevel<16>(x, (lane & 16) != 0);
  WarpSumScatterLevel<8>(x, (lane & 8) != 0);
  WarpSumScatterLevel<4>(x, (lane & 4) != 0);
  WarpSumScatterLevel<2>(x, (lane & 2) != 0);
  WarpSumScatterLevel<1>(x, (lane & 1) != 0);
  return x[0];
}

__device__ __forceinline__ float WarpMax(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  return v;
}

__device__ __forceinline__ float QuietNaN() { return __int_as_float(0x7fc00000); }

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_REDUCE_CUH_
