// Top-k over the rows of a logits matrix on the GPU (the drafter's candidate cut): the twin of
// kernels/cpu/topk.h. Exact: values descending, equal values (+0 and -0 included) with the lower
// column first, the same values and indices as the CPU op for any rows, threads or row count.
#ifndef TWINSPAN_KERNELS_CUDA_TOPK_CUH_
#define TWINSPAN_KERNELS_CUDA_TOPK_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/context.cuh"

namespace twinspan::cuda {

// The largest k one block sorts in shared memory.
inline constexpr int64_t kMaxTopK = 4096;

// For each row r of `logits` (device, row r at logits + r * logits_stride, `cols` values), writes
// its k largest values to values[r * k, (r + 1) * k) and their columns to indices (device), sorted
// as above. The host cannot see the logits, so a row holding a NaN is written as NaN values and
// index -1 (the CPU op refuses it). InvalidArgument naming the argument for k outside
// [1, min(cols, kMaxTopK)], cols above 2^31 - 1, rows < 0, a stride below cols or a null pointer.
// Asynchronous on ctx.stream.
absl::Status TopK(const Context& ctx, const float* logits, int64_t logits_stride, int64_t rows,
                  int64_t cols, int64_t k, float* values, int32_t* indices);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_TOPK_CUH_
