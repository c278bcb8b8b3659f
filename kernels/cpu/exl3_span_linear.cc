#include "kernels/cpu/exl3_span_linear.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "kernels/cpu/exl3_linear.h"

namespace twinspan::cpu {

absl::Status Exl3SpanLinear(const float* x, int64_t x_stride, int64_t rows,
                            std::span<const exl3::SpanView> views, float* packed,
                            int64_t packed_stride, int num_threads) {
  if (rows < 0 || packed_stride < exl3::PackedSize(views))
    return absl::InvalidArgumentError(absl::StrCat("Exl3SpanLinear: rows ", rows,
                                                   ", packed row stride ", packed_stride, " for ",
                                                   exl3::PackedSize(views), " logits"));
  std::vector<std::vector<float>> outputs(views.size());
  std::vector<const float*> pointers;
  for (size_t i = 0; i < views.size(); ++i) {
    const exl3::Weight& w = views[i].weight;
    outputs[i].resize(static_cast<size_t>(rows * w.n()));
    ABSL_RETURN_IF_ERROR(Exl3Linear(x, x_stride, rows, w, outputs[i].data(), w.n(), num_threads));
    pointers.push_back(outputs[i].data());
  }
  return exl3::PackSpanLogits(views, pointers, rows, packed, packed_stride);
}

}  // namespace twinspan::cpu
