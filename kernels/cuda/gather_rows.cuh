// Picks rows of a matrix by index on the GPU: the twin of kernels/cpu/gather_rows.h (a tree
// verify's kept path out of its window's rows). Copies only, so the bits are the CPU op's.
#ifndef TWINSPAN_KERNELS_CUDA_GATHER_ROWS_CUH_
#define TWINSPAN_KERNELS_CUDA_GATHER_ROWS_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/context.cuh"

namespace twinspan::cuda {

// dst[i, :width] = src[rows[i], :width] for i < count; src and dst in device memory, rows on the
// host. InvalidArgument as cpu::GatherRows; Internal for a failed launch. Asynchronous.
absl::Status GatherRows(const Context& ctx, const float* src, int64_t src_stride,
                        const int64_t* rows, int64_t count, int64_t width, float* dst,
                        int64_t dst_stride);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_GATHER_ROWS_CUH_
