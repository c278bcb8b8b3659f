#include "kernels/cpu/exl3_span_linear.h"

#include <optional>
#include <utility>
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

// The view cut to the 128-column blocks its span touches. Each block reduces on its own with the
// head's plan, so the widening MakeSpanViews does for the GPU's plan is work the CPU can skip
// without changing a bit (the demo head's 4,096 + 128-column spans: 33 blocks instead of 128).
absl::StatusOr<exl3::SpanView> Trimmed(const exl3::SpanView& view) {
  constexpr int64_t kBlock = 128;
  const int64_t begin = view.drop_front(), end = begin + view.size();
  if (begin < 0 || end <= begin || end > view.weight.n()) return view;  // PackSpanLogits refuses.
  const int64_t from = begin / kBlock * kBlock, to = (end + kBlock - 1) / kBlock * kBlock;
  ABSL_ASSIGN_OR_RETURN(exl3::Weight w, view.weight.columns(from, to - from));
  return exl3::SpanView{std::move(w), view.span};
}

// Runs all views (cut to their spans) in one Exl3Linears (one input rotation, all their blocks in
// one parallel loop) into their own rows, then packs the spans' columns.
absl::Status RunAndPack(const Context& ctx, const float* x, int64_t x_stride, int64_t rows,
                        std::span<const exl3::SpanView> views, float* packed,
                        int64_t packed_stride) {
  ABSL_RETURN_IF_ERROR(CheckArguments(rows, views, packed_stride));
  std::vector<exl3::SpanView> trimmed;
  for (const exl3::SpanView& view : views) {
    ABSL_ASSIGN_OR_RETURN(exl3::SpanView t, Trimmed(view));
    trimmed.push_back(std::move(t));
  }
  std::vector<std::vector<float>> outputs(trimmed.size());
  std::vector<Exl3LinearOutput> outs;
  std::vector<const float*> pointers;
  for (size_t i = 0; i < trimmed.size(); ++i) {
    const exl3::Weight& w = trimmed[i].weight;
    outputs[i].resize(static_cast<size_t>(rows * w.n()));
    outs.push_back({&w, outputs[i].data(), w.n()});
    pointers.push_back(outputs[i].data());
  }
  ABSL_RETURN_IF_ERROR(
      Exl3Linears(ctx, x, x_stride, rows, outs.data(), static_cast<int>(outs.size())));
  return exl3::PackSpanLogits(trimmed, pointers, rows, packed, packed_stride);
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
