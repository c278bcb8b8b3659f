// Packed span columns back to vocabulary ids on the GPU, so a drafter's top-k over span logits
// feeds the selector walk without a host round trip. Twin of kernels/cpu/span_ids.h. Host code
// only (C++20: the spans), so the entry lives in span_ids.cc and launches through
// span_ids_launch.h.
#ifndef TWINSPAN_KERNELS_CUDA_SPAN_IDS_CUH_
#define TWINSPAN_KERNELS_CUDA_SPAN_IDS_CUH_

#include <span>

#include "absl/status/status.h"
#include "common/exl3/span_view.h"
#include "kernels/cuda/context.cuh"

namespace twinspan::cuda {

// cpu::SpanIds with `columns` and `ids` in device memory (may alias) and the spans on the host
// (passed with the launch), asynchronous on ctx.stream. The host cannot see the columns: one
// outside [-1, packed columns) gives -1, as -1 does. Errors: the CPU op's InvalidArgument for the
// sizes and spans, and for null device pointers; Internal for a failed launch.
absl::Status SpanIds(const Context& ctx, std::span<const exl3::ColumnSpan> spans,
                     std::span<const int32_t> columns, std::span<int32_t> ids);

}  // namespace twinspan::cuda

#endif  // TWINSPAN_KERNELS_CUDA_SPAN_IDS_CUH_
