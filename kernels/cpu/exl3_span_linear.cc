#include "kernels/cpu/exl3_span_linear.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "kernels/cpu/exl3_linear.h"
#include "kernels/cpu/linear.h"

namespace twinspan::cpu {

namespace {

absl::Status CheckArguments(int64_t rows, std::span<const exl3::SpanView> views,
                            int64_t packed_stride) {
  if (rows < 0 || packed_stride < exl3::PackedSize(views))
    return absl::InvalidArgumentError(absl::StrCat("Exl3SpanLinear: rows ", rows,
                                                   ", packed row stride ", packed_stride, " for ",
                                                   exl3::PackedSize(views), " logits"));
  return absl::OkStatus();
}

// Runs each view into its own output rows with `linear`, then packs the spans' columns.
template <typename RunView>
absl::Status RunAndPack(int64_t rows, std::span<const exl3::SpanView> views, float* packed,
                        int64_t packed_stride, const RunView& linear) {
  std::vector<std::vector<float>> outputs(views.size());
  std::vector<const float*> pointers;
  for (size_t i = 0; i < views.size(); ++i) {
    const exl3::Weight& w = views[i].weight;
    outputs[i].resize(static_cast<size_t>(rows * w.n()));
    ABSL_RETURN_IF_ERROR(linear(w, outputs[i].data()));
    pointers.push_back(outputs[i].data());
  }
  return exl3::PackSpanLogits(views, pointers, rows, packed, packed_stride);
}

}  // namespace

absl::Status Exl3SpanLinear(const float* x, int64_t x_stride, int64_t rows,
                            std::span<const exl3::SpanView> views, float* packed,
                            int64_t packed_stride, int num_threads) {
  ABSL_RETURN_IF_ERROR(CheckArguments(rows, views, packed_stride));
  return RunAndPack(rows, views, packed, packed_stride, [&](const exl3::Weight& w, float* y) {
    return Exl3Linear(x, x_stride, rows, w, y, w.n(), num_threads);
  });
}

absl::Status Exl3SpanLinear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                            std::span<const exl3::SpanView> views, float* packed,
                            int64_t packed_stride) {
  ABSL_RETURN_IF_ERROR(CheckArguments(rows, views, packed_stride));
  return RunAndPack(rows, views, packed, packed_stride, [&](const exl3::Weight& w, float* y) {
    return Linear(ctx, x, x_stride, rows, LinearWeight::Exl3(w), y, w.n());
  });
}

}  // namespace twinspan::cpu
