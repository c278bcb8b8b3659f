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
