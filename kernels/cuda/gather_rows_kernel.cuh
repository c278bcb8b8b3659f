// Device code of GatherRows: one block a row, its threads striding over the row's floats.
#ifndef TWINSPAN_KERNELS_CUDA_GATHER_ROWS_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_GATHER_ROWS_KERNEL_CUH_

#include <cstdint>

#include "kernels/cuda/host_array.cuh"
#include "kernels/cuda/pdl.cuh"

namespace twinspan::cuda::gather_rows_kernel {

constexpr int kThreads = 256;
constexpr int kMaxRows = 256;  // Rows a launch takes: 2 KB of indices.

struct Params {
  const float* src = nullptr;
  int64_t src_stride = 0;
  float* dst = nullptr;  // Row 0 of this launch.
  int64_t dst_stride = 0;
  int64_t width = 0;
  HostArray<int64_t, kMaxRows> rows;
};

__global__ void __launch_bounds__(kThreads) GatherRowsKernel(const Params p) {
  StartDependent();
  const float* from = p.src + p.rows.v[blockIdx.x] * p.src_stride;
  float* to = p.dst + static_cast<int64_t>(blockIdx.x) * p.dst_stride;
  for (int64_t i = threadIdx.x; i < p.width; i += kThreads) to[i] = from[i];
}

}  // namespace twinspan::cuda::gather_rows_kernel

#endif  // TWINSPAN_KERNELS_CUDA_GATHER_ROWS_KERNEL_CUH_
