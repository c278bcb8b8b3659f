// Device code of SpanIds: one thread per column, a linear search over at most 64 spans.
#ifndef TWINSPAN_KERNELS_CUDA_SPAN_IDS_KERNEL_CUH_
#define TWINSPAN_KERNELS_CUDA_SPAN_IDS_KERNEL_CUH_

#include "kernels/cuda/span_ids_launch.h"

namespace twinspan::cuda::span_ids_kernel {

__global__ void __launch_bounds__(kThreads) SpanIdsKernel(const Args args) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= args.count) return;
  const int64_t c = args.columns[i];
  int32_t id = -1;
  int64_t start = 0;
  for (int s = 0; c >= 0 && s < args.spans; ++s) {
    if (c < args.packed_end[s]) {
      id = static_cast<int32_t>(args.begin[s] + (c - start));
      break;
    }
    start = args.packed_end[s];
  }
  args.ids[i] = id;  // Read before written: ids may alias columns.
}

}  // namespace twinspan::cuda::span_ids_kernel

#endif  // TWINSPAN_KERNELS_CUDA_SPAN_IDS_KERNEL_CUH_
