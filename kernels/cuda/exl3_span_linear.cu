// Host side of the span head: each span's view becomes one output range of a single launch.
#include "absl/strings/str_format.h"
#include "kernels/cuda/exl3_layout.h"
#include "kernels/cuda/exl3_linear_run.cuh"
#include "kernels/cuda/exl3_span_linear.cuh"

namespace twinspan::cuda {
namespace {

// The span's view narrowed to its KeptBlocks; the plan stays the head's, so the kept columns'
// bits do not change. Returns the first kept block. REQUIRES: a valid span.
int64_t NarrowToKept(const Exl3DeviceSpan& s, Exl3DeviceWeight* view) {
  *view = s.view;
  if (!s.view.trellis || !s.view.svh) return 0;  // Left for validation to name.
  const Exl3KeptBlocks kept = KeptBlocks(s);
  view->trellis += kept.first * Exl3BlockWords(s.view.k, s.view.bits);
  view->svh += kept.first * 128;
  if (view->bias) view->bias += kept.first * 128;
  view->n = (kept.end - kept.first) * 128;
  return kept.first;
}

// The spans as output ranges side by side, over views[] (their narrowed views); InvalidArgument
// for a bad count or span.
absl::Status ToOutputs(const Exl3DeviceSpan* spans, int count, Exl3DeviceWeight* views,
                       exl3_run::Output* outs, int64_t* packed_size) {
  if (!spans || count < 1 || count > kMaxExl3Spans)
    return absl::InvalidArgumentError(
        absl::StrFormat("Exl3SpanLinear: %d spans, need 1..%d", count, kMaxExl3Spans));
  int64_t col = 0;
  for (int i = 0; i < count; ++i) {
    const Exl3DeviceSpan& s = spans[i];
    if (s.drop_front < 0 || s.size < 1 || s.drop_front + s.size > s.view.n)
      return absl::InvalidArgumentError(
          absl::StrFormat("Exl3SpanLinear: span %d keeps columns [%d, %d) of a %d-column view", i,
                          s.drop_front, s.drop_front + s.size, s.view.n));
    const int64_t begin = s.drop_front - 128 * NarrowToKept(s, &views[i]);
    outs[i] = {&views[i], begin, begin + s.size, col};
    col += s.size;
  }
  *packed_size = col;
  return absl::OkStatus();
}

}  // namespace

size_t Exl3SpanLinearWorkspaceBytes(const Exl3DeviceSpan* spans, int count, int64_t rows) {
  Exl3DeviceWeight views[kMaxExl3Spans];
  exl3_run::Output outs[kMaxExl3Spans];
  int64_t packed = 0;
  if (!ToOutputs(spans, count, views, outs, &packed).ok()) return 0;
  const exl3_run::Part part{outs, count, nullptr, 0};
  return exl3_run::WorkspaceBytes(&part, 1, rows);
}

absl::Status Exl3SpanLinear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                            const Exl3DeviceSpan* spans, int count, float* packed,
                            int64_t packed_stride) {
  Exl3DeviceWeight views[kMaxExl3Spans];
  exl3_run::Output outs[kMaxExl3Spans];
  int64_t packed_size = 0;
  if (absl::Status s = ToOutputs(spans, count, views, outs, &packed_size); !s.ok()) return s;
  if (packed_stride < packed_size)
    return absl::InvalidArgumentError(
        absl::StrFormat("Exl3SpanLinear: packed_stride=%d is below the %d packed logits",
                        packed_stride, packed_size));
  const exl3_run::Part part{outs, count, packed, packed_stride};
  return exl3_run::Run("Exl3SpanLinear", ctx, x, x_stride, rows, &part, 1);
}

}  // namespace twinspan::cuda
