// Device code of the KV cache write: one block per written row (a row whose position comes again
// later in the launch is skipped, so the last one wins as on the CPU); bf16 rounding is the CPU
// cache's bit formula (kernels/cpu/kv_cache.cc via common/safetensors/half.h), not
// __float2bfloat16, so NaN payloads come out the same too.
#ifndef TWINSPAN_KERNELS_CUDA_KV_CACHE_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_KV_CACHE_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/host_array.cuh"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda::kv_cache_kernel {

constexpr int kThreads = 256;
constexpr int kMaxRows = 256;  // 2 KB of positions per launch.

struct Params {
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  bool bf16 = true;
  int64_t row_size = 0;
  const float* k = nullptr;  // Row 0 of this launch.
  int64_t k_stride = 0;
  const float* v = nullptr;
  int64_t v_stride = 0;
  int rows = 0;  // In this launch.
  HostArray<int64_t, kMaxRows> positions;
};

__device__ __forceinline__ uint16_t ToBFloat16(float f) {
  const uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

__global__ void __launch_bounds__(kThreads) WriteKernel(const Params p) {
  StartDependent();
  const int r = blockIdx.x;
  for (int later = r + 1; later < p.rows; ++later) {  // A repeated position keeps the last row.
    if (p.positions.v[later] == p.positions.v[r]) return;
  }
  const int64_t base = p.positions.v[r] * p.row_size;
  const float* k = p.k + r * p.k_stride;
  const float* v = p.v + r * p.v_stride;
  for (int64_t i = threadIdx.x; i < p.row_size; i += kThreads) {
    if (p.bf16) {
      static_cast<uint16_t*>(p.k_cache)[base + i] = ToBFloat16(k[i]);
      static_cast<uint16_t*>(p.v_cache)[base + i] = ToBFloat16(v[i]);
    } else {
      static_cast<float*>(p.k_cache)[base + i] = k[i];
      static_cast<float*>(p.v_cache)[base + i] = v[i];
    }
  }
}

}  // namespace twinspan::cuda::kv_cache_kernel

#endif  // TWINSPAN_KERNELS_CUDA_KV_CACHE_KERNEL_CUH_
