// Device code of the embedding lookup: one block per row widens the table row to fp32.
#ifndef TWINSPAN_KERNELS_CUDA_EMBEDDING_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_EMBEDDING_KERNEL_CUH_

#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cpu/embedding.h"
#include "kernels/cuda/host_array.cuh"
#include "kernels/cuda/reduce.cuh"

namespace twinspan::cuda::embedding_kernel {

constexpr int kThreads = 256;
constexpr int kMaxHostIds = 512;  // 2 KB of ids per launch.

struct Params {
  const void* table = nullptr;
  cpu::EmbeddingDtype dtype = cpu::EmbeddingDtype::kF32;
  int64_t table_rows = 0;
  int64_t dim = 0;
  float* out = nullptr;                 // Row 0 of this launch.
  const int32_t* device_ids = nullptr;  // Null: ids come from host_ids.
  HostArray<int32_t, kMaxHostIds> host_ids;
};

__device__ __forceinline__ float Widen(const void* table, cpu::EmbeddingDtype dtype, int64_t i) {
  switch (dtype) {
    case cpu::EmbeddingDtype::kBF16:
      return __uint_as_float(static_cast<uint32_t>(static_cast<const uint16_t*>(table)[i]) << 16);
    case cpu::EmbeddingDtype::kF16:
      return __half2float(static_cast<const __half*>(table)[i]);
    case cpu::EmbeddingDtype::kF32:
      break;
  }
  return static_cast<const float*>(table)[i];
}

__global__ void __launch_bounds__(kThreads) EmbeddingKernel(const Params p) {
  const int64_t r = blockIdx.x;
  const int32_t id = p.device_ids != nullptr ? p.device_ids[r] : p.host_ids.v[r];
  float* out = p.out + r * p.dim;
  if (id < 0 || id >= p.table_rows) {
    for (int64_t i = threadIdx.x; i < p.dim; i += kThreads) out[i] = QuietNaN();
    return;
  }
  const int64_t base = static_cast<int64_t>(id) * p.dim;
  for (int64_t i = threadIdx.x; i < p.dim; i += kThreads)
    out[i] = Widen(p.table, p.dtype, base + i);
}

}  // namespace twinspan::cuda::embedding_kernel

#endif  // TWINSPAN_KERNELS_CUDA_EMBEDDING_KERNEL_CUH_
