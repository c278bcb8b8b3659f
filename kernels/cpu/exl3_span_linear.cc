#include "kernels/cpu/exl3_span_linear.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "kernels/cpu/exl3_linear.h"

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

// Runs all views in one Exl3Linears (one input rotation, all their blocks in one parallel loop)
// into their own rows, then packs the spans' columns.
absl::Status RunAndPack(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                        std::span<const exl3::SpanView> views, float* packed,
                        int64_t packed_stride) {
  ABSL_RETURN_IF_ERROR(CheckArguments(rows, views, packed_stride));
  std::vector<std::vector<float>> outputs(views.size());
  std::vector<Exl3LinearOutput> outs;
  std::vector<const float*> pointers;
  for (size_t i = 0; i < views.size(); ++i) {
    const exl3::Weight& w = views[i].weight;
    outputs[i].resize(static_cast<size_t>(rows * w.n()));
    outs.push_back({&w, outputs[i].data(), w.n()});
    pointers.push_back(outputs[i].data());
  }
  ABSL_RETURN_IF_ERROR(
      Exl3Linears(ctx, x, x_stride, rows, outs.data(), static_cast<int>(outs.size())));
  return exl3::PackSpanLogits(views, pointers, rows, packed, packed_stride);
}

}  // namespace

absl::Status Exl3SpanLinear(const float* x, int64_t x_stride, int64_t rows,
                            std::span<const exl3::SpanView> views, float* packed,
                            int64_t packed_stride, int num_threads) {
  if (num_threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Exl3SpanLinear: num_threads ", num_threads, " (needs >= 1)"));
  }
  std::optional<ThreadPool> pool;
  if (num_threads > 1) pool.emplace(num_threads);
  return RunAndPack(Context{pool ? &*pool : nullptr}, x, x_stride, rows, views, packed,
                    packed_stride);
}

absl::Status Exl3SpanLinear(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                            std::span<const exl3::SpanView> views, float* packed,
                            int64_t packed_stride) {
  return RunAndPack(ctx, x, x_stride, rows, views, packed, packed_stride);
}

}  // namespace twinspan::cpu
