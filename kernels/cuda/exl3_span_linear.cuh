// The two-span (or any-span) head on the GPU: the logits of several column views of one EXL3 head,
// computed in one launch planned as the head and written side by side into one packed row. Twin of
// kernels/cpu/exl3_span_linear.h; bit-equal to the head's own logits at the same columns.
#ifndef TWINSPAN_KERNELS_CUDA_EXL3_SPAN_LINEAR_CUH_
#define TWINSPAN_KERNELS_CUDA_EXL3_SPAN_LINEAR_CUH_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/exl3_linear.cuh"

namespace twinspan::cuda {

// One span: a column view of the head (with the head's plan) whose columns [drop_front,
// drop_front + size) are the span's logits (exl3::SpanView's drop_front() and size()).
struct Exl3DeviceSpan {
  Exl3DeviceWeight view;
  int64_t drop_front = 0;
  int64_t size = 0;
};

// The 128-column blocks [first, end) of the span's view that hold its kept columns: the only ones
// Exl3SpanLinear decodes (a tail view widened to 64 blocks to plan as the head keeps 288 columns).
struct Exl3KeptBlocks {
  int64_t first = 0, end = 0;
};
inline Exl3KeptBlocks KeptBlocks(const Exl3DeviceSpan& s) {
  return {s.drop_front / 128, (s.drop_front + s.size + 127) / 128};
}

// At most this many spans per launch.
inline constexpr int kMaxExl3Spans = 4;

// Bytes of workspace Exl3SpanLinear needs for these spans at up to `rows` rows.
size_t Exl3SpanLinearWorkspaceBytes(const Exl3DeviceSpan* spans, int count, int64_t rows);

// packed[r, :] = the spans' logits side by side in span order (sum of sizes per row, row stride
// packed_stride floats), from one launch per 64 rows. x as for Exl3Linear. InvalidArgument when
// count is not 1..kMaxExl3Spans, the views are not of one matrix (k, bits, codebook, plan, suh),
// a span's columns are outside its view, or packed_stride is below the packed row; otherwise as
// Exl3Linear.
absl::Status Exl3SpanLinear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                            const Exl3DeviceSpan* spans, int count, float* packed,
                            int64_t packed_stride);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_EXL3_SPAN_LINEAR_CUH_
