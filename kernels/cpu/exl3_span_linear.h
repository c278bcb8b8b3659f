// The two-span (or any-span) EXL3 head on the CPU: each span view's logits (exl3::MakeSpanViews)
// side by side in one packed row. Twin of kernels/cuda/exl3_span_linear.cuh; each view plans as
// the head, so the packed logits equal the head's own logits at the same columns bit for bit.
#ifndef TWINSPAN_KERNELS_CPU_EXL3_SPAN_LINEAR_H_
#define TWINSPAN_KERNELS_CPU_EXL3_SPAN_LINEAR_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "common/exl3/span_view.h"
#include "kernels/cpu/context.h"

namespace twinspan::cpu {

// packed[r, :] = the views' span logits side by side in view order (exl3::PackedSize(views) per
// row, row stride packed_stride floats) for x [rows, k] with row stride x_stride. Errors as
// cpu::Exl3Linear and exl3::PackSpanLogits.
absl::Status Exl3SpanLinear(const float* x, int64_t x_stride, int64_t rows,
                            std::span<const exl3::SpanView> views, float* packed,
                            int64_t packed_stride, int num_threads = 1);

// The same on ctx's pool (the CPU backend's form, the twin of cuda::Exl3SpanLinear's signature):
// each view splits into column blocks on the pool, which changes no bit.
absl::Status Exl3SpanLinear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                            std::span<const exl3::SpanView> views, float* packed,
                            int64_t packed_stride);

}  // namespace twinspan::cpu

#endif  // TWINSPAN_KERNELS_CPU_EXL3_SPAN_LINEAR_H_
