// Picks rows of a matrix by index: a tree verify's kept path, out of the rows of its window (the
// replay inputs of a Gated DeltaNet commit, the tap rows the drafter gets).
#ifndef TWINSPAN_KERNELS_CPU_GATHER_ROWS_H_
#define TWINSPAN_KERNELS_CPU_GATHER_ROWS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

// dst[i, :width] = src[rows[i], :width] for i < count (row strides in floats), bits unchanged.
// dst must not overlap src. InvalidArgument for count < 0, width < 0, a stride below width, a
// null array or a negative row index.
absl::Status GatherRows(const Context& ctx, const float* src, int64_t src_stride,
                        const int64_t* rows, int64_t count, int64_t width, float* dst,
                        int64_t dst_stride);

// The checks of GatherRows on their own (the CUDA twin shares them).
absl::Status CheckGatherRows(const float* src, int64_t src_stride, const int64_t* rows,
                             int64_t count, int64_t width, const float* dst, int64_t dst_stride);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_GATHER_ROWS_H_
